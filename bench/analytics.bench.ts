/**
 * `npm run bench:analytics`: the analytics overview and the dashboard's metrics over
 * BENCH_RUNS stored runs (default 1,000,000) on PostgreSQL, through the HTTP API (Fastify
 * inject), with and without the daily rollups.
 *
 * A fresh database (`bench_analytics_<pid>` on POSTGRES_* or 127.0.0.1:5432, dropped at the
 * end) gets the runs in one `generate_series` insert per workspace: BENCH_WORKSPACES (4)
 * workspaces, spread evenly over the last BENCH_DAYS (120) days, eight workflows, 5 % failed,
 * 2 % cancelled, durations from 100 ms to about 2 minutes. The rollup job's sweep then rolls up
 * every closed day. Each endpoint is timed warm (BENCH_WARMUP, 5, requests first, then
 * BENCH_ITERATIONS, 50) twice: on the service as it runs (rollups for whole clean UTC days)
 * and on the same service with `rollups: false` (every figure from the raw runs), for
 *
 * - `GET /api/analytics/overview` over the last 24 hours (hour buckets: raw either way),
 * - `GET /api/analytics/overview` over the last 90 days (day buckets: 89 rolled-up days),
 * - `GET /api/system/metrics` (its KPIs are always the last 24 hours: raw either way),
 * - `GET /api/analytics/costs` and `/agents` over the last 24 hours and 90 days (their
 *   breakdowns by provider, model, agent and workflow read the step and agent rollups for
 *   whole days; every run has one or two agent steps, every fourth a merge step).
 *
 * Target (issue 11): p50 under 50 ms for the 24-hour and 90-day windows. BENCH_EXPLAIN=1
 * prints the PostgreSQL plans of the raw queries; BENCH_KEEP=1 keeps the database (its name
 * is printed) for a closer look.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.ts';
import { boot, startServices } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import { createAnalyticsService } from '../src/modules/analytics/analytics.service.ts';
import { mintDevToken } from '../src/modules/identity/dev-issuer.ts';
import { createBenchPostgres } from './postgres-env.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 1_000_000);
const WORKSPACES = Number(process.env.BENCH_WORKSPACES ?? 4);
const DAYS = Number(process.env.BENCH_DAYS ?? 120);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 50);
const DAY_MS = 86_400_000;

const pg = await createBenchPostgres('bench_analytics');
if (!pg) {
  console.log('PostgreSQL does not answer (POSTGRES_* or 127.0.0.1:5432): nothing measured');
  process.exit(0);
}
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-analytics-'));
const config = loadConfig({
  ...process.env,
  ...pg.env,
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  REDIS_URL: '',
  RUN_MODE: 'all',
  DB_QUEUE_TIMEOUT_MS: '60000',
});
const { database, services } = await boot(config);
const stop = await startServices(services);
const rolled = await buildApp(services);
const raw = await buildApp({
  ...services,
  analytics: createAnalyticsService({ db: database.db, rollups: false }),
});

const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const percentile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;

try {
  const owner = 'bench-analytics';
  const workspaces: Array<{ id: string; tenantId: string }> = [];
  for (let i = 0; i < WORKSPACES; i += 1) {
    const created = await services.workspaces.createWorkspace(owner, { name: `analytics ${i}` });
    workspaces.push({ id: created.id, tenantId: created.tenant.id });
  }
  const devKey = services.devKey;
  if (!devKey) throw new Error('the benchmark uses development auth');
  const token = await mintDevToken(devKey, {
    userId: owner,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
  });

  const perWorkspace = Math.floor(RUNS / WORKSPACES);
  const plan = JSON.stringify({
    goal: 'g',
    execution_policy: { mode: 'sequential', error_handling: 'stop', max_retries: 0, timeout_seconds: 900 },
  });
  let started = performance.now();
  for (const { id: workspace } of workspaces) {
    // Run g is created (g / n) of the way back over DAYS days, so every hour has runs.
    await database.db.execute(sql`
      insert into runs (workspace_id, workflow_name, status, plan, agent_ids, cost, tokens_in, tokens_out,
        duration_ms, created_at, started_at, finished_at)
      select ${workspace}, 'workflow ' || (g % 8),
        case when g % 20 = 0 then 'Failed' when g % 50 = 1 then 'Cancelled' else 'Completed' end,
        ${plan}::jsonb, '{}'::uuid[], (g % 97) / 1000.0, 200 + g % 1800, 50 + g % 700,
        case when g % 50 = 1 then null else 100 + ((g::bigint * 2654435761) % 1000) ^ 2 / 8 end,
        c, c, c + interval '1 second'
      from generate_series(1, ${perWorkspace}) g,
        lateral (select now() - (g::float8 / ${perWorkspace}) * interval '${sql.raw(String(DAYS))} days' as c) t`);
  }
  // Every run gets one or two agent steps (four agents, three models) and every fourth a merge step.
  for (const { id: workspace, tenantId } of workspaces) {
    const caller = { userId: owner, workspaceId: workspace, tenantId };
    const agentIds: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      agentIds.push((await services.agents.create(caller, { name: `agent ${i}` })).id);
    }
    await database.db.execute(sql`
      insert into run_steps (run_id, workspace_id, position, kind, agent_id, agent_name, status, provider, model,
        tokens_in, tokens_out, cost, latency_ms, started_at, finished_at)
      select r.id, r.workspace_id, p, case when p = 2 then 'merge' else 'agent' end,
        case when p = 2 then null else (${`{${agentIds.join(',')}}`}::uuid[])[1 + (n + p) % 4] end,
        case when p = 2 then null else 'agent ' || ((n + p) % 4) end, 'Completed',
        case when p = 2 then null when n % 3 = 0 then 'anthropic' else 'openai' end,
        case when p = 2 then null when n % 3 = 0 then 'claude' when n % 3 = 1 then 'gpt-4o' else 'gpt-4o-mini' end,
        r.tokens_in / 2, r.tokens_out / 2, r.cost / 2, 50 + (n * 7919) % 20000,
        r.created_at, r.created_at + interval '400 milliseconds'
      from (select id, workspace_id, tokens_in, tokens_out, cost, created_at,
              row_number() over (order by created_at) as n
            from runs where workspace_id = ${workspace}) r,
        generate_series(0, 2) p
      where p = 0 or (p = 1 and n % 2 = 0) or (p = 2 and n % 4 = 0)`);
  }
  const loadSeconds = (performance.now() - started) / 1000;
  await database.db.execute(sql`analyze runs`);
  await database.db.execute(sql`analyze run_steps`);
  console.log(
    `${(perWorkspace * WORKSPACES).toLocaleString('en')} runs written in ${loadSeconds.toFixed(1)} s`,
  );

  const job = services.components.find((c) => c.name === 'Analytics rollups') as unknown as {
    sweep(): Promise<number>;
  };
  started = performance.now();
  const days = await job.sweep();
  const rollupSeconds = (performance.now() - started) / 1000;
  await database.db.execute(sql`analyze analytics_daily_runs`);
  await database.db.execute(sql`analyze analytics_rollup_days`);
  await database.db.execute(sql`analyze analytics_daily_steps`);
  await database.db.execute(sql`analyze analytics_daily_agents`);
  console.log(`${days} workspace-days rolled up in ${rollupSeconds.toFixed(1)} s`);

  const workspace = workspaces[0]?.id as string;
  const headers = { authorization: `Bearer ${token}`, 'x-workspace-id': workspace };
  const now = Date.now();
  const iso = (t: number) => new Date(t).toISOString();
  const cases = [
    { name: 'overview, last 24 hours (hour buckets)', url: '/api/analytics/overview' },
    {
      name: 'overview, last 90 days (day buckets)',
      url: `/api/analytics/overview?from=${iso(now - 90 * DAY_MS)}&to=${iso(now)}&bucket=day`,
    },
    { name: 'system metrics (last 24 hours)', url: '/api/system/metrics' },
    { name: 'costs, last 24 hours (hour buckets)', url: '/api/analytics/costs' },
    {
      name: 'costs, last 90 days (day buckets)',
      url: `/api/analytics/costs?from=${iso(now - 90 * DAY_MS)}&to=${iso(now)}&bucket=day`,
    },
    { name: 'agents, last 24 hours', url: '/api/analytics/agents' },
    {
      name: 'agents, last 90 days',
      url: `/api/analytics/agents?from=${iso(now - 90 * DAY_MS)}&to=${iso(now)}`,
    },
  ];

  async function time(app: typeof rolled, url: string) {
    const took: number[] = [];
    let body: Record<string, unknown> = {};
    for (let i = 0; i < WARMUP + ITERATIONS; i += 1) {
      const t0 = performance.now();
      const res = await app.inject({ method: 'GET', url, headers });
      const t1 = performance.now();
      if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
      if (i >= WARMUP) took.push(t1 - t0);
      body = res.json();
    }
    took.sort((a, b) => a - b);
    return { p50: percentile(took, 0.5), p99: percentile(took, 0.99), body };
  }

  const rows: string[] = [];
  for (const c of cases) {
    const withRollups = await time(rolled, c.url);
    const rawOnly = await time(raw, c.url);
    const totals = (withRollups.body.totals ?? withRollups.body.runs) as Record<string, unknown> | undefined;
    const counted =
      totals !== undefined
        ? Number(totals.runs ?? totals.total ?? 0)
        : Array.isArray(withRollups.body.by_workflow)
          ? (withRollups.body.by_workflow as Array<{ runs: number }>).reduce((sum, g) => sum + g.runs, 0)
          : (withRollups.body.items as Array<{ runs: number }>).reduce((sum, a) => sum + a.runs, 0);
    const line = `| ${c.name} | ${withRollups.body.rollup_days ?? '—'} | **${ms(withRollups.p50)}** | ${ms(
      withRollups.p99,
    )} | ${ms(rawOnly.p50)} | ${ms(rawOnly.p99)} | ${counted.toLocaleString('en')} |`;
    rows.push(line);
  }

  if (process.env.BENCH_EXPLAIN === '1') {
    const from = new Date(now - 90 * DAY_MS);
    for (const [label, where] of [
      [
        '24 hours',
        sql`workspace_id = ${workspace} and created_at >= ${new Date(now - DAY_MS)} and created_at < ${new Date(now)}`,
      ],
      [
        '90 days',
        sql`workspace_id = ${workspace} and created_at >= ${from} and created_at < ${new Date(now)}`,
      ],
    ] as const) {
      const plan = (await database.db.execute(
        sql`explain analyze select count(*), sum(cost), percentile_cont(0.5) within group (order by duration_ms) from runs where ${where}`,
      )) as unknown as { rows: Array<Record<string, string>> };
      console.log(`\nraw runs, ${label}:\n${plan.rows.map((r) => Object.values(r)[0]).join('\n')}`);
    }
  }

  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(
    `\n${(perWorkspace * WORKSPACES).toLocaleString('en')} runs in ${WORKSPACES} workspaces over ${DAYS} days, PostgreSQL; ${ITERATIONS} warm requests each (after ${WARMUP}), Fastify inject, ms; ${os.cpus().length} × ${cpu}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  console.log(
    '| request | rolled-up days | rollups p50 | rollups p99 | raw p50 | raw p99 | runs counted (agents: agent-runs) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const line of rows) console.log(line);
} finally {
  await rolled.close();
  await raw.close();
  await stop();
  await database.close();
  if (process.env.BENCH_KEEP === '1') console.log(`kept database ${pg.env.POSTGRES_DB}`);
  else await pg.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
