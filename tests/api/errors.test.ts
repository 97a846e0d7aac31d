import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildApiKey } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let alice: Actor;

beforeAll(async () => {
  t = await createTestApp({ env: { BODY_LIMIT: '4096' } });
  alice = await t.newWorkspace('alice');
});
afterAll(() => t.close());

/** A raw body as alice: the bytes and content type under test, not a serialised object. */
const post = (payload: string, contentType = 'application/json', url = '/api/agents') =>
  t.call(alice, 'POST', url, payload, { headers: { 'content-type': contentType } });

function expectProblem(
  response: { statusCode: number; headers: Record<string, unknown>; json(): any },
  status: number,
) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toContain('application/problem+json');
  const body = response.json();
  expect(body).toMatchObject({ type: 'about:blank', status });
  expect(typeof body.title).toBe('string');
  expect(typeof body.code).toBe('string');
  expect(body.request_id).toBe(response.headers['x-request-id']);
  return body;
}

describe('bad input answers 4xx naming the field', () => {
  it('malformed JSON', async () => {
    const body = expectProblem(await post('{"name": "x",'), 400);
    expect(body.code).toBe('invalid_json');
    expect(body.errors).toEqual([{ field: 'body', message: 'is not valid JSON' }]);
  });

  it('an empty JSON body', async () => {
    expect(expectProblem(await post(''), 400).errors[0].field).toBe('body');
  });

  it('a content type other than JSON', async () => {
    const body = expectProblem(await post('name=x', 'application/x-www-form-urlencoded'), 415);
    expect(body.errors[0].field).toBe('headers.content-type');
    expectProblem(await post('hello', 'text/plain'), 415);
  });

  it('wrong types, missing fields and unknown fields, all reported at once', async () => {
    const body = expectProblem(
      await post(JSON.stringify({ name: 42, model: { provider: 'x' }, tags: 'a', surprise: 1 })),
      400,
    );
    expect(body.code).toBe('validation_failed');
    expect(body.errors).toEqual(
      expect.arrayContaining([
        { field: 'body.name', message: 'must be string' },
        { field: 'body.model.name', message: 'is required' },
        { field: 'body.tags', message: 'must be array' },
        { field: 'body.surprise', message: 'is not an allowed field' },
      ]),
    );
  });

  it('does not coerce strings into numbers in bodies', async () => {
    const body = expectProblem(
      await post(
        JSON.stringify({ name: 'x', execution_policy: { timeout_seconds: '60' } }),
        'application/json',
        '/api/workflows',
      ),
      400,
    );
    expect(body.errors).toEqual([
      { field: 'body.execution_policy.timeout_seconds', message: 'must be integer' },
    ]);
  });

  it('too-long strings', async () => {
    const body = expectProblem(
      await post(JSON.stringify({ name: 'n'.repeat(256), model: { provider: 'a', name: 'b' } })),
      400,
    );
    expect(body.errors).toEqual([{ field: 'body.name', message: 'must NOT have more than 255 characters' }]);
  });

  it('bad UUIDs in the path', async () => {
    const response = await t.call(alice, 'GET', '/api/workflows/42');
    expect(expectProblem(response, 400).errors).toEqual([
      { field: 'params.id', message: 'must be a valid UUID' },
    ]);
  });

  it('limit and offset out of range or not numbers', async () => {
    for (const query of ['limit=0', 'limit=201', 'limit=abc', 'offset=-1']) {
      const response = await t.call(alice, 'GET', `/api/agents?${query}`);
      const field = query.split('=')[0];
      expect(expectProblem(response, 400).errors[0].field).toBe(`query.${field}`);
    }
  });

  it('bodies over the size limit', async () => {
    const body = expectProblem(await post(JSON.stringify({ name: 'x', description: 'd'.repeat(5000) })), 413);
    expect(body.code).toBe('payload_too_large');
    expect(body.errors[0].field).toBe('body');
  });

  it('an unknown route', async () => {
    const response = await t.call(alice, 'GET', '/api/nothing-here');
    expect(expectProblem(response, 404).code).toBe('route_not_found');
  });
});

describe('request ids and logs', () => {
  it('gives every response an X-Request-Id and keeps a well-formed incoming one', async () => {
    const fresh = await t.call(undefined, 'GET', '/api/health');
    expect(fresh.headers['x-request-id']).toMatch(/^req-[0-9a-f-]{36}$/);
    const kept = await t.call(undefined, 'GET', '/api/health', undefined, {
      headers: { 'x-request-id': 'trace-123' },
    });
    expect(kept.headers['x-request-id']).toBe('trace-123');
    const hostile = await t.call(undefined, 'GET', '/api/health', undefined, {
      headers: { 'x-request-id': 'a b\nc' },
    });
    expect(hostile.headers['x-request-id']).toMatch(/^req-/);
  });

  it('writes one structured line per request with its id, and never a credential', async () => {
    const { key } = await buildApiKey(t, alice);
    const marker = `log-check-${Date.now()}`;
    const response = await t.call(undefined, 'GET', `/api/agents?q=${marker}`, undefined, {
      headers: {
        authorization: alice.headers.authorization as string,
        'x-api-key': key,
        'x-request-id': marker,
      },
    });
    expect(response.statusCode).toBe(200);
    await post('{bad');
    const lines = t.logs.filter((line) => line.request_id === marker);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      method: 'GET',
      status: 200,
      msg: 'request completed',
      workspace_id: alice.workspaceId,
    });
    const raw = t.rawLogs();
    expect(raw).not.toContain(alice.token);
    expect(raw).not.toContain(key);
    expect(raw).not.toContain(key.slice(13));
    expect(raw.toLowerCase()).not.toContain('bearer ');
  });
});
