import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRun } from '../helpers/analytics-rows.ts';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent } from '../helpers/factories.ts';
import { insertDocument, insertSource } from '../helpers/knowledge-rows.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;

beforeAll(async () => {
  // Each test changes rows and reads the figures again at once: no shared answer.
  t = await createTestApp({ env: { SYSTEM_METRICS_SHARE_MS: '0' } });
  // The runs below are rows, not work: the recovery sweep must not hand Queued ones to workers.
  await t.services.components.find((c) => c.name === 'Run recovery')?.stop();
});
afterAll(() => t.close());

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
const metrics = async (actor: Actor) => {
  const response = await t.call(actor, 'GET', '/api/system/metrics');
  expect(response.statusCode).toBe(200);
  return response.json();
};
const finished = (status: 'Completed' | 'Failed', duration_ms: number, cost: number) => ({
  status,
  created_at: minutesAgo(30),
  duration_ms,
  cost,
});

describe('GET /api/system/metrics: KPIs over the last 24 hours', () => {
  it('answers null with a reason below 5 finished runs, then the figures computed by hand', async () => {
    const alice = await t.newWorkspace();
    const ws = alice.workspaceId;
    await insertRun(t, ws, finished('Completed', 100, 0.1));
    await insertRun(t, ws, finished('Completed', 200, 0.2));
    await insertRun(t, ws, finished('Failed', 300, 0.3));
    await insertRun(t, ws, finished('Completed', 400, 0.4));
    // Neither counts as finished: cancelled has no outcome, running has none yet.
    await insertRun(t, ws, { status: 'Cancelled', created_at: minutesAgo(20), duration_ms: 50 });
    await insertRun(t, ws, { status: 'Running', created_at: minutesAgo(10) });
    // Older than 24 hours: outside the window.
    await insertRun(t, ws, {
      status: 'Completed',
      created_at: minutesAgo(24 * 60 + 5),
      duration_ms: 9,
      cost: 9,
    });

    const few = await metrics(alice);
    expect(few.runs).toEqual({ total: 6, finished: 4, completed: 3, failed: 1 });
    for (const kpi of ['success_rate', 'latency_p50_ms', 'latency_p95_ms', 'cost']) {
      expect(few[kpi]).toEqual({ value: null, reason: '4 finished runs in 24 hours; at least 5 needed' });
    }

    await insertRun(t, ws, finished('Completed', 500, 0.5));
    const enough = await metrics(alice);
    expect(enough.runs).toEqual({ total: 7, finished: 5, completed: 4, failed: 1 });
    expect(enough.success_rate).toEqual({ value: 0.8 });
    // finished runs' durations 100 to 500 (not the cancelled run's 50), interpolated
    expect(enough.latency_p50_ms).toEqual({ value: 300 });
    expect(enough.latency_p95_ms).toEqual({ value: 480 });
    expect(enough.cost.value).toBeCloseTo(1.5, 10);
    expect(Date.parse(enough.window.to) - Date.parse(enough.window.from)).toBe(86_400_000);
  });

  it('gives the retrieval hit-rate from 5 searches on, with its counts', async () => {
    const alice = await t.newWorkspace();
    const today = new Date().toISOString().slice(0, 10);
    await t.rows(sql`insert into search_stats (workspace_id, day, mode, searches, hits, results)
      values (${alice.workspaceId}, ${today}, 'keyword', 4, 3, 10)`);
    expect((await metrics(alice)).retrieval_hit_rate).toEqual({
      value: null,
      reason: '4 searches in 24 hours; at least 5 needed',
      searches: 4,
      hits: 3,
    });
    await t.rows(
      sql`update search_stats set searches = 8, hits = 6 where workspace_id = ${alice.workspaceId}`,
    );
    expect((await metrics(alice)).retrieval_hit_rate).toEqual({ value: 0.75, searches: 8, hits: 6 });
  });
});

