/**
 * `npm run bench`: every figure of the HTTP API's performance table in one unattended run,
 * PostgreSQL (a throwaway database, when POSTGRES_* or the machine's 127.0.0.1:5432 answers)
 * and PGlite side by side:
 *
 * - throughput and latency (req/s, p50, p99) of a bare Fastify route, the authenticated
 *   agents list (`limit=20`), `POST /api/agents`, the credentials list (20 rows) and
 *   `POST /api/credentials`, all in one server process per engine (bench/api-server.ts)
 *   with autocannon in this process as the load generator;
 * - start-up time of `npm start`'s real command (`node [flags] src/main.ts`) from spawn to the first
 *   200 of `GET /api/health`, on a fresh data directory (cold) and again on the same one (warm);
 * - the idle resident memory (VmRSS of /proc/<pid>/status) of that warm process after a few
 *   authenticated requests and two seconds of idling.
 *
 * Prints one markdown table and exits 0. BENCH_SECONDS (per route, default 10),
 * BENCH_CONNECTIONS (default 50), BENCH_ENGINES (default `postgres,pglite`) and BENCH_PARTS
 * (default `routes,lifecycle`) tune it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { readDevIdentity } from '../src/modules/identity/dev-identity.ts';
import { loadDevSigningKey, mintDevToken } from '../src/modules/identity/dev-issuer.ts';
import { createBenchPostgres } from './postgres-env.ts';

const root = path.resolve(import.meta.dirname, '..');
/**
 * `npm start`'s command line (`node [flags] src/main.ts`): the start-up figures run exactly
 * it, and the load server runs with the same Node flags.
 */
const startCommand = (
  JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }
).scripts.start
  .trim()
  .split(/\s+/)
  .slice(1);
const nodeFlags = startCommand.filter((arg) => arg.startsWith('-'));
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DEV_ISSUER = 'urn:agent-platform:dev';
const DEV_AUDIENCE = 'agent-platform';

interface Server {
  url: string;
  token: string;
  workspace_id: string;
  credential_type_id: number;
  stop(): Promise<void>;
}

/** Waits for a child to exit, sending SIGTERM first unless it already has. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function startBenchServer(env: NodeJS.ProcessEnv): Promise<Server> {
  const child = spawn(process.execPath, [...nodeFlags, 'bench/api-server.ts'], {
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
  return { ...info, stop: () => stopChild(child) };
}

interface Load {
  rps: number;
  p50: number;
  p99: number;
  /** Responses other than 2xx, plus connection errors and timeouts. */
  errors: number;
}

async function load(url: string, options: Partial<autocannon.Options>): Promise<Load> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, ...options });
  const failures = result.errors + result.timeouts + result.non2xx;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: failures };
}

const ROUTES = [
  'GET /bare (no auth, no db)',
  'GET /api/agents?limit=20',
  'POST /api/agents',
  'GET /api/credentials (20 rows)',
  'POST /api/credentials',
] as const;

async function benchRoutes(env: NodeJS.ProcessEnv): Promise<Map<string, Load>> {
  const server = await startBenchServer(env);
  const headers = { authorization: `Bearer ${server.token}`, 'x-workspace-id': server.workspace_id };
  const json = { ...headers, 'content-type': 'application/json' };
  const results = new Map<string, Load>();
  try {
    // Warm up JIT, pools and caches before measuring.
    await load(`${server.url}/api/agents?limit=20`, { headers, duration: 3 });
    await load(`${server.url}/api/credentials?limit=20`, { headers, duration: 2 });
    results.set(ROUTES[0], await load(`${server.url}/bare`, {}));
    results.set(ROUTES[1], await load(`${server.url}/api/agents?limit=20`, { headers }));
    results.set(
      ROUTES[2],
      await load(`${server.url}/api/agents`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({
          name: 'Bench agent',
          model: { provider: 'openai', name: 'gpt-4o-mini' },
          tags: ['bench'],
        }),
      }),
    );
    results.set(ROUTES[3], await load(`${server.url}/api/credentials?limit=20`, { headers }));
    // Credential names are unique per workspace and environment: every request names a new one.
    let counter = 0;
    results.set(
      ROUTES[4],
      await load(`${server.url}/api/credentials`, {
        method: 'POST',
        headers: json,
        requests: [
          {
            setupRequest: (request) => {
              counter += 1;
              request.body = JSON.stringify({
                name: `bench-${counter}`,
                credential_type_id: server.credential_type_id,
                data: {
                  host: 'db.internal',
                  port: 5432,
                  database: 'app',
                  username: 'app',
                  password: `secret-${counter}`,
                },
              });
              return request;
            },
          },
        ],
      }),
    );
    return results;
  } finally {
    await server.stop();
  }
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

interface Started {
  child: ChildProcess;
  url: string;
  /** Milliseconds from spawn to the first 200 of GET /api/health. */
  startupMs: number;
}

/** Starts `npm start`'s command (`node [flags] src/main.ts`) and times it to its first healthy answer. */
async function startService(env: NodeJS.ProcessEnv): Promise<Started> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(process.execPath, startCommand, {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  for (;;) {
    if (exited) throw new Error(`node src/main.ts exited with ${child.exitCode}`);
    try {
      const response = await fetch(`${url}/api/health`);
      await response.arrayBuffer();
      if (response.status === 200) return { child, url, startupMs: performance.now() - started };
    } catch {
      // Not listening yet.
    }
    await sleep(10);
  }
}

function residentMegabytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kilobytes = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]);
  return kilobytes / 1024;
}

