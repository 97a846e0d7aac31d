import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnalyticsService } from '../../src/modules/analytics/analytics.service.ts';
import { insertRun, type RunRow, type StepRow } from '../helpers/analytics-rows.ts';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Daily rollups against the raw runs and steps: a generated data set over ten past days, read
 * once from the raw tables (before the rollup job; hour buckets of the overview never use
 * rollups; a service without rollups) and once through the rollups (after the job): counts and
 * sums equal, percentiles within the histogram's bound (sqrt(1.05) - 1, plus the 0.1 ms
 * rounding of the response).
 */
let t: TestApp;
let alice: Actor;
let mallory: Actor;

const FROM = '2026-03-01T06:00:00.000Z';
const TO = '2026-03-09T18:00:00.000Z';
/** Whole UTC days inside [FROM, TO): 2nd to 8th. */
const WHOLE_DAYS = 7;
const BOUND = Math.sqrt(1.05) - 1;

interface Figures {
  runs: number;
  completed: number;
  failed: number;
  cancelled: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  success_rate: number | null;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
}
interface Overview {
  totals: Figures;
  series: Array<Figures & { start: string }>;
  rollup_days: number;
}

/** A small seeded generator (mulberry32), so the data set is the same every run. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/** The day whose running runs have an agent step still running (the agents endpoint reads it raw). */
const OPEN_DAY = '2026-03-04';

/**
 * Runs over ten days, each with up to three steps: of the given agents, or merges (no agent);
 * of two providers or none. Only running runs of `OPEN_DAY` leave their last step running.
 */
function generate(seed: number, count: number, agents: Array<{ id: string; name: string }>): RunRow[] {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const statuses = ['Completed', 'Completed', 'Completed', 'Failed', 'Cancelled', 'Running'] as const;
  const models = [
    { provider: 'openai', model: 'gpt-4o' },
    { provider: 'openai', model: 'gpt-4o-mini' },
    { provider: 'anthropic', model: 'claude' },
    { provider: null, model: null },
  ];
  return Array.from({ length: count }, () => {
    const status = pick(statuses) as RunRow['status'];
    const finished = status === 'Completed' || status === 'Failed';
    const created = Date.parse('2026-03-01T00:00:00Z') + Math.floor(next() * 10 * 86_400_000);
    const createdAt = new Date(created).toISOString();
    const stepCount = Math.floor(next() * 4);
    const steps: StepRow[] = Array.from({ length: stepCount }, (_, i) => {
      const agent = pick([...agents, null]);
      const started = created + i * 90_000 + Math.floor(next() * 30_000);
      const open = status === 'Running' && createdAt.startsWith(OPEN_DAY) && i === stepCount - 1;
      const latency = next() < 0.1 ? null : Math.floor(20 + next() ** 2 * 60_000);
      return {
        agent_id: agent?.id ?? null,
        agent_name: agent?.name ?? null,
        ...pick(models),
        cost: Math.round(next() * 500) / 10_000,
        tokens_in: Math.floor(next() * 2000),
        tokens_out: Math.floor(next() * 800),
        latency_ms: latency,
        started_at: new Date(started).toISOString(),
        finished_at: open ? null : new Date(started + (latency ?? 1000) + 5).toISOString(),
      };
    });
    return {
      status,
      created_at: createdAt,
      workflow_name: pick(['Alpha', 'Beta', 'Gamma']),
      cost: Math.round(next() * 1000) / 10_000,
      tokens_in: Math.floor(next() * 5000),
      tokens_out: Math.floor(next() * 2000),
      duration_ms: finished ? Math.floor(50 + next() ** 3 * 120_000) : null,
      steps,
    };
  });
}

async function overview(actor: Actor, bucket: 'hour' | 'day'): Promise<Overview> {
  const res = await t.call(actor, 'GET', `/api/analytics/overview?from=${FROM}&to=${TO}&bucket=${bucket}`);
  expect(res.statusCode).toBe(200);
  return res.json() as Overview;
}

/** Equal counts and sums; percentiles within the bound. */
function expectSame(rolled: Figures, raw: Figures) {
  for (const key of ['runs', 'completed', 'failed', 'cancelled', 'input_tokens', 'output_tokens'] as const) {
    expect(rolled[key], key).toBe(raw[key]);
  }
  expect(rolled.cost).toBeCloseTo(raw.cost, 9);
  expect(rolled.success_rate).toBe(raw.success_rate);
  for (const key of ['latency_p50_ms', 'latency_p95_ms'] as const) {
    if (raw[key] === null) expect(rolled[key]).toBeNull();
    else
      expect(Math.abs((rolled[key] as number) - (raw[key] as number)), key).toBeLessThanOrEqual(
        (raw[key] as number) * BOUND + 0.1,
      );
  }
}

