import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertConversation, insertRun } from '../helpers/analytics-rows.ts';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let alice: Actor;
let mallory: Actor;
const agents: Record<string, { id: string; name: string }> = {};

// One fixed day in the past: every figure below is computed by hand from the rows inserted.
const FROM = '2026-01-01T00:00:00.000Z';
const TO = '2026-01-02T00:00:00.000Z';
const WINDOW = `from=${FROM}&to=${TO}`;
const at = (time: string) => `2026-01-01T${time}Z`;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
  mallory = await t.newWorkspace('mallory');
  for (const name of ['Xavier', 'Yolanda', 'Zed']) agents[name] = await buildAgent(t, alice, { name });
  const x = agents.Xavier as { id: string; name: string };
  const y = agents.Yolanda as { id: string; name: string };
  const ws = alice.workspaceId;
  const openai = { provider: 'openai', model: 'gpt-4o' };
  const anthropic = { provider: 'anthropic', model: 'claude' };
  await insertRun(t, ws, {
    status: 'Completed',
    created_at: at('01:10:00'),
    workflow_name: 'Alpha',
    cost: 0.1,
    tokens_in: 100,
    tokens_out: 50,
    duration_ms: 1000,
    steps: [
      {
        agent_id: x.id,
        agent_name: 'Xavier',
        ...openai,
        cost: 0.06,
        tokens_in: 60,
        tokens_out: 30,
        latency_ms: 400,
        started_at: at('01:10:00'),
        finished_at: at('01:16:00'),
      },
      {
        agent_id: y.id,
        agent_name: 'Yolanda',
        ...anthropic,
        cost: 0.04,
        tokens_in: 40,
        tokens_out: 20,
        latency_ms: 600,
        started_at: at('01:16:00'),
        finished_at: at('01:19:00'),
      },
    ],
  });
  await insertRun(t, ws, {
    status: 'Completed',
    created_at: at('01:40:00'),
    workflow_name: 'Alpha',
    cost: 0.2,
    tokens_in: 200,
    tokens_out: 100,
    duration_ms: 2000,
    steps: [
      {
        agent_id: x.id,
        agent_name: 'Xavier',
        ...openai,
        cost: 0.2,
        tokens_in: 200,
        tokens_out: 100,
        latency_ms: 500,
        started_at: at('01:40:00'),
        finished_at: at('01:52:00'),
      },
    ],
  });
  await insertRun(t, ws, {
    status: 'Failed',
    created_at: at('05:00:00'),
    workflow_name: 'Beta',
    cost: 0.05,
    tokens_in: 50,
    tokens_out: 10,
    duration_ms: 3000,
    steps: [
      {
        agent_id: y.id,
        agent_name: 'Yolanda',
        ...anthropic,
        cost: 0.05,
        tokens_in: 50,
        tokens_out: 10,
        latency_ms: 700,
        started_at: at('05:00:00'),
        finished_at: at('05:06:00'),
      },
    ],
  });
  await insertRun(t, ws, {
    status: 'Cancelled',
    created_at: at('06:00:00'),
    workflow_name: 'Beta',
    duration_ms: 4000,
  });
  // Still running at the window's end: its step counts as busy up to `to` only.
  await insertRun(t, ws, {
    status: 'Running',
    created_at: at('23:50:00'),
    workflow_name: 'Beta',
    steps: [{ agent_id: x.id, agent_name: 'Xavier', ...openai, started_at: at('23:50:00') }],
  });
  // Outside the window: `to` is exclusive, and the day before.
  await insertRun(t, ws, {
    status: 'Completed',
    created_at: TO,
    workflow_name: 'Alpha',
    cost: 9,
    duration_ms: 9,
  });
  await insertRun(t, ws, { status: 'Failed', created_at: '2025-12-31T23:59:59Z', cost: 9, duration_ms: 9 });
  // A conversation started before the window with one message in it, one started in it with two.
  await insertConversation(t, ws, '2025-12-31T23:00:00Z', ['2025-12-31T23:00:00Z', at('00:30:00')]);
  await insertConversation(t, ws, at('02:00:00'), [at('02:00:00'), at('02:05:00')]);

  // Another workspace's data, inside the same window: never counted for alice.
  const other = await buildAgent(t, mallory, { name: 'Xavier' });
  await insertRun(t, mallory.workspaceId, {
    status: 'Completed',
    created_at: at('01:00:00'),
    workflow_name: 'Alpha',
    cost: 5,
    tokens_in: 5000,
    duration_ms: 100,
    steps: [
      {
        agent_id: other.id,
        agent_name: 'Xavier',
        ...openai,
        cost: 5,
        started_at: at('01:00:00'),
        finished_at: at('02:00:00'),
      },
    ],
  });
  await insertConversation(t, mallory.workspaceId, at('03:00:00'), [at('03:00:00')]);
}, 60_000);
afterAll(() => t.close());