describe('GET /api/system/metrics: load and utilisation bands', () => {
  it('counts running plus queued runs: normal below 10, busy 10 to 20, overloaded above 20', async () => {
    const alice = await t.newWorkspace();
    const ws = alice.workspaceId;
    const add = async (status: 'Queued' | 'Running', n: number) => {
      for (let i = 0; i < n; i += 1) await insertRun(t, ws, { status, created_at: minutesAgo(1) });
    };
    expect((await metrics(alice)).workflows).toEqual({ running: 0, queued: 0, active: 0, band: 'normal' });
    await add('Running', 4);
    await add('Queued', 5);
    expect((await metrics(alice)).workflows).toEqual({ running: 4, queued: 5, active: 9, band: 'normal' });
    await add('Queued', 1);
    expect((await metrics(alice)).workflows).toMatchObject({ active: 10, band: 'busy' });
    await add('Queued', 10);
    expect((await metrics(alice)).workflows).toMatchObject({ active: 20, band: 'busy' });
    await add('Running', 1);
    expect((await metrics(alice)).workflows).toMatchObject({ running: 5, active: 21, band: 'overloaded' });
  });

  it('gives utilisation as Busy agents over all agents: optimal from 60 to 80 %', async () => {
    const alice = await t.newWorkspace();
    expect((await metrics(alice)).agents).toEqual({
      total: 0,
      active: 0,
      utilisation_percent: null,
      band: null,
    });
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await buildAgent(t, alice)).id);
    const busy = async (n: number) => {
      for (const [index, id] of ids.entries()) {
        await t.rows(sql`update agents set status = ${index < n ? 'Busy' : 'Idle'} where id = ${id}`);
      }
      return (await metrics(alice)).agents;
    };
    expect(await busy(2)).toEqual({ total: 5, active: 2, utilisation_percent: 40, band: 'under' });
    expect(await busy(3)).toEqual({ total: 5, active: 3, utilisation_percent: 60, band: 'optimal' });
    expect(await busy(4)).toEqual({ total: 5, active: 4, utilisation_percent: 80, band: 'optimal' });
    expect(await busy(5)).toEqual({ total: 5, active: 5, utilisation_percent: 100, band: 'over' });
  });
});

describe('GET /api/system/metrics: documents, status and uptime', () => {
  it('counts documents by state', async () => {
    const alice = await t.newWorkspace();
    const source = await insertSource(t.database.db, alice.workspaceId);
    const states = ['processed', 'processed', 'processed', 'processing', 'failed'];
    for (const status of states) {
      const { id } = await insertDocument(t.database.db, alice.workspaceId, source.id);
      await t.rows(sql`update documents set status = ${status} where id = ${id}`);
    }
    expect((await metrics(alice)).documents).toEqual({ processed: 3, processing: 1, failed: 1 });
  });

  it('reports the health status and uptime as recorded minutes over the minutes since the first', async () => {
    const alice = await t.newWorkspace();
    // Not in the last seconds of a minute, so the current minute stays the same meanwhile.
    const second = new Date().getUTCSeconds();
    if (second > 50) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1000));
    const current = Math.floor(Date.now() / 60_000) * 60_000;
    await t.rows(sql`delete from heartbeats`);
    // Ten minutes up to the current one, two of them missing (the process was down).
    for (const back of [9, 8, 7, 6, 4, 2, 1, 0]) {
      await t.rows(sql`insert into heartbeats (minute) values (${new Date(current - back * 60_000).toISOString()}::timestamptz)
        on conflict do nothing`);
    }
    const { system } = await metrics(alice);
    expect(system).toMatchObject({
      status: 'Operational',
      uptime_percent: 80,
      uptime_since: new Date(current - 9 * 60_000).toISOString(),
      uptime_window_minutes: 10,
      uptime_minutes_recorded: 8,
    });
    expect(system.components.map((c: { name: string }) => c.name)).toContain('Database');
  });

  it('says why there is no uptime before the first heartbeat', async () => {
    const alice = await t.newWorkspace();
    await t.rows(sql`delete from heartbeats`);
    expect((await metrics(alice)).system).toMatchObject({
      uptime_percent: null,
      uptime_reason: 'no heartbeat recorded yet',
      uptime_since: null,
    });
  });
});