/** The raw figures of the window (hour buckets read only raw runs; totals are exact). */
const rawTotals = async (actor: Actor) => {
  const raw = await overview(actor, 'hour');
  expect(raw.rollup_days).toBe(0);
  return raw.totals;
};

interface CostGroup {
  cost: number;
  input_tokens: number;
  output_tokens: number;
  steps?: number;
  runs?: number;
  [key: string]: unknown;
}
interface Costs {
  total_cost: number;
  by_provider: CostGroup[];
  by_model: CostGroup[];
  by_agent: CostGroup[];
  by_workflow: CostGroup[];
  series: Array<{ start: string; cost: number }>;
  rollup_days: number;
}
interface AgentItem {
  agent_id: string;
  runs: number;
  success_rate: number | null;
  steps: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
  busy_ms: number;
}
interface Agents {
  items: AgentItem[];
  rollup_days: number;
}

async function get<T>(actor: Actor, path: 'costs' | 'agents', bucket = 'day'): Promise<T> {
  const res = await t.call(actor, 'GET', `/api/analytics/${path}?from=${FROM}&to=${TO}&bucket=${bucket}`);
  expect(res.statusCode).toBe(200);
  return res.json() as T;
}

/** The same groups (by everything but the sums) with equal counts and sums. */
function expectSameGroups(rolled: CostGroup[], raw: CostGroup[]) {
  const identity = ({
    cost: _c,
    input_tokens: _i,
    output_tokens: _o,
    steps: _s,
    runs: _r,
    ...rest
  }: CostGroup) => JSON.stringify(rest);
  expect(rolled.map(identity).sort()).toEqual(raw.map(identity).sort());
  const byId = new Map(raw.map((g) => [identity(g), g]));
  for (const group of rolled) {
    const other = byId.get(identity(group)) as CostGroup;
    expect(group.input_tokens).toBe(other.input_tokens);
    expect(group.output_tokens).toBe(other.output_tokens);
    expect(group.steps ?? group.runs).toBe(other.steps ?? other.runs);
    expect(group.cost).toBeCloseTo(other.cost, 9);
  }
}

function expectSameCosts(rolled: Costs, raw: Costs) {
  expect(rolled.total_cost).toBeCloseTo(raw.total_cost, 9);
  for (const key of ['by_provider', 'by_model', 'by_agent', 'by_workflow'] as const) {
    expectSameGroups(rolled[key], raw[key]);
  }
  expect(rolled.series.map((s) => s.start)).toEqual(raw.series.map((s) => s.start));
  rolled.series.forEach((bucket, i) => {
    expect(bucket.cost).toBeCloseTo(raw.series[i]?.cost as number, 9);
  });
}

function expectSameAgents(rolled: Agents, raw: Agents) {
  expect(rolled.items.map((a) => a.agent_id).sort()).toEqual(raw.items.map((a) => a.agent_id).sort());
  const byId = new Map(raw.items.map((a) => [a.agent_id, a]));
  for (const agent of rolled.items) {
    const other = byId.get(agent.agent_id) as AgentItem;
    for (const key of [
      'runs',
      'success_rate',
      'steps',
      'input_tokens',
      'output_tokens',
      'busy_ms',
    ] as const) {
      expect(agent[key], key).toBe(other[key]);
    }
    expect(agent.cost).toBeCloseTo(other.cost, 9);
    for (const key of ['latency_p50_ms', 'latency_p95_ms'] as const) {
      if (other[key] === null) expect(agent[key]).toBeNull();
      else
        expect(Math.abs((agent[key] as number) - (other[key] as number)), key).toBeLessThanOrEqual(
          (other[key] as number) * BOUND + 0.1,
        );
    }
  }
}

/** The same window read by a service that never reads rollups. */
async function rawOnly(actor: Actor, bucket: 'hour' | 'day' = 'day') {
  const service = createAnalyticsService({ db: t.database.db, rollups: false });
  const query = { from: FROM, to: TO, bucket };
  const json = (value: unknown) => JSON.parse(JSON.stringify(value));
  return {
    costs: json(await service.costs(actor, query)) as Costs,
    agents: json(await service.agents(actor, query)) as Agents,
  };
}

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
  mallory = await t.newWorkspace('mallory');
  for (const [actor, seed, count] of [
    [alice, 1, 300],
    [mallory, 2, 80],
  ] as const) {
    const agents = [];
    for (const name of ['Ada', 'Brook', 'Cyd']) agents.push(await buildAgent(t, actor, { name }));
    for (const run of generate(seed, count, agents)) await insertRun(t, actor.workspaceId, run);
  }
}, 180_000);