describe('GET /api/analytics/overview', () => {
  it('totals the window’s runs and chat by hand-computed figures, with an hourly series', async () => {
    const response = await t.call(alice, 'GET', `/api/analytics/overview?${WINDOW}`);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ from: FROM, to: TO, bucket: 'hour' });
    const { cost, ...totals } = body.totals;
    expect(totals).toEqual({
      runs: 5,
      completed: 2,
      failed: 1,
      cancelled: 1,
      success_rate: 2 / 3,
      input_tokens: 350,
      output_tokens: 160,
      // finished runs' durations 1000, 2000, 3000 (not the cancelled one): interpolated percentiles
      latency_p50_ms: 2000,
      latency_p95_ms: 2900,
      conversations: 1,
      messages: 3,
    });
    expect(cost).toBeCloseTo(0.35, 10);
    expect(body.series).toHaveLength(24);
    const hour = (h: string) => body.series.find((b: { start: string }) => b.start === at(`${h}:00:00.000`));
    expect(hour('01')).toMatchObject({
      runs: 2,
      completed: 2,
      success_rate: 1,
      input_tokens: 300,
      latency_p50_ms: 1500,
    });
    expect(hour('00')).toMatchObject({
      runs: 0,
      success_rate: null,
      latency_p50_ms: null,
      conversations: 0,
      messages: 1,
    });
    expect(hour('02')).toMatchObject({ conversations: 1, messages: 2 });
    expect(hour('05')).toMatchObject({ runs: 1, failed: 1, success_rate: 0 });
    expect(body.series.reduce((sum: number, b: { runs: number }) => sum + b.runs, 0)).toBe(5);
  });

  it('picks day buckets for windows over two days, and counts only the caller’s workspace', async () => {
    const response = await t.call(
      mallory,
      'GET',
      '/api/analytics/overview?from=2025-12-31T00:00:00Z&to=2026-01-03T00:00:00Z',
    );
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.bucket).toBe('day');
    expect(body.series.map((b: { start: string }) => b.start)).toEqual([
      '2025-12-31T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
      '2026-01-02T00:00:00.000Z',
    ]);
    expect(body.totals).toMatchObject({
      runs: 1,
      completed: 1,
      cost: 5,
      input_tokens: 5000,
      conversations: 1,
      messages: 1,
    });
  });

  it('defaults to the last 24 hours', async () => {
    const before = Date.now();
    const body = (await t.call(alice, 'GET', '/api/analytics/overview')).json();
    const to = Date.parse(body.to);
    expect(to).toBeGreaterThanOrEqual(before - 1000);
    expect(to - Date.parse(body.from)).toBe(86_400_000);
    expect(body.bucket).toBe('hour');
    expect(body.totals.runs).toBe(0);
  });
});

