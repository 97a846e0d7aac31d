import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.ts';
import type { Actor } from '../helpers/api-client.ts';
import { buildMember } from '../helpers/factories.ts';
import { insertDocument, insertSource } from '../helpers/knowledge-rows.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Feature flags through the API: definitions validated by type and rule, ETag / If-Match,
 * roles, isolation between workspaces, evaluation reasons, the activity event, and the
 * built-in search.keyword_only switch taking effect on document search.
 */

let t: TestApp;
let alice: Actor;
let member: Actor;
let bob: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('flags-alice');
  member = await buildMember(t, alice, { role: 'member' });
  bob = await t.newWorkspace('flags-bob');
});
afterAll(() => t.close());

const put = (actor: Actor, key: string, body: unknown, ifMatch?: string) =>
  t.call(
    actor,
    'PUT',
    `/api/settings/flags/${key}`,
    body,
    ifMatch ? { headers: { 'if-match': ifMatch } } : {},
  );
const evaluate = (actor: Actor, key: string, context?: Record<string, unknown>) =>
  t.call(actor, 'POST', `/api/settings/flags/${key}/evaluate`, context ? { context } : {});

const problem = (response: Awaited<ReturnType<typeof put>>) => {
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  return response.json();
};

describe('GET /api/settings/flags', () => {
  it('lists the built-in flags at their defaults for any member', async () => {
    const response = await t.call(member, 'GET', '/api/settings/flags');
    expect(response.statusCode, response.body).toBe(200);
    const page = response.json();
    expect(page).toMatchObject({ limit: 50, offset: 0 });
    expect(page.items).toContainEqual(
      expect.objectContaining({
        key: 'search.keyword_only',
        type: 'boolean',
        default: false,
        built_in: true,
        version: null,
        etag: null,
      }),
    );
  });
});

