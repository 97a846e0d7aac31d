/**
 * `npm run bench:playbooks`: playbook mining end to end through the API, on PGlite and
 * PostgreSQL, at BENCH_RUNS stored runs (default `10000,100000`; add 1000000 for the largest).
 *
 * Runs are written by the seeded generator of the tests (tests/helpers/run-generator.ts): eight
 * planted patterns (a third of the runs) and random noise, over 20 days. Then
 * `POST /api/playbooks/mine` (min_support 5, min_confidence 0.8, top_k 20, last 30 days) is
 * timed from the client, with the server's own split (load, mining, scoring, store) and the
 * process's resident memory before the request (after a GC when run with --expose-gc, as the
 * npm script does) and its peak during it, sampled every 10 ms. Target (issue 10): 100,000 runs under
 * 1 s on PostgreSQL, memory under 300 MB.
 *
 * BENCH_ENGINES (default `pglite,postgres`; PostgreSQL is 127.0.0.1:5432 or POSTGRES_*,
 * skipped when it does not answer).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.ts';
import { boot, startServices } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import { mintDevToken } from '../src/modules/identity/dev-issuer.ts';
import { generateRuns, type PlantedPattern } from '../tests/helpers/run-generator.ts';
import { createBenchPostgres } from './postgres-env.ts';

const sizes = (process.env.BENCH_RUNS ?? '10000,100000').split(',').map(Number);
const engines = (process.env.BENCH_ENGINES ?? 'pglite,postgres').split(',');

const TEAMS: Array<Omit<PlantedPattern, 'runs'>> = [
  { agents: ['Scanner', 'Auditor'], tools: ['secret_scan'], context: ['repository'], successRate: 0.95 },
  { agents: ['Planner', 'Coder', 'Tester'], tools: ['http_request'], context: ['ticket'], successRate: 0.9 },
  { agents: ['Analyst'], tools: ['sql_query'], context: ['dataset'], successRate: 0.85 },
  { agents: ['Deployer', 'Verifier'], tools: ['kubectl'], context: ['cluster'], successRate: 0.92 },
  { agents: ['Writer', 'Editor'], tools: ['knowledge_search'], context: ['audience'], successRate: 0.88 },
  { agents: ['Reviewer'], tools: ['github'], context: ['pull_request'], successRate: 0.97 },
  { agents: ['Triager', 'Fixer'], tools: ['jira'], context: ['issue'], successRate: 0.7 },
  { agents: ['Researcher', 'Summarizer'], tools: ['web_search'], context: ['topic'], successRate: 0.8 },
];

async function startService(engine: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-playbooks-'));
  let env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    POSTGRES_HOST: '',
    POSTGRES_DB: '',
    POSTGRES_USER: '',
    POSTGRES_PASSWORD: '',
    REDIS_URL: '',
    DB_QUEUE_TIMEOUT_MS: '60000',
  };
  let drop = async () => {};
  if (engine === 'postgres') {
    const pg = await createBenchPostgres('bench_playbooks');
    if (!pg) return undefined;
    env = { ...env, ...pg.env };
    drop = pg.drop;
  }
  const config = loadConfig(env);
  const { database, services } = await boot(config);
  const stop = await startServices(services);
  const app = await buildApp(services);
  if (!services.devKey) throw new Error('the benchmark uses development auth');
  return {
    app,
    database,
    services,
    async token(owner: string) {
      return mintDevToken(services.devKey as NonNullable<typeof services.devKey>, {
        userId: owner,
        issuer: config.auth.issuer,
        audience: config.auth.audience,
      });
    },
    async close() {
      await app.close();
      await stop();
      await database.close();
      await drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

const rows: string[] = [];
for (const engine of engines) {
  const service = await startService(engine);
  if (!service) {
    console.log(`${engine}: no server answers, skipped`);
    continue;
  }
  try {
    for (const size of sizes) {
      const owner = `bench-${engine}-${size}`;
      const workspace = await service.services.workspaces.createWorkspace(owner, { name: owner });
      const headers = {
        authorization: `Bearer ${await service.token(owner)}`,
        'x-workspace-id': workspace.id,
        'content-type': 'application/json',
      };
      const perTeam = Math.floor(size / 3 / TEAMS.length);
      const loadStarted = performance.now();
      const generated = await generateRuns(service.database.db, workspace.id, {
        seed: size,
        planted: TEAMS.map((team) => ({ ...team, runs: perTeam })),
        noise: size - perTeam * TEAMS.length,
        noiseSuccess: 0.4,
      });
      const writeSeconds = (performance.now() - loadStarted) / 1000;
      await service.database.db.execute(sql`analyze runs`);

      if (global.gc) global.gc();
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 10);
      const started = performance.now();
      const response = await service.app.inject({
        method: 'POST',
        url: '/api/playbooks/mine',
        headers,
        payload: { min_support: 5, min_confidence: 0.8, top_k: 20 },
      });
      const total = performance.now() - started;
      clearInterval(sampler);
      if (response.statusCode !== 200)
        throw new Error(`mine answered ${response.statusCode}: ${response.body}`);
      const result = response.json();
      const line = `| ${engine} | ${generated.count.toLocaleString('en')} | ${writeSeconds.toFixed(1)} s | ${
        result.took_ms.load
      } | ${result.took_ms.transactions} | ${result.took_ms.mining} | ${result.took_ms.scoring} | ${result.took_ms.store} | **${Math.round(
        total,
      )}** | ${mb(before)} | ${mb(peak)} (+${mb(peak - before)}) | ${result.playbooks.length} |`;
      rows.push(line);
      console.log(line);
    }
  } finally {
    await service.close();
  }
}

console.log(
  '\n| engine | runs | generating (not timed) | load ms | transactions ms | mining ms | scoring ms | store ms | total ms | RSS before MB | peak RSS MB (added) | playbooks |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows) console.log(row);
console.log('\nTarget: 100,000 runs under 1 s end to end on PostgreSQL, memory under 300 MB.');