describe('GET /api/system/metrics: isolation', () => {
  it('never counts another workspace’s runs, agents or documents', async () => {
    const alice = await t.newWorkspace();
    const mallory = await t.newWorkspace();
    for (let i = 0; i < 6; i += 1) await insertRun(t, mallory.workspaceId, finished('Completed', 100, 1));
    for (let i = 0; i < 12; i += 1)
      await insertRun(t, mallory.workspaceId, { status: 'Running', created_at: minutesAgo(1) });
    const agent = await buildAgent(t, mallory);
    await t.rows(sql`update agents set status = 'Busy' where id = ${agent.id}`);
    const source = await insertSource(t.database.db, mallory.workspaceId);
    await insertDocument(t.database.db, mallory.workspaceId, source.id);

    const mine = await metrics(alice);
    expect(mine.runs).toEqual({ total: 0, finished: 0, completed: 0, failed: 0 });
    expect(mine.success_rate.value).toBeNull();
    expect(mine.workflows).toMatchObject({ active: 0, band: 'normal' });
    expect(mine.agents).toMatchObject({ total: 0, active: 0 });
    expect(mine.documents).toEqual({ processed: 0, processing: 0, failed: 0 });

    const theirs = await metrics(mallory);
    expect(theirs.runs.finished).toBe(6);
    expect(theirs.workflows).toMatchObject({ active: 12, band: 'busy' });
    expect(theirs.agents).toMatchObject({ total: 1, active: 1, utilisation_percent: 100 });
  });

  it('needs authentication and a workspace', async () => {
    expect((await t.call(undefined, 'GET', '/api/system/metrics')).statusCode).toBe(401);
  });
});

describe('GET /metrics (Prometheus)', () => {
  it('answers the process figures and request durations by route pattern, in the text format', async () => {
    await t.call(await t.newWorkspace(), 'GET', '/api/system/metrics');
    const response = await t.call(undefined, 'GET', '/metrics');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/plain');
    expect(response.body).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(response.body).toMatch(
      /http_server_request_duration_seconds_count\{http_request_method="GET",http_route="\/api\/system\/metrics",http_response_status_code="200"\} \d+/,
    );
    expect(response.body).not.toContain(t.owner.workspaceId);
  });
});

describe('GET /api/system/metrics: one answer shared by a workspace for a few seconds', () => {
  it('answers concurrent requests with one computation, per workspace, until SYSTEM_METRICS_SHARE_MS has passed', async () => {
    const shared = await createTestApp({ env: { SYSTEM_METRICS_SHARE_MS: '1500' } });
    try {
      await shared.services.components.find((c) => c.name === 'Run recovery')?.stop();
      const alice = await shared.newWorkspace();
      const bob = await shared.newWorkspace();
      const read = async (actor: Actor) => {
        const response = await shared.call(actor, 'GET', '/api/system/metrics');
        expect(response.statusCode).toBe(200);
        return response.json();
      };
      const answers = await Promise.all(Array.from({ length: 20 }, () => read(alice)));
      // One computation: the same instant for all of them.
      expect(new Set(answers.map((answer) => answer.window.to)).size).toBe(1);
      const computedAt = Date.parse(answers[0].window.to);
      await insertRun(shared, alice.workspaceId, { status: 'Queued', created_at: minutesAgo(0) });
      await insertRun(shared, bob.workspaceId, { status: 'Queued', created_at: minutesAgo(0) });
      // Another workspace has its own answer; this one's is still the shared one.
      expect((await read(bob)).workflows.queued).toBe(1);
      // (Unless this machine was too slow to get here within the shared window.)
      if (Date.now() - computedAt < 1000) expect((await read(alice)).workflows.queued).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 1600));
      expect((await read(alice)).workflows.queued).toBe(1);
    } finally {
      await shared.close();
    }
  });
});