describe('PUT /api/settings/flags/{key}', () => {
  it('creates a flag (version 1, ETag), shows it, and records system.settings_changed', async () => {
    const response = await put(alice, 'checkout.banner', {
      type: 'string',
      default: 'blue',
      description: 'banner colour',
      variants: { red: 'red' },
      rules: [{ when: 'plan == "pro"', variant: 'red' }],
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers.etag).toBe('"1"');
    expect(response.json()).toMatchObject({
      key: 'checkout.banner',
      type: 'string',
      default: 'blue',
      enabled: true,
      variants: { red: 'red' },
      rollout: null,
      salt: null,
      built_in: false,
      version: 1,
      etag: '"1"',
      updated_by: 'flags-alice',
    });
    const got = await t.call(member, 'GET', '/api/settings/flags/checkout.banner');
    expect(got.statusCode).toBe(200);
    expect(got.headers.etag).toBe('"1"');
    expect(got.json().rules).toEqual([{ when: 'plan == "pro"', variant: 'red' }]);
    const listed = (await t.call(member, 'GET', '/api/settings/flags')).json();
    expect(listed.items.map((f: { key: string }) => f.key)).toEqual([
      'checkout.banner',
      'search.keyword_only',
    ]);

    const events = await t.rows<{ kind: string; subject_id: string; actor: string; data: unknown }>(
      sql`select kind, subject_id, actor, data from activity_events where workspace_id = ${alice.workspaceId} and kind = 'system.settings_changed'`,
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        subject_id: 'flags.checkout.banner',
        actor: 'flags-alice',
        data: expect.objectContaining({ namespace: 'flags', key: 'checkout.banner', version: 1 }),
      }),
    );
  });

  it('validates values against the type and rules against the condition language, naming each field', async () => {
    const wrongDefault = await put(alice, 'typed.bool', { type: 'boolean', default: 'yes' });
    expect(wrongDefault.statusCode).toBe(400);
    const body = problem(wrongDefault);
    expect(body.code).toBe('validation_failed');
    expect(body.errors).toEqual([{ field: 'body.default', message: expect.stringContaining('boolean') }]);

    const badRule = await put(alice, 'typed.bool', {
      type: 'boolean',
      default: false,
      variants: { on: true, half: 'half' },
      rules: [
        { when: 'plan == "pro" and', variant: 'on' },
        { when: 'true', variant: 'nowhere' },
      ],
    });
    expect(badRule.statusCode).toBe(400);
    expect(problem(badRule).errors.map((e: { field: string }) => e.field)).toEqual([
      'body.variants.half',
      'body.rules.0.when',
      'body.rules.1.variant',
    ]);
    expect(badRule.json().errors[1].message).toMatch(/does not parse: .* at character \d+/);

    const cases: Array<[unknown, string]> = [
      [{ type: 'date', default: 1 }, 'body.type'],
      [{ type: 'number' }, 'body.default'],
      [{ type: 'number', default: 1, extra: true }, 'body'],
      [{ type: 'number', default: 1, rollout: [{ variant: 'default', weight: -1 }] }, 'body.rollout'],
      [{ type: 'number', default: 1, rollout: [{ variant: 'default', weight: 0 }] }, 'body.rollout'],
    ];
    for (const [payload, field] of cases) {
      const response = await put(alice, 'typed.num', payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
      expect(
        problem(response).errors.some((e: { field: string }) => e.field.startsWith(field)),
        response.body,
      ).toBe(true);
    }
    const badKey = await put(alice, 'Bad%20Key', { type: 'number', default: 1 });
    expect(badKey.statusCode).toBe(400);
    expect(problem(badKey).errors[0].field).toBe('params.key');

    const builtIn = await put(alice, 'search.keyword_only', { type: 'string', default: 'on' });
    expect(builtIn.statusCode).toBe(400);
    expect(problem(builtIn).errors[0].field).toBe('body.type');
  });

  it('honours If-Match: a current ETag writes and advances it, a stale one is 412 problem+json', async () => {
    const first = await put(alice, 'etag.flag', { type: 'number', default: 1 });
    expect(first.headers.etag).toBe('"1"');
    const second = await put(alice, 'etag.flag', { type: 'number', default: 2 }, '"1"');
    expect(second.statusCode, second.body).toBe(200);
    expect(second.headers.etag).toBe('"2"');

    const stale = await put(alice, 'etag.flag', { type: 'number', default: 3 }, '"1"');
    expect(stale.statusCode).toBe(412);
    expect(problem(stale)).toMatchObject({ status: 412, code: 'precondition_failed' });
    expect((await t.call(alice, 'GET', '/api/settings/flags/etag.flag')).json().default).toBe(2);

    expect((await put(alice, 'etag.flag', { type: 'number', default: 4 }, '"9", "2"')).statusCode).toBe(200);
    expect((await put(alice, 'etag.flag', { type: 'number', default: 5 }, 'W/"3"')).statusCode).toBe(412);
    const star = await put(alice, 'etag.flag', { type: 'number', default: 6 }, '*');
    expect(star.statusCode).toBe(200);
    expect(star.json().version).toBe(4);
    // Without If-Match the last write wins; If-Match on a flag never stored cannot match.
    expect((await put(alice, 'etag.flag', { type: 'number', default: 7 })).json().version).toBe(5);
    expect((await put(alice, 'etag.none', { type: 'number', default: 1 }, '*')).statusCode).toBe(412);
    expect((await t.call(alice, 'GET', '/api/settings/flags/etag.none')).statusCode).toBe(404);
  });

  it('lets exactly one of two writes racing on the same If-Match through', async () => {
    await put(alice, 'etag.race', { type: 'number', default: 0 });
    const answers = await Promise.all(
      [1, 2].map((value) => put(alice, 'etag.race', { type: 'number', default: value }, '"1"')),
    );
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 412]);
    const winner = answers.find((a) => a.statusCode === 200)?.json();
    const stored = (await t.call(alice, 'GET', '/api/settings/flags/etag.race')).json();
    expect(stored).toMatchObject({ version: 2, default: winner.default });
  });

  it('is for admins: a member reads and evaluates but cannot write', async () => {
    const response = await put(member, 'member.flag', { type: 'boolean', default: true });
    expect(response.statusCode).toBe(403);
    expect(problem(response).code).toBe('insufficient_role');
    expect((await t.call(member, 'GET', '/api/settings/flags/member.flag')).statusCode).toBe(404);
    expect((await evaluate(member, 'search.keyword_only')).statusCode).toBe(200);
    const viewer = await buildMember(t, alice, { role: 'viewer' });
    expect((await t.call(viewer, 'GET', '/api/settings/flags')).statusCode).toBe(200);
    expect((await evaluate(viewer, 'search.keyword_only')).statusCode).toBe(200);
    expect((await put(viewer, 'member.flag', { type: 'boolean', default: true })).statusCode).toBe(403);
  });

  it('keeps workspaces apart: another workspace’s flag is invisible, and the same key is its own', async () => {
    await put(alice, 'iso.flag', { type: 'boolean', default: true });
    const unseen = await t.call(bob, 'GET', '/api/settings/flags/iso.flag');
    expect(unseen.statusCode).toBe(404);
    expect(problem(unseen).code).toBe('flag_not_found');
    expect((await evaluate(bob, 'iso.flag')).statusCode).toBe(404);
    const bobs = (await t.call(bob, 'GET', '/api/settings/flags')).json();
    expect(bobs.items.map((f: { key: string }) => f.key)).toEqual(['search.keyword_only']);

    const own = await put(bob, 'iso.flag', { type: 'boolean', default: false }, undefined);
    expect(own.json().version).toBe(1);
    expect((await evaluate(alice, 'iso.flag')).json().value).toBe(true);
    expect((await evaluate(bob, 'iso.flag')).json().value).toBe(false);
  });
});