interface Lifecycle {
  coldMs: number;
  warmMs: number;
  idleRssMb: number;
}

/**
 * Cold start on an empty data directory (and, for PostgreSQL, an empty database), then a
 * warm start on the same ones; the warm process serves a few authenticated requests, idles
 * two seconds and has its resident memory read.
 */
async function benchLifecycle(env: NodeJS.ProcessEnv & { DATA_DIR: string }): Promise<Lifecycle> {
  const cold = await startService(env);
  await stopChild(cold.child);
  const warm = await startService(env);
  try {
    const identity = readDevIdentity(env.DATA_DIR);
    if (!identity) throw new Error('the service wrote no development identity');
    const token = await mintDevToken(await loadDevSigningKey(env.DATA_DIR), {
      userId: identity.user_id,
      issuer: DEV_ISSUER,
      audience: DEV_AUDIENCE,
    });
    const headers = { authorization: `Bearer ${token}`, 'x-workspace-id': identity.workspace_id };
    for (let i = 0; i < 5; i++) {
      for (const route of ['/api/agents?limit=20', '/api/credentials?limit=20', '/api/workspaces']) {
        const response = await fetch(`${warm.url}${route}`, { headers });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`${route} answered ${response.status}`);
      }
    }
    await sleep(2000);
    const idleRssMb = residentMegabytes(warm.child.pid as number);
    return { coldMs: cold.startupMs, warmMs: warm.startupMs, idleRssMb };
  } finally {
    await stopChild(warm.child);
  }
}

interface EngineResult {
  routes: Map<string, Load>;
  lifecycle?: Lifecycle;
}

async function benchEngine(engine: 'postgres' | 'pglite'): Promise<EngineResult | undefined> {
  if (engine === 'postgres') {
    const routesDb = await createBenchPostgres('bench_api');
    if (!routesDb) {
      process.stderr.write('PostgreSQL not reachable: skipping its column\n');
      return undefined;
    }
    let routes = new Map<string, Load>();
    try {
      if (parts.includes('routes')) routes = await benchRoutes(routesDb.env);
    } finally {
      await routesDb.drop();
    }
    const startDb = await createBenchPostgres('bench_start');
    if (!startDb) throw new Error('PostgreSQL went away during the benchmark');
    try {
      const lifecycle = parts.includes('lifecycle')
        ? await benchLifecycle(startDb.env as NodeJS.ProcessEnv & { DATA_DIR: string })
        : undefined;
      return { routes, lifecycle };
    } finally {
      await startDb.drop();
    }
  }
  const routesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pglite-'));
  const startDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pglite-start-'));
  try {
    const routes = parts.includes('routes') ? await benchRoutes({ DATA_DIR: routesDir }) : new Map();
    const lifecycle = parts.includes('lifecycle') ? await benchLifecycle({ DATA_DIR: startDir }) : undefined;
    return { routes, lifecycle };
  } finally {
    fs.rmSync(routesDir, { recursive: true, force: true });
    fs.rmSync(startDir, { recursive: true, force: true });
  }
}

const engines = (process.env.BENCH_ENGINES ?? 'postgres,pglite').split(',');
const parts = (process.env.BENCH_PARTS ?? 'routes,lifecycle').split(',');
const columns: { name: string; result: EngineResult }[] = [];
for (const engine of ['postgres', 'pglite'] as const) {
  if (!engines.includes(engine)) continue;
  const result = await benchEngine(engine);
  if (result) columns.push({ name: engine === 'postgres' ? 'PostgreSQL' : 'PGlite', result });
}

const thousands = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number) => (value < 10 ? value.toFixed(1) : thousands(value));
const loadAverage = os
  .loadavg()
  .map((value) => value.toFixed(2))
  .join(', ');
console.log(
  `\nnode ${process.version}, ${os.cpus().length} cores, load average ${loadAverage}; ${CONNECTIONS} connections, ${DURATION} s per route\n`,
);
console.log(`| figure | ${columns.map((column) => column.name).join(' | ')} |`);
console.log(`|---|${columns.map(() => '---:').join('|')}|`);
for (const route of parts.includes('routes') ? ROUTES : []) {
  const cells = columns.map(({ result }) => {
    const row = result.routes.get(route) as Load;
    const bare = result.routes.get(ROUTES[0]) as Load;
    const share = route === ROUTES[0] ? '' : `, ${((row.rps / bare.rps) * 100).toFixed(0)} % of bare`;
    const errors = row.errors > 0 ? `, ${thousands(row.errors)} errors` : '';
    return `${thousands(row.rps)} req/s, p50 ${ms(row.p50)} ms, p99 ${ms(row.p99)} ms${share}${errors}`;
  });
  console.log(`| \`${route}\` | ${cells.join(' | ')} |`);
}
const lifecycleRows: [string, (l: Lifecycle) => string][] = [
  ['start-up to the first 200, fresh data dir', (l) => `${(l.coldMs / 1000).toFixed(2)} s`],
  ['start-up to the first 200, warm', (l) => `${(l.warmMs / 1000).toFixed(2)} s`],
  ['resident memory of the service, idle', (l) => `${l.idleRssMb.toFixed(0)} MB`],
];
for (const [label, cell] of parts.includes('lifecycle') ? lifecycleRows : []) {
  console.log(
    `| ${label} | ${columns.map(({ result }) => cell(result.lifecycle as Lifecycle)).join(' | ')} |`,
  );
}
