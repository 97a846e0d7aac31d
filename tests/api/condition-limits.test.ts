import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FACTS_BYTES } from '../../src/lib/conditions.ts';
import type { Actor } from '../helpers/api-client.ts';
import { contextAtLimit, hostileRule, prose } from '../helpers/hostile-conditions.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * No condition can freeze the service (issue 23, 1.3): flag rules and policy sections test
 * facts a client sends. The facts are bounded (413 naming the field past `MAX_FACTS_BYTES`),
 * and the worst rules at that bound (as many `contains` tests as a rule can hold, over a
 * mixed-case context, none matching so each scans the whole value) answer in bounded time,
 * since each value is lower-cased once per request rather than once per test.
 */

let t: TestApp;
let alice: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('conditions-alice');
});
afterAll(() => t.close());

/** Time the issue allows a request at the limit; far above what it takes, far below a stall. */
const BOUND_MS = 1_000;

/** Every shape a context can be too large in: one long value, many keys, depth, a long list. */
const oversized: [string, Record<string, unknown>][] = [
  ['one 400 KB string', { doc: prose(400_000) }],
  [
    'a hundred 4 KB attributes',
    Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`a${i}`, prose(4_000)])),
  ],
  ['a nested object', { user: { profile: { bio: prose(MAX_FACTS_BYTES) } } }],
  ['a list of strings', { tags: Array.from({ length: 2_000 }, (_, i) => `tag-${i}-padding`) }],
  ['multi-byte text just past the limit in bytes', { doc: 'é'.repeat(MAX_FACTS_BYTES / 2) }],
];

const expectTooLarge = (response: Awaited<ReturnType<TestApp['call']>>, field: string) => {
  expect(response.statusCode, response.body).toBe(413);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = response.json();
  expect(body.code).toBe('payload_too_large');
  expect(body.errors).toContainEqual(
    expect.objectContaining({ field, message: expect.stringContaining(String(MAX_FACTS_BYTES)) }),
  );
};

describe('flag evaluation contexts', () => {
  const rules = (path: string) =>
    Array.from({ length: 50 }, (_, i) => ({ when: hostileRule(path, i), variant: 'on' }));

  beforeAll(async () => {
    for (const key of ['hostile.a', 'hostile.b', 'hostile.c']) {
      const response = await t.call(alice, 'PUT', `/api/settings/flags/${key}`, {
        type: 'boolean',
        default: false,
        variants: { on: true },
        rules: rules('doc'),
      });
      expect(response.statusCode, response.body).toBe(200);
    }
  });

  for (const [shape, context] of oversized) {
    it(`refuses a context too large (${shape}) with 413 naming body.context, for one flag and for all`, async () => {
      expectTooLarge(
        await t.call(alice, 'POST', '/api/settings/flags/hostile.a/evaluate', { context }),
        'body.context',
      );
      expectTooLarge(
        await t.call(alice, 'POST', '/api/settings/flags/evaluate', { context }),
        'body.context',
      );
    });
  }

  it('evaluates 50 rules of contains tests over the largest context in bounded time', async () => {
    const context = contextAtLimit();
    const started = performance.now();
    const one = await t.call(alice, 'POST', '/api/settings/flags/hostile.a/evaluate', { context });
    const oneMs = performance.now() - started;
    expect(one.statusCode, one.body).toBe(200);
    expect(one.json()).toMatchObject({ value: false, reason: 'DEFAULT' });
    expect(oneMs).toBeLessThan(BOUND_MS);

    const again = performance.now();
    const all = await t.call(alice, 'POST', '/api/settings/flags/evaluate', { context });
    const allMs = performance.now() - again;
    expect(all.statusCode, all.body).toBe(200);
    expect(allMs).toBeLessThan(BOUND_MS);
  });

  it('still matches case-insensitively at the limit (one normalisation per value, same answers)', async () => {
    const context = { doc: `${prose(MAX_FACTS_BYTES - 100)} QZ3X7` };
    const response = await t.call(alice, 'POST', '/api/settings/flags/hostile.a/evaluate', { context });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ value: true, reason: 'TARGETING_MATCH' });
  });
});

describe('policy assembly facts', () => {
  beforeAll(async () => {
    const response = await t.call(alice, 'PUT', '/api/policy/hostile', {
      sections: Array.from({ length: 100 }, (_, i) => ({
        name: `s${i}`,
        kind: 'rules',
        text: `Rule ${i}.`,
        when: hostileRule(i % 2 === 0 ? 'context.doc' : 'variables.doc', i),
      })),
    });
    expect(response.statusCode, response.body).toBe(201);
  });

  for (const [shape, facts] of oversized) {
    it(`refuses context or variables too large (${shape}) with 413 naming the field`, async () => {
      expectTooLarge(
        await t.call(alice, 'POST', '/api/policy/hostile/assemble', { context: facts }),
        'body.context',
      );
      expectTooLarge(
        await t.call(alice, 'POST', '/api/policy/hostile/assemble', { variables: facts }),
        'body.variables',
      );
    });
  }

  it('assembles 100 sections of contains tests over the largest context and variables in bounded time', async () => {
    const started = performance.now();
    const response = await t.call(alice, 'POST', '/api/policy/hostile/assemble', {
      context: contextAtLimit(),
      variables: contextAtLimit(),
      dry_run: true,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(performance.now() - started).toBeLessThan(BOUND_MS);
  });
});
