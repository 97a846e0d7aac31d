/**
 * The API process of `npm run bench:runs`: the real service (`boot`, `startServices`,
 * `buildApp`) on the database, queue and RUN_MODE the environment names, so it consumes runs
 * itself in the embedded mode (RUN_MODE=all) and only enqueues them beside `src/worker.ts`
 * processes (RUN_MODE=api). It seeds a workspace owned by a bench user and prints one JSON
 * line (url, token, workspace id). Two public routes read the figures from the database, so
 * the load generator needs no connection of its own (PGlite is open in this process only):
 *
 * - `GET /bench/unfinished`: how many of the workspace's runs are Queued or Running (the
 *   partial index `runs_unfinished_idx`), which the load generator keeps bounded;
 * - `GET /bench/window?from=&to=`: runs finished in the window, and the latencies of the runs
 *   created in it (enqueue to start, end to end), p50 and p99, and the failures.
 */
import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.ts';
import { boot, startServices } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import { mintDevToken } from '../src/modules/identity/dev-issuer.ts';

const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' });
const { database, services } = await boot(config);
const stopServices = await startServices(services);
const app = await buildApp(services);

const owner = 'bench-owner';
const workspace = await services.workspaces.createWorkspace(owner, { name: 'bench' });

/** Rows of a raw statement, on either engine. */
async function rows<T>(query: ReturnType<typeof sql>): Promise<T[]> {
  const result = await database.db.execute(query);
  return (result as unknown as { rows: T[] }).rows;
}

app.get('/bench/unfinished', { config: { public: true } }, async () => {
  const [row] = await rows<{ n: number | string }>(
    sql`select count(*) as n from runs where status in ('Queued', 'Running') and workspace_id = ${workspace.id}`,
  );
  return { unfinished: Number(row?.n ?? 0) };
});

app.get<{ Querystring: { from: string; to: string } }>(
  '/bench/window',
  { config: { public: true } },
  async (request) => {
    const { from, to } = request.query;
    const [finished] = await rows<{ n: number | string }>(
      sql`select count(*) as n from runs where workspace_id = ${workspace.id}
          and finished_at >= ${from}::timestamptz and finished_at < ${to}::timestamptz`,
    );
    const [latency] = await rows<Record<string, number | string | null>>(
      sql`select
            count(*) as created,
            count(*) filter (where status = 'Failed') as failed,
            count(*) filter (where finished_at is null) as unfinished,
            percentile_cont(0.5) within group (order by extract(epoch from started_at - created_at) * 1000) as start_p50,
            percentile_cont(0.99) within group (order by extract(epoch from started_at - created_at) * 1000) as start_p99,
            percentile_cont(0.5) within group (order by extract(epoch from finished_at - created_at) * 1000) as end_p50,
            percentile_cont(0.99) within group (order by extract(epoch from finished_at - created_at) * 1000) as end_p99
          from runs where workspace_id = ${workspace.id}
          and created_at >= ${from}::timestamptz and created_at < ${to}::timestamptz`,
    );
    const [steps] = await rows<{ n: number | string }>(
      sql`select count(*) as n from run_steps s join runs r on r.id = s.run_id
          where r.workspace_id = ${workspace.id} and r.created_at >= ${from}::timestamptz
          and r.created_at < ${to}::timestamptz`,
    );
    const number = (value: number | string | null | undefined) => (value == null ? null : Number(value));
    return {
      finished: Number(finished?.n ?? 0),
      created: number(latency?.created),
      failed: number(latency?.failed),
      unfinished: number(latency?.unfinished),
      steps: Number(steps?.n ?? 0),
      start_p50: number(latency?.start_p50),
      start_p99: number(latency?.start_p99),
      end_p50: number(latency?.end_p50),
      end_p99: number(latency?.end_p99),
    };
  },
);

if (config.auth.mode !== 'dev' || !services.devKey) throw new Error('the benchmark uses development auth');
const token = await mintDevToken(services.devKey, {
  userId: owner,
  issuer: config.auth.issuer,
  audience: config.auth.audience,
});
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.stdout.write(
  `${JSON.stringify({ url: `http://127.0.0.1:${port}`, token, workspace_id: workspace.id })}\n`,
);

process.once('SIGTERM', async () => {
  await app.close();
  await stopServices();
  await database.close();
  process.exit(0);
});