describe('POST /api/settings/flags/{key}/evaluate', () => {
  it('answers value, variant and reason as OpenFeature does', async () => {
    await put(alice, 'eval.colour', {
      type: 'string',
      default: 'blue',
      variants: { red: 'red', green: 'green' },
      rules: [
        { when: 'plan == "enterprise"', variant: 'red' },
        { when: 'country in ["fr", "de"]', split: [{ variant: 'green', weight: 1 }] },
      ],
    });
    expect((await evaluate(member, 'eval.colour', { plan: 'enterprise' })).json()).toEqual({
      key: 'eval.colour',
      value: 'red',
      variant: 'red',
      reason: 'TARGETING_MATCH',
    });
    expect(
      (await evaluate(member, 'eval.colour', { country: 'fr', targeting_key: 'u1' })).json(),
    ).toMatchObject({
      value: 'green',
      reason: 'SPLIT',
    });
    expect((await evaluate(member, 'eval.colour', { plan: 'free' })).json()).toMatchObject({
      value: 'blue',
      variant: 'default',
      reason: 'DEFAULT',
    });
    expect((await evaluate(member, 'search.keyword_only')).json()).toMatchObject({
      value: false,
      reason: 'STATIC',
    });

    await put(alice, 'eval.colour', {
      type: 'string',
      default: 'blue',
      enabled: false,
      variants: { red: 'red' },
    });
    expect((await evaluate(member, 'eval.colour', { plan: 'enterprise' })).json().reason).toBe('DISABLED');
  });

  it('splits sticky by targeting_key (the caller’s user id by default) close to the weights', async () => {
    await put(alice, 'eval.rollout', {
      type: 'json',
      default: { layout: 'old' },
      variants: { new: { layout: 'new' } },
      rollout: [
        { variant: 'new', weight: 30 },
        { variant: 'default', weight: 70 },
      ],
    });
    let fresh = 0;
    for (let i = 0; i < 200; i += 1) {
      const answer = (await evaluate(member, 'eval.rollout', { targeting_key: `user-${i}` })).json();
      expect(answer.reason).toBe('SPLIT');
      if (answer.variant === 'new') {
        expect(answer.value).toEqual({ layout: 'new' });
        fresh += 1;
      }
    }
    expect(fresh).toBeGreaterThan(30);
    expect(fresh).toBeLessThan(90);
    const mine = (await evaluate(member, 'eval.rollout')).json();
    expect((await evaluate(member, 'eval.rollout', { targeting_key: member.userId })).json()).toEqual(mine);
    expect((await evaluate(member, 'eval.rollout')).json()).toEqual(mine);
  });

  it('evaluates every flag of the workspace at once, and only that workspace’s', async () => {
    const response = await t.call(member, 'POST', '/api/settings/flags/evaluate', {
      context: { plan: 'enterprise', targeting_key: 'u7' },
    });
    expect(response.statusCode, response.body).toBe(200);
    const { items } = response.json();
    const keys = items.map((item: { key: string }) => item.key);
    expect(keys).toEqual([...keys].sort());
    expect(keys).toContain('search.keyword_only');
    expect(items.find((item: { key: string }) => item.key === 'eval.rollout')).toEqual(
      (await evaluate(member, 'eval.rollout', { targeting_key: 'u7' })).json(),
    );
    const bobs = (await t.call(bob, 'POST', '/api/settings/flags/evaluate', {})).json();
    expect(bobs.items.map((item: { key: string }) => item.key)).not.toContain('eval.rollout');
  });

  it('validates the context and names unknown flags', async () => {
    const bad = await t.call(member, 'POST', '/api/settings/flags/eval.rollout/evaluate', { context: 'x' });
    expect(bad.statusCode).toBe(400);
    expect(problem(bad).errors[0].field).toMatch(/^body\.context/);
    const missing = await evaluate(member, 'no.such.flag');
    expect(missing.statusCode).toBe(404);
    expect(problem(missing).code).toBe('flag_not_found');
  });
});

