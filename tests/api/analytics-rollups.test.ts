import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRun, type RunRow } from '../helpers/analytics-rows.ts';
import type { Actor } from '../helpers/api-client.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Daily rollups against the raw runs: a generated data set over ten past days, read once
 * from the raw runs (hour buckets never use rollups) and once through the rollups (day
 * buckets, after the rollup job): counts and sums equal, percentiles within the histogram's
 * bound (sqrt(1.05) - 1, plus the 0.1 ms rounding of the response).
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

function generate(seed: number, count: number): RunRow[] {
  const next = random(seed);
  const statuses = ['Completed', 'Completed', 'Completed', 'Failed', 'Cancelled', 'Running'] as const;
  return Array.from({ length: count }, () => {
    const status = statuses[Math.floor(next() * statuses.length)] as RunRow['status'];
    const finished = status === 'Completed' || status === 'Failed';
    return {
      status,
      created_at: new Date(
        Date.parse('2026-03-01T00:00:00Z') + Math.floor(next() * 10 * 86_400_000),
      ).toISOString(),
      workflow_name: ['Alpha', 'Beta', 'Gamma'][Math.floor(next() * 3)] as string,
      cost: Math.round(next() * 1000) / 10_000,
      tokens_in: Math.floor(next() * 5000),
      tokens_out: Math.floor(next() * 2000),
      duration_ms: finished ? Math.floor(50 + next() ** 3 * 120_000) : null,
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

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
  mallory = await t.newWorkspace('mallory');
  for (const run of generate(1, 300)) await insertRun(t, alice.workspaceId, run);
  for (const run of generate(2, 80)) await insertRun(t, mallory.workspaceId, run);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('analytics daily rollups', () => {
  let before: Overview;

  it('reads raw runs until the days are rolled up', async () => {
    before = await overview(alice, 'day');
    expect(before.rollup_days).toBe(0);
    expect(before.totals.runs).toBeGreaterThan(200);
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

  it('removes a deleted workspace’s rollups with it (the trigger does not get in the way)', async () => {
    await t.rows(sql`delete from workspaces where id = ${mallory.workspaceId}`);
    const left = await t.rows<{ n: number }>(sql`select
      (select count(*) from analytics_daily_runs where workspace_id = ${mallory.workspaceId})
      + (select count(*) from analytics_rollup_days where workspace_id = ${mallory.workspaceId}) as n`);
    expect(Number(left[0]?.n)).toBe(0);
  });

  it('refuses a bad window as before', async () => {
    const res = await t.call(alice, 'GET', `/api/analytics/overview?from=${TO}&to=${FROM}&bucket=day`);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].field).toBe('query.from');
  });
});
