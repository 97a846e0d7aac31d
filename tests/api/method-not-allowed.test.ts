import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let alice: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
});
afterAll(() => t.close());

describe('a path that exists with other methods', () => {
  it('answers 405 method_not_allowed with an Allow header naming them', async () => {
    const response = await t.call(alice, 'PATCH', '/api/agents');
    expect(response.statusCode).toBe(405);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.headers.allow).toBe('GET, HEAD, POST');
    expect(response.json()).toMatchObject({
      status: 405,
      code: 'method_not_allowed',
      title: 'Method Not Allowed',
      request_id: response.headers['x-request-id'],
    });
  });

  it('matches path parameters and a trailing slash as the router does', async () => {
    const item = await t.call(alice, 'POST', '/api/agents/00000000-0000-4000-8000-000000000000/');
    expect(item.statusCode).toBe(405);
    expect(item.headers.allow).toBe('DELETE, GET, HEAD, PUT');
    const action = await t.call(alice, 'GET', '/api/runs/00000000-0000-4000-8000-000000000000/cancel');
    expect(action.statusCode).toBe(405);
    expect(action.headers.allow).toBe('POST');
  });

  it('keeps 404 route_not_found for a path no route has', async () => {
    for (const url of ['/api/agentz', '/api/agents/x/y', '/api/runs/x/explode']) {
      const response = await t.call(alice, 'GET', url);
      expect(response.statusCode, url).toBe(404);
      expect(response.json().code, url).toBe('route_not_found');
      expect(response.headers.allow, url).toBeUndefined();
    }
  });
});