describe('search.keyword_only', () => {
  it('forces keyword mode in POST /api/documents/search while on, for that workspace only', async () => {
    const owner = await t.newWorkspace();
    const db = t.database.db;
    const source = await insertSource(db, owner.workspaceId);
    const { id } = await insertDocument(db, owner.workspaceId, source.id, { title: 'Tomatoes' });
    const prepared = await t.services.retrieval.prepare(
      owner.workspaceId,
      { provider: 'none', model: 'none' },
      [{ position: 0, text: 'Water tomatoes deeply twice a week.', headingPath: [], tokenCount: 6 }],
    );
    await inTransaction(db, (tx) =>
      t.services.retrieval.indexDocument(
        tx,
        { workspaceId: owner.workspaceId, sourceId: source.id, documentId: id, generation: 1 },
        prepared,
      ),
    );
    const search = (actor: Actor) =>
      t.call(actor, 'POST', '/api/documents/search', { query: 'tomatoes', mode: 'vector' });

    // Off (the default): vector search over sources without embeddings is refused.
    const off = await search(owner);
    expect(off.statusCode).toBe(400);
    expect(off.json().errors[0].field).toBe('body.mode');

    const on = await put(owner, 'search.keyword_only', { type: 'boolean', default: true });
    expect(on.statusCode, on.body).toBe(200);
    const forced = await search(owner);
    expect(forced.statusCode, forced.body).toBe(200);
    expect(forced.json().mode).toBe('keyword');
    expect(forced.json().results[0].document.id).toBe(id);
    // Another workspace keeps its own default.
    expect(
      (await t.call(bob, 'POST', '/api/documents/search', { query: 'x', mode: 'vector' })).json().mode,
    ).toBe('vector');

    // Targeted: on for one user of the workspace only (rules see the caller's user_id).
    const colleague = await buildMember(t, owner, { role: 'member' });
    await put(owner, 'search.keyword_only', {
      type: 'boolean',
      default: false,
      variants: { on: true },
      rules: [{ when: `user_id == "${colleague.userId}"`, variant: 'on' }],
    });
    expect((await search(owner)).statusCode).toBe(400);
    expect((await search(colleague)).json().mode).toBe('keyword');
  });
});
