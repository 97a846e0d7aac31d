import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildMember } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * GET /api/policy through the API: the caller's workspace's policies only (another
 * workspace's never), each with its latest version, description, labels, last change and
 * whether an A/B test runs; paging with limit/offset/total, `q` on id and description, a
 * viewer may list, and a bad limit is a 400 naming the field.
 */

let t: TestApp;
let alice: Actor;
let viewer: Actor;
let bob: Actor;

interface Summary {
  policy_id: string;
  description: string | null;
  latest_version: number;
  labels: Record<string, number>;
  updated_at: string;
  experiment_running: boolean;
}

const body = (description?: string, text = 'Be helpful.') => ({
  ...(description !== undefined ? { description } : {}),
  sections: [{ name: 'rules', kind: 'rules', text }],
});
const put = async (actor: Actor, id: string, content: unknown) => {
  const res = await t.call(actor, 'PUT', `/api/policy/${id}`, content);
  expect([200, 201], res.body).toContain(res.statusCode);
};
const list = async (actor: Actor, query = '') => {
  const res = await t.call(actor, 'GET', `/api/policy${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { items: Summary[]; total: number; limit: number; offset: number };
};

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('policy-list-alice');
  viewer = await buildMember(t, alice, { role: 'viewer' });
  bob = await t.newWorkspace('policy-list-bob');

  await put(alice, 'billing-triage', body('Routes billing questions'));
  await put(alice, 'billing-triage', {
    ...body('Routes billing and refund questions', 'v2'),
    labels: ['production'],
  });
  await put(alice, 'onboarding', body());
  await put(alice, 'escalation', body('Hands angry customers to a human'));
  await put(alice, 'escalation', body('Hands angry customers to a human', 'v2'));
  // Bob's policies: one with an id Alice also uses, one only he has.
  await put(bob, 'onboarding', body('Bob’s onboarding'));
  await put(bob, 'bob-secret', body('refund secrets'));
});
afterAll(() => t.close());

describe('GET /api/policy', () => {
  it('lists the workspace’s policies with latest version, description, labels and experiment state', async () => {
    const page = await list(viewer);
    expect(page.total).toBe(3);
    expect(page.limit).toBe(50);
    expect(page.offset).toBe(0);
    const byId = new Map(page.items.map((item) => [item.policy_id, item]));
    expect([...byId.keys()].sort()).toEqual(['billing-triage', 'escalation', 'onboarding']);
    expect(byId.get('billing-triage')).toMatchObject({
      description: 'Routes billing and refund questions',
      latest_version: 2,
      labels: { latest: 2, production: 2 },
      experiment_running: false,
    });
    expect(byId.get('escalation')).toMatchObject({ latest_version: 2, labels: { latest: 2 } });
    expect(byId.get('onboarding')).toMatchObject({
      description: null,
      latest_version: 1,
      labels: { latest: 1 },
    });
    for (const item of page.items) expect(Date.parse(item.updated_at)).not.toBeNaN();
    // Most recently changed first: escalation's second version was the last write.
    expect(page.items[0]?.policy_id).toBe('escalation');
  });

  it('never lists another workspace’s policies, even one with the same id', async () => {
    const bobs = await list(bob);
    expect(bobs.items.map((item) => item.policy_id).sort()).toEqual(['bob-secret', 'onboarding']);
    expect(bobs.items.find((item) => item.policy_id === 'onboarding')?.description).toBe('Bob’s onboarding');
    const alices = await list(alice, '?q=secret');
    expect(alices).toMatchObject({ items: [], total: 0 });
    const refund = await list(alice, '?q=refund');
    expect(refund.items.map((item) => item.policy_id)).toEqual(['billing-triage']);
  });

  it('pages with limit and offset, the total on every page, the pages covering the list once', async () => {
    const first = await list(alice, '?limit=2');
    const second = await list(alice, '?limit=2&offset=2');
    const past = await list(alice, '?limit=2&offset=10');
    expect([first.total, second.total, past.total]).toEqual([3, 3, 3]);
    expect(first.items).toHaveLength(2);
    expect(second.items).toHaveLength(1);
    expect(past.items).toEqual([]);
    const ids = [...first.items, ...second.items].map((item) => item.policy_id);
    expect(new Set(ids).size).toBe(3);
  });

  it('searches the id and the description case-insensitively, LIKE characters taken literally', async () => {
    expect((await list(alice, '?q=ESCAL')).items.map((item) => item.policy_id)).toEqual(['escalation']);
    expect((await list(alice, '?q=angry%20customers')).items.map((item) => item.policy_id)).toEqual([
      'escalation',
    ]);
    // The latest version's description counts, not an older one's.
    expect((await list(alice, '?q=refund')).total).toBe(1);
    expect((await list(alice, '?q=%25')).total).toBe(0);
    expect((await list(alice, '?q=_')).total).toBe(0);
  });

  it('shows a running A/B test on both arms, and not once it is stopped', async () => {
    await put(alice, 'onboarding', body(undefined, 'v2'));
    const arms = { policy_a: { policy_id: 'onboarding', version: 1 }, policy_b: { policy_id: 'escalation' } };
    const started = await t.call(alice, 'POST', '/api/policy/abtest/set', arms);
    expect(started.statusCode, started.body).toBe(200);
    const running = await list(viewer);
    const state = Object.fromEntries(running.items.map((item) => [item.policy_id, item.experiment_running]));
    expect(state).toEqual({ onboarding: true, escalation: true, 'billing-triage': false });
    const stopped = await t.call(alice, 'POST', '/api/policy/abtest/set', { ...arms, action: 'stop' });
    expect(stopped.statusCode, stopped.body).toBe(200);
    expect((await list(viewer)).items.every((item) => !item.experiment_running)).toBe(true);
  });

  it('answers 400 naming the field for a bad limit, offset or q', async () => {
    for (const [query, field] of [
      ['limit=0', 'query.limit'],
      ['limit=201', 'query.limit'],
      ['limit=abc', 'query.limit'],
      ['offset=-1', 'query.offset'],
      [`q=${'x'.repeat(256)}`, 'query.q'],
      ['nope=1', 'query.nope'],
    ] as const) {
      const res = await t.call(viewer, 'GET', `/api/policy?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(
        (res.json().errors as { field: string }[]).map((error) => error.field),
        query,
      ).toContain(field);
    }
  });
});
