/**
 * `npm run bench`: authenticated `GET /api/agents?limit=20` and `POST /api/agents` beside a
 * bare Fastify route of the same server process, on PostgreSQL (when POSTGRES_* or the
 * machine's 127.0.0.1:5432 is reachable) and on PGlite. Prints req/s, p50, p99 and each
 * route's ratio to the bare route. The load generator (autocannon) runs in this process;
 * the server in a child process.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createBenchPostgres } from './postgres-env.ts';

const root = path.resolve(import.meta.dirname, '..');
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

interface Server {
  url: string;
  token: string;
  workspace_id: string;
  stop(): Promise<void>;
}

async function startServer(env: NodeJS.ProcessEnv): Promise<Server> {
  const child = spawn(process.execPath, ['bench/api-server.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH, NODE_ENV: 'development', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let buffer = '';
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline >= 0) resolve(buffer.slice(0, newline));
    });
    child.on('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const info = JSON.parse(line) as Omit<Server, 'stop'>;
  return {
    ...info,
    stop: () =>
      new Promise((resolve) => {
        child.on('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

interface Row {
  engine: string;
  route: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(
  url: string,
  options: Partial<autocannon.Options>,
): Promise<Omit<Row, 'engine' | 'route'>> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, ...options });
  const failures = result.errors + result.timeouts + result.non2xx;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: failures };
}

async function benchEngine(engine: string, env: NodeJS.ProcessEnv): Promise<Row[]> {
  const server = await startServer(env);
  const headers = { authorization: `Bearer ${server.token}`, 'x-workspace-id': server.workspace_id };
  try {
    // Warm up JIT, pools and caches before measuring.
    await load(`${server.url}/api/agents?limit=20`, { headers, duration: 3 });
    const rows: Row[] = [];
    rows.push({ engine, route: 'GET /bare (no auth, no db)', ...(await load(`${server.url}/bare`, {})) });
    rows.push({
      engine,
      route: 'GET /api/agents?limit=20',
      ...(await load(`${server.url}/api/agents?limit=20`, { headers })),
    });
    rows.push({
      engine,
      route: 'POST /api/agents',
      ...(await load(`${server.url}/api/agents`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Bench agent',
          model: { provider: 'openai', name: 'gpt-4o-mini' },
          tags: ['bench'],
        }),
      })),
    });
    return rows;
  } finally {
    await server.stop();
  }
}

const engines = (process.env.BENCH_ENGINES ?? 'postgres,pglite').split(',');
const rows: Row[] = [];
const postgres = engines.includes('postgres') ? await createBenchPostgres('bench_api') : undefined;
if (postgres) {
  try {
    rows.push(...(await benchEngine('PostgreSQL', postgres.env)));
  } finally {
    await postgres.drop();
  }
} else {
  process.stderr.write('PostgreSQL not reachable: skipping its rows\n');
}
if (engines.includes('pglite')) {
  const pgliteDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pglite-'));
  try {
    rows.push(...(await benchEngine('PGlite', { DATA_DIR: pgliteDir })));
  } finally {
    fs.rmSync(pgliteDir, { recursive: true, force: true });
  }
}

const pad = (text: string, width: number) => text.padEnd(width);
const num = (value: number, width: number, digits = 0) => value.toFixed(digits).padStart(width);
console.log(
  `\n${CONNECTIONS} connections, ${DURATION} s per route, ${os.cpus().length} cores, node ${process.version}\n`,
);
console.log(
  `${pad('engine', 11)} ${pad('route', 28)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'vs bare'.padStart(8)} ${'errors'.padStart(7)}`,
);
for (const row of rows) {
  const bare = rows.find((r) => r.engine === row.engine && r.route.startsWith('GET /bare'));
  const ratio = bare ? `${((row.rps / bare.rps) * 100).toFixed(0)} %` : '-';
  console.log(
    `${pad(row.engine, 11)} ${pad(row.route, 28)} ${num(row.rps, 8)} ${num(row.p50, 7, 1)} ${num(row.p99, 7, 1)} ${ratio.padStart(8)} ${num(row.errors, 7)}`,
  );
}
const list = rows.find((r) => r.engine === 'PostgreSQL' && r.route.startsWith('GET /api/agents'));
const bare = rows.find((r) => r.engine === 'PostgreSQL' && r.route.startsWith('GET /bare'));
if (list && bare) {
  const share = list.rps / bare.rps;
  console.log(
    `\ntarget (PostgreSQL list >= 25 % of bare, p99 < 25 ms): ${(share * 100).toFixed(0)} %, p99 ${list.p99} ms -> ${share >= 0.25 && list.p99 < 25 ? 'met' : 'NOT met'}`,
  );
}