afterAll(async () => {
  await t?.close();
});

describe('analytics daily rollups', () => {
  let before: Overview;
  let costsBefore: Costs;
  let agentsBefore: Agents;

  it('reads raw runs until the days are rolled up', async () => {
    before = await overview(alice, 'day');
    expect(before.rollup_days).toBe(0);
    expect(before.totals.runs).toBeGreaterThan(200);
    costsBefore = await get<Costs>(alice, 'costs');
    agentsBefore = await get<Agents>(alice, 'agents');
    expect(costsBefore.rollup_days).toBe(0);
    expect(agentsBefore.rollup_days).toBe(0);
    expect(costsBefore.by_model.length).toBeGreaterThanOrEqual(4);
    expect(agentsBefore.items.filter((a) => a.steps > 0)).toHaveLength(3);
  });

  it('gives the raw figures from the rollups once the job ran', async () => {
    const computed = await t.services.analytics.rollup();
    expect(computed).toBeGreaterThanOrEqual(20);
    const rolled = await overview(alice, 'day');
    expect(rolled.rollup_days).toBe(WHOLE_DAYS);
    expectSame(rolled.totals, before.totals);
    expect(rolled.series.map((s) => s.start)).toEqual(before.series.map((s) => s.start));
    rolled.series.forEach((bucket, i) => {
      expectSame(bucket, before.series[i] as Figures);
      // A day bucket's percentiles are exact: stored per day, or from the raw runs of a partial day.
      expect(bucket.latency_p50_ms).toBe(before.series[i]?.latency_p50_ms);
      expect(bucket.latency_p95_ms).toBe(before.series[i]?.latency_p95_ms);
    });
    expectSame(rolled.totals, await rawTotals(alice));
  });

  it('gives the raw cost breakdowns from the rollups, day and hour buckets alike', async () => {
    const rolled = await get<Costs>(alice, 'costs');
    expect(rolled.rollup_days).toBe(WHOLE_DAYS);
    expectSameCosts(rolled, costsBefore);
    const hourly = await get<Costs>(alice, 'costs', 'hour');
    expect(hourly.rollup_days).toBe(WHOLE_DAYS);
    expectSameCosts(hourly, (await rawOnly(alice, 'hour')).costs);
    expect(hourly.series.reduce((sum, b) => sum + b.cost, 0)).toBeCloseTo(costsBefore.total_cost, 9);
  });

  it('gives the raw agent figures from the rollups, reading a day with a running step raw', async () => {
    const rolled = await get<Agents>(alice, 'agents');
    expect(rolled.rollup_days).toBe(WHOLE_DAYS - 1);
    expectSameAgents(rolled, agentsBefore);
    const open = await t.rows<{ open_steps: number }>(sql`select open_steps from analytics_rollup_days
      where workspace_id = ${alice.workspaceId} and day = ${OPEN_DAY}::date`);
    expect(open[0]?.open_steps).toBeGreaterThan(0);
  });

  it('does nothing more when nothing changed', async () => {
    expect(await t.services.analytics.rollup()).toBe(0);
  });

  it('keeps each workspace to its own runs', async () => {
    const rolled = await overview(mallory, 'day');
    expect(rolled.rollup_days).toBe(WHOLE_DAYS);
    const raw = await rawTotals(mallory);
    expectSame(rolled.totals, raw);
    expect(raw.runs).toBeLessThan(before.totals.runs);
    const rows = await t.rows<{ n: number }>(sql`select count(*)::int as n from analytics_daily_runs
      where workspace_id = ${mallory.workspaceId}`);
    const mine = await t.rows<{
      n: number;
    }>(sql`select coalesce(sum(runs), 0)::int as n from analytics_daily_runs
      where workspace_id = ${mallory.workspaceId}`);
    expect(rows[0]?.n).toBeGreaterThan(0);
    expect(mine[0]?.n).toBe(80);
  });

  it('reads a day from raw runs once a late run makes it dirty, and the next sweep rolls it up again', async () => {
    await insertRun(t, alice.workspaceId, {
      status: 'Completed',
      created_at: '2026-03-05T12:00:00Z',
      workflow_name: 'Alpha',
      cost: 1,
      tokens_in: 7,
      tokens_out: 3,
      duration_ms: 500,
    });
    const dirty = await t.rows<{ day: string }>(sql`select to_char(day, 'YYYY-MM-DD') as day
      from analytics_rollup_days where workspace_id = ${alice.workspaceId} and dirty`);
    expect(dirty.map((d) => d.day)).toEqual(['2026-03-05']);
    const read = await overview(alice, 'day');
    expect(read.rollup_days).toBe(WHOLE_DAYS - 1);
    expect(read.totals.runs).toBe(before.totals.runs + 1);
    expectSame(read.totals, await rawTotals(alice));

    expect(await t.services.analytics.rollup()).toBe(1);
    const again = await overview(alice, 'day');
    expect(again.rollup_days).toBe(WHOLE_DAYS);
    expectSame(again.totals, await rawTotals(alice));
  });

  it('marks a day dirty when a run of it finishes late, and not for runs of today', async () => {
    const [running] = await t.rows<{ id: string }>(sql`select id::text as id from runs
      where workspace_id = ${alice.workspaceId} and status = 'Running'
        and created_at >= '2026-03-03' and created_at < '2026-03-04' limit 1`);
    await t.rows(sql`update runs set status = 'Completed', duration_ms = 90000 where id = ${running?.id}`);
    const read = await overview(alice, 'day');
    expect(read.rollup_days).toBe(WHOLE_DAYS - 1);
    expectSame(read.totals, await rawTotals(alice));
    expect(await t.services.analytics.rollup()).toBe(1);
    expectSame((await overview(alice, 'day')).totals, await rawTotals(alice));

    await insertRun(t, alice.workspaceId, { status: 'Running', created_at: new Date().toISOString() });
    const dirty = await t.rows<{ n: number }>(
      sql`select count(*)::int as n from analytics_rollup_days where dirty`,
    );
    expect(dirty[0]?.n).toBe(0);
  });

  it('marks a day dirty when a step of one of its runs changes, and rolls it up again', async () => {
    const [step] = await t.rows<{ id: string }>(sql`select s.id::text as id from run_steps s
      join runs r on r.id = s.run_id
      where r.workspace_id = ${alice.workspaceId} and r.created_at >= '2026-03-06' and r.created_at < '2026-03-07'
        and s.kind = 'agent' limit 1`);
    await t.rows(
      sql`update run_steps set cost = cost + 2, tokens_out = tokens_out + 11 where id = ${step?.id}`,
    );
    const dirty = await t.rows<{ day: string }>(sql`select to_char(day, 'YYYY-MM-DD') as day
      from analytics_rollup_days where workspace_id = ${alice.workspaceId} and dirty`);
    expect(dirty.map((d) => d.day)).toEqual(['2026-03-06']);
    const costs = await get<Costs>(alice, 'costs');
    expect(costs.rollup_days).toBe(WHOLE_DAYS - 1);
    const raw = await rawOnly(alice);
    expect(raw.costs.total_cost).toBeCloseTo(costsBefore.total_cost + 1, 9);
    expectSameCosts(costs, raw.costs);
    expectSameAgents(await get<Agents>(alice, 'agents'), raw.agents);

    expect(await t.services.analytics.rollup()).toBe(1);
    const again = await get<Costs>(alice, 'costs');
    expect(again.rollup_days).toBe(WHOLE_DAYS);
    expectSameCosts(again, raw.costs);
    expectSameAgents(await get<Agents>(alice, 'agents'), raw.agents);
  });

  it('reads the agents of a day from the rollups once its running steps finished', async () => {
    await t.rows(sql`update run_steps s set finished_at = s.started_at + interval '2 minutes', latency_ms = 1234,
        status = 'Completed'
      from runs r where r.id = s.run_id and r.workspace_id = ${alice.workspaceId} and s.finished_at is null
        and r.created_at >= ${OPEN_DAY}::date and r.created_at < ${OPEN_DAY}::date + 1`);
    expect(await t.services.analytics.rollup()).toBe(1);
    const rolled = await get<Agents>(alice, 'agents');
    expect(rolled.rollup_days).toBe(WHOLE_DAYS);
    expectSameAgents(rolled, (await rawOnly(alice)).agents);
  });

  it('removes a deleted workspace’s rollups with it (the trigger does not get in the way)', async () => {
    await t.rows(sql`delete from workspaces where id = ${mallory.workspaceId}`);
    const left = await t.rows<{ n: number }>(sql`select
      (select count(*) from analytics_daily_runs where workspace_id = ${mallory.workspaceId})
      + (select count(*) from analytics_daily_steps where workspace_id = ${mallory.workspaceId})
      + (select count(*) from analytics_daily_agents where workspace_id = ${mallory.workspaceId})
      + (select count(*) from analytics_rollup_days where workspace_id = ${mallory.workspaceId}) as n`);
    expect(Number(left[0]?.n)).toBe(0);
  });

  it('refuses a bad window as before', async () => {
    const res = await t.call(alice, 'GET', `/api/analytics/overview?from=${TO}&to=${FROM}&bucket=day`);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].field).toBe('query.from');
  });
});
