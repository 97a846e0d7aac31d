import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * The agents list is JSON that PostgreSQL writes (`selectJsonPage`), the single-agent GET
 * is the same row serialised by Fastify's response schema: the two must agree on every
 * field of every item, whatever the row holds.
 */
let t: TestApp;
let owner: Actor;
const ids: string[] = [];

const get = (url: string) => t.call(owner, 'GET', url);

beforeAll(async () => {
  t = await createTestApp();
  owner = await t.newWorkspace('list-json-owner');
  ids.push((await buildAgent(t, owner, { name: 'Minimal' })).id);
  ids.push(
    (
      await buildAgent(t, owner, {
        name: 'Quotes " backslash \\ new line\n tab\t control \u0001 é 漢字 😀 </script>',
        description: 'a description\r\nover two lines',
        role: 'reviewer',
        model: { provider: 'anthropic', name: 'claude "quoted"' },
        system_prompt: '',
        tools: [
          { name: 'http_request', config: { allowed_hosts: ['a.example', '*.b.example'], timeout_ms: 2000 } },
        ],
        status: 'Active',
        config: {
          temperature: 0.1,
          tiny: -2.5e-7,
          huge: 1e21,
          max: 9007199254740991,
          list: [1, 'two', null, false],
          empty: {},
        },
        tags: ['alpha', 'with space', 'ünï'],
      })
    ).id,
  );
  const updated = await buildAgent(t, owner, { name: 'Updated later', tags: [] });
  const put = await t.call(owner, 'PUT', `/api/agents/${updated.id}`, {
    description: null,
    status: 'Error',
    config: { retries: 3 },
  });
  expect(put.statusCode).toBe(200);
  ids.push(updated.id);
  // Timestamps with microseconds, which the API prints truncated to milliseconds.
  await t.rows(sql`update agents set created_at = '2031-05-06 07:08:09.999999+00',
    updated_at = '2031-05-06 07:08:10.000500+00' where id = ${ids[0]}`);
});
afterAll(() => t.close());

describe('GET /api/agents as JSON written by the database', () => {
  it('lists every agent exactly as GET /api/agents/:id serialises it, field by field', async () => {
    const list = await get('/api/agents?limit=50');
    expect(list.statusCode).toBe(200);
    const page = list.json();
    expect(page).toMatchObject({ total: 3, limit: 50, offset: 0 });
    expect(page.items.map((item: { id: string }) => item.id).sort()).toEqual([...ids].sort());
    for (const item of page.items) {
      const single = await get(`/api/agents/${item.id}`);
      expect(single.statusCode).toBe(200);
      const expected = single.json();
      expect(Object.keys(item)).toEqual(Object.keys(expected));
      for (const field of Object.keys(expected))
        expect([field, item[field]]).toStrictEqual([field, expected[field]]);
    }
    const tampered = page.items.find((item: { id: string }) => item.id === ids[0]);
    expect(tampered).toMatchObject({
      created_at: '2031-05-06T07:08:09.999Z',
      updated_at: '2031-05-06T07:08:10.000Z',
    });
  });

  it('answers with the same content type as the other routes', async () => {
    const list = await get('/api/agents');
    const single = await get(`/api/agents/${ids[0]}`);
    expect(list.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(list.headers['content-type']).toBe(single.headers['content-type']);
  });

  it('orders newest first and pages with limit and offset as numbers', async () => {
    const first = (await get('/api/agents?limit=1')).json();
    expect(first).toMatchObject({ total: 3, limit: 1, offset: 0 });
    expect(first.items[0].id).toBe(ids[0]);
    const rest = (await get('/api/agents?limit=2&offset=1')).json();
    expect(rest.items.map((item: { id: string }) => item.id)).toEqual([ids[2], ids[1]]);
    expect(await get('/api/agents?limit=2&offset=9').then((response) => response.json())).toStrictEqual({
      items: [],
      total: 3,
      limit: 2,
      offset: 9,
    });
  });

  it('answers an empty workspace with an empty page', async () => {
    const stranger = await t.newWorkspace('list-json-stranger');
    const response = await t.call(stranger, 'GET', '/api/agents');
    expect(response.json()).toStrictEqual({ items: [], total: 0, limit: 50, offset: 0 });
  });
});