describe('GET /api/analytics/costs', () => {
  it('breaks cost down by provider, model, agent and workflow', async () => {
    const response = await t.call(alice, 'GET', `/api/analytics/costs?${WINDOW}&bucket=day`);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.total_cost).toBeCloseTo(0.35, 10);
    const round = <T extends { cost: number }>(rows: T[]) =>
      rows.map((r) => ({ ...r, cost: Math.round(r.cost * 1000) / 1000 }));
    expect(round(body.by_provider)).toEqual([
      { provider: 'openai', cost: 0.26, input_tokens: 260, output_tokens: 130, steps: 3 },
      { provider: 'anthropic', cost: 0.09, input_tokens: 90, output_tokens: 30, steps: 2 },
    ]);
    expect(round(body.by_model)).toEqual([
      { provider: 'openai', model: 'gpt-4o', cost: 0.26, input_tokens: 260, output_tokens: 130, steps: 3 },
      { provider: 'anthropic', model: 'claude', cost: 0.09, input_tokens: 90, output_tokens: 30, steps: 2 },
    ]);
    expect(round(body.by_agent)).toEqual([
      {
        agent_id: agents.Xavier?.id,
        agent_name: 'Xavier',
        cost: 0.26,
        input_tokens: 260,
        output_tokens: 130,
        steps: 3,
      },
      {
        agent_id: agents.Yolanda?.id,
        agent_name: 'Yolanda',
        cost: 0.09,
        input_tokens: 90,
        output_tokens: 30,
        steps: 2,
      },
    ]);
    expect(round(body.by_workflow)).toEqual([
      {
        workflow_id: null,
        workflow_name: 'Alpha',
        cost: 0.3,
        input_tokens: 300,
        output_tokens: 150,
        runs: 2,
      },
      { workflow_id: null, workflow_name: 'Beta', cost: 0.05, input_tokens: 50, output_tokens: 10, runs: 3 },
    ]);
    expect(body.series).toHaveLength(1);
    expect(body.series[0].cost).toBeCloseTo(0.35, 10);
  });
});

describe('GET /api/analytics/agents', () => {
  it('gives every agent its runs, success rate, tokens, cost, latency and utilisation', async () => {
    const response = await t.call(alice, 'GET', `/api/analytics/agents?${WINDOW}`);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.total).toBe(3);
    const byName = Object.fromEntries(body.items.map((a: { name: string }) => [a.name, a]));
    expect(byName.Xavier).toMatchObject({
      agent_id: agents.Xavier?.id,
      runs: 3,
      success_rate: 1,
      steps: 3,
      input_tokens: 260,
      output_tokens: 130,
      latency_p50_ms: 450,
      // 6 + 12 minutes, and the running step's 10 minutes up to `to`
      busy_ms: 28 * 60_000,
      // 28 minutes of a day, to four decimals
      utilisation: 0.0194,
    });
    for (const item of body.items) expect(item.utilisation).toBe(Number(item.utilisation.toFixed(4)));
    expect(byName.Yolanda).toMatchObject({ runs: 2, success_rate: 0.5, steps: 2, busy_ms: 9 * 60_000 });
    expect(byName.Zed).toMatchObject({
      runs: 0,
      success_rate: null,
      steps: 0,
      cost: 0,
      latency_p50_ms: null,
      busy_ms: 0,
      utilisation: 0,
    });
    const mine = (await t.call(mallory, 'GET', `/api/analytics/agents?${WINDOW}`)).json();
    expect(mine.items.map((a: { agent_id: string }) => a.agent_id)).not.toContain(agents.Xavier?.id);
    expect(mine.items).toHaveLength(1);
    expect(mine.items[0]).toMatchObject({ runs: 1, busy_ms: 3_600_000 });
  });
});

describe('bad query parameters', () => {
  const cases: [string, string][] = [
    [`from=${TO}&to=${FROM}`, 'query.from'],
    [`from=${FROM}&to=${FROM}`, 'query.from'],
    ['from=2024-01-01T00:00:00Z&to=2025-02-05T00:00:01Z', 'query.from'],
    ['from=yesterday', 'query.from'],
    ['to=soon', 'query.to'],
    ['bucket=week', 'query.bucket'],
    ['from=2025-11-01T00:00:00Z&to=2026-01-01T00:00:00Z&bucket=hour', 'query.bucket'],
  ];
  for (const path of ['overview', 'costs', 'agents']) {
    it.each(cases)(`/api/analytics/${path}?%s is a 400 naming %s`, async (query, field) => {
      const response = await t.call(alice, 'GET', `/api/analytics/${path}?${query}`);
      expect(response.statusCode).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().errors.map((e: { field: string }) => e.field)).toContain(field);
    });
  }

  it('accepts a window of exactly 400 days', async () => {
    const response = await t.call(
      alice,
      'GET',
      '/api/analytics/overview?from=2025-01-01T00:00:00Z&to=2026-02-05T00:00:00Z',
    );
    expect(response.statusCode).toBe(200);
  });

  it('needs authentication', async () => {
    expect((await t.call(undefined, 'GET', '/api/analytics/overview')).statusCode).toBe(401);
  });
});
