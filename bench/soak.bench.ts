/**
 * `npm run bench:soak`: a mixed load held while things break, on the production shape of the
 * platform: an API process (RUN_MODE=api, bench/soak-server.ts) and two `src/worker.ts`
 * processes on a throwaway PostgreSQL database and the machine's Redis (a QUEUE_PREFIX of its
 * own), a loopback OpenAI-compatible model in a child process of its own answering at once.
 *
 * The mix (weights in MIX): lists and reads (agents, runs, a workflow, credentials, one
 * credential), keyword search over uploaded documents, system health and metrics; writes
 * (agents created and updated, credentials created); runs of a two-step workflow started and
 * followed over SSE to their end; chats read to their `done` event.
 *
 * Phases (SOAK_PHASES, default `closed,open,memory`):
 *
 * - `closed`: SOAK_CONNECTIONS (200) clients in a closed loop, no think time, for
 *   SOAK_CLOSED_SECONDS (120): the machine saturated, throughput is what it can do;
 * - `open`: a fixed arrival rate of SOAK_RATE (60) operations per second for
 *   SOAK_OPEN_SECONDS (120); latency is counted from the scheduled start, so a stall shows;
 * - `memory`: the same open loop for SOAK_MEMORY_SECONDS (1800) with the resident memory of
 *   every process sampled every 10 s; its growth over the second half is the figure.
 *
 * Faults (SOAK_FAULTS, default `worker,redis,postgres,api` for the first two phases; the
 * memory phase uses only those that keep the processes, `redis,postgres`, every 5 minutes):
 * a worker killed with SIGKILL and started again; Redis shut down without saving and started
 * again as `.ci/run` starts it; every PostgreSQL backend of the database terminated; the API
 * killed with SIGKILL and started again on the same port. Each opens a fault window lasting
 * until the part is back plus SOAK_FAULT_WINDOW_SECONDS (15): errors are classified inside or
 * outside the windows, and latency percentiles exclude operations that overlap one. `done/s`
 * counts the operations that succeeded, over the whole phase, windows included.
 *
 * After the load, the checks: every run acknowledged with 202 exists and ended Completed; no
 * step of a run completed twice; the workspace's audit chains verify; no secret written into
 * the vault appeared in a response or in any process's output. Prints markdown tables; record
 * them in bench/RESULTS.md. Needs PostgreSQL (POSTGRES_* or 127.0.0.1:5432) and Redis
 * (REDIS_URL or 127.0.0.1:6379, restartable by this user for the `redis` fault).
 */
import { type ChildProcess, fork, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import pg from 'pg';
import { createBenchPostgres } from './postgres-env.ts';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const CONNECTIONS = num('SOAK_CONNECTIONS', 200);
const RATE = num('SOAK_RATE', 60);
const FAULT_WINDOW_MS = num('SOAK_FAULT_WINDOW_SECONDS', 15) * 1000;
const PHASE_SECONDS: Record<Phase, number> = {
  closed: num('SOAK_CLOSED_SECONDS', 120),
  open: num('SOAK_OPEN_SECONDS', 120),
  memory: num('SOAK_MEMORY_SECONDS', 1800),
};
const PHASES = (process.env.SOAK_PHASES ?? 'closed,open,memory').split(',') as Phase[];
const FAULTS = (process.env.SOAK_FAULTS ?? 'worker,redis,postgres,api').split(',') as Fault[];
const MEMORY_FAULTS: Fault[] = FAULTS.filter((fault) => fault === 'redis' || fault === 'postgres');
const MEMORY_FAULT_EVERY_MS = 300_000;
/** An operation still unanswered after this is cut off and counted as `timeout`. */
const OPERATION_TIMEOUT_MS = 60_000;
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const REDIS_PORT = new URL(REDIS_URL).port || '6379';
const SECRET_PREFIX = `soak-secret-${process.pid}-`;
const root = path.resolve(import.meta.dirname, '..');
const nodeFlags = (
  JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }
).scripts.start
  .trim()
  .split(/\s+/)
  .slice(1)
  .filter((arg) => arg.startsWith('-'));

type Phase = 'closed' | 'open' | 'memory';
type Fault = 'worker' | 'redis' | 'postgres' | 'api';
type OperationClass = 'read' | 'write' | 'stream';

interface Api {
  url: string;
  /** The owner's token: seeding and checks. */
  token: string;
  workspace_id: string;
  /** The users the load is spread over (admins of the workspace once seeded). */
  users: { user_id: string; token: string }[];
}

/** What the load runs against, created by `seed`. */
interface Fixture {
  workflowId: string;
  agentIds: string[];
  credentialIds: number[];
  credentialTypeId: number;
}

interface Operation {
  name: string;
  kind: OperationClass;
  weight: number;
  /** Performs the operation; answers the status (or throws a connection error). */
  run(context: OperationContext): Promise<number>;
}

interface OperationContext {
  api: Api;
  fixture: Fixture;
  signal: AbortSignal;
  /** Error class for a non-2xx answer: `503 database_unavailable`. */
  problem(status: number, body: string): string;
}

// ---------------------------------------------------------------------------------------------
// Processes

const children = new Set<ChildProcess>();
const outputs: string[] = [];

function spawnNode(script: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, [...nodeFlags, script], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'development', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  // Every line any process writes is kept for the secret scan at the end (capped).
  const keep = (chunk: Buffer) => {
    if (outputs.length < 200_000) outputs.push(chunk.toString('utf8'));
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return child;
}

function firstLine(child: ChildProcess, test: (line: string) => boolean, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let done = false;
    child.stdout?.on('data', (chunk) => {
      if (done) return;
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      const line = lines.find(test);
      if (line !== undefined) {
        done = true;
        resolve(line);
      }
    });
    child.once('exit', (code) => {
      if (!done)
        reject(new Error(`${what} exited with ${code} before it was ready:\n${outputs.slice(-5).join('')}`));
    });
  });
}

function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

/** The model: tests/helpers/llm-servers.ts in a child process, so its CPU is not the bench's. */
async function startModel(): Promise<{ url: string; child: ChildProcess }> {
  const child = fork(import.meta.filename, ['model'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  const url = await new Promise<string>((resolve) =>
    child.once('message', (m) => resolve((m as { url: string }).url)),
  );
  return { url, child };
}

class System {
  api!: ChildProcess;
  workers: ChildProcess[] = [];
  info!: Api;
  readonly env: NodeJS.ProcessEnv;
  readonly port: number;
  constructor(env: NodeJS.ProcessEnv, port: number) {
    this.env = env;
    this.port = port;
  }

  async startApi(): Promise<void> {
    this.api = spawnNode('bench/soak-server.ts', {
      ...this.env,
      RUN_MODE: 'api',
      SOAK_PORT: String(this.port),
      ...(this.info ? { SOAK_WORKSPACE_ID: this.info.workspace_id } : {}),
    });
    this.info = JSON.parse(await firstLine(this.api, (l) => l.startsWith('{"url"'), 'soak-server')) as Api;
  }

  async startWorker(index: number): Promise<void> {
    const child = spawnNode('src/worker.ts', { ...this.env, RUN_MODE: 'worker', LOG_LEVEL: 'info' });
    await firstLine(child, (l) => l.includes('worker started'), 'src/worker.ts');
    this.workers[index] = child;
  }

  processes(): Map<string, ChildProcess> {
    return new Map([['API', this.api], ...this.workers.map((w, i) => [`worker ${i + 1}`, w] as const)]);
  }
}

// ---------------------------------------------------------------------------------------------
// The API client

async function call(
  api: Api,
  method: string,
  url: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${api.url}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${api.token}`,
      'x-workspace-id': api.workspace_id,
      ...(body === undefined || body instanceof FormData ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
    signal: signal ?? AbortSignal.timeout(OPERATION_TIMEOUT_MS),
  });
}

async function callJson<T>(api: Api, method: string, url: string, body?: unknown): Promise<T> {
  const response = await call(api, method, url, body);
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** Every response body read is scanned for the vault's secrets as it arrives. */
let leaks = 0;
function scan(text: string): string {
  if (text.includes(SECRET_PREFIX)) leaks += 1;
  return text;
}

async function seed(api: Api, modelUrl: string): Promise<Fixture> {
  for (const user of api.users) {
    await callJson(api, 'POST', '/api/workspaces/members', { user_id: user.user_id, role: 'admin' });
  }
  await callJson(api, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: modelUrl, credential_id: null }],
    default_model: { provider: 'loop', name: 'm' },
  });
  const agentIds: string[] = [];
  for (let i = 0; i < 20; i++) {
    const agent = await callJson<{ id: string }>(api, 'POST', '/api/agents', {
      name: `Soak agent ${i}`,
      description: 'seeded for the soak',
      model: null,
      tags: ['soak'],
    });
    agentIds.push(agent.id);
  }
  const workflow = await callJson<{ id: string }>(api, 'POST', '/api/workflows', {
    name: 'Soak workflow',
    goal: 'Answer at once',
    agents: agentIds.slice(0, 2),
  });
  const types = await callJson<{ items: { id: number; name: string }[] }>(
    api,
    'GET',
    '/api/credentials/types?limit=200',
  );
  const type = types.items.find((t) => t.name === 'postgres_credentials');
  if (!type) throw new Error('the postgres_credentials type is missing');
  const credentialIds: number[] = [];
  for (let i = 0; i < 10; i++) {
    const credential = await callJson<{ id: number }>(api, 'POST', '/api/credentials', {
      name: `soak-seed-${i}`,
      credential_type_id: type.id,
      data: {
        host: 'db.internal',
        port: 5432,
        database: 'app',
        username: 'app',
        password: `${SECRET_PREFIX}${i}`,
      },
    });
    credentialIds.push(credential.id);
  }
  const words = ['engine', 'vault', 'retrieval', 'workflow', 'playbook', 'policy', 'metrics', 'tenant'];
  for (let i = 0; i < 20; i++) {
    const text = Array.from({ length: 200 }, (_, n) => words[(i * 7 + n * 3) % words.length]).join(' ');
    const form = new FormData();
    form.append('file', new Blob([`# Document ${i}\n\n${text}\n`], { type: 'text/markdown' }), `doc-${i}.md`);
    await callJson(api, 'POST', '/api/documents/upload', form);
  }
  return { workflowId: workflow.id, agentIds, credentialIds, credentialTypeId: type.id };
}

const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)] as T;

/** A plain request: its status, the body read (and scanned) whatever it is. */
async function request(
  context: OperationContext,
  method: string,
  url: string,
  body?: unknown,
): Promise<number> {
  const response = await call(context.api, method, url, body, context.signal);
  const text = scan(await response.text());
  if (response.status >= 400) throw new OperationFailed(context.problem(response.status, text));
  return response.status;
}

/** Reads an SSE answer to its end; an `error` event is the operation's failure. */
async function readStream(
  context: OperationContext,
  response: Response,
  end: (event: string, data: string) => boolean,
) {
  if (response.status !== 200) {
    throw new OperationFailed(context.problem(response.status, scan(await response.text())));
  }
  const events = (response.body as ReadableStream<Uint8Array>)
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  for await (const event of events) {
    scan(event.data);
    if (event.event === 'error') {
      const code = (JSON.parse(event.data) as { code?: string }).code ?? 'unknown';
      throw new OperationFailed(`stream error ${code}`);
    }
    if (end(event.event ?? 'message', event.data)) return;
  }
  throw new OperationFailed('stream ended early');
}

class OperationFailed extends Error {}

/** The runs acknowledged with 202: each must exist and end Completed. */
const acknowledgedRuns = new Set<string>();

const MIX: Operation[] = [
  { name: 'list agents', kind: 'read', weight: 14, run: (c) => request(c, 'GET', '/api/agents?limit=20') },
  { name: 'list runs', kind: 'read', weight: 8, run: (c) => request(c, 'GET', '/api/runs?limit=20') },
  {
    name: 'get workflow',
    kind: 'read',
    weight: 5,
    run: (c) => request(c, 'GET', `/api/workflows/${c.fixture.workflowId}`),
  },
  {
    name: 'list credentials',
    kind: 'read',
    weight: 5,
    run: (c) => request(c, 'GET', '/api/credentials?limit=20'),
  },
  {
    name: 'get credential',
    kind: 'read',
    weight: 4,
    run: (c) => request(c, 'GET', `/api/credentials/${pick(c.fixture.credentialIds)}`),
  },
  {
    name: 'search',
    kind: 'read',
    weight: 8,
    run: (c) =>
      request(c, 'POST', '/api/documents/search', {
        query: pick(['vault engine', 'retrieval policy', 'tenant metrics', 'workflow playbook']),
        mode: 'keyword',
        top_k: 5,
      }),
  },
  { name: 'system metrics', kind: 'read', weight: 3, run: (c) => request(c, 'GET', '/api/system/metrics') },
  { name: 'system health', kind: 'read', weight: 2, run: (c) => request(c, 'GET', '/api/system/health') },
  {
    name: 'create agent',
    kind: 'write',
    weight: 6,
    run: (c) =>
      request(c, 'POST', '/api/agents', {
        name: `Soak ${Math.random().toString(36).slice(2, 10)}`,
        model: null,
        tags: ['soak-created'],
      }),
  },
  {
    name: 'update agent',
    kind: 'write',
    weight: 5,
    run: (c) =>
      request(c, 'PUT', `/api/agents/${pick(c.fixture.agentIds.slice(2))}`, {
        description: `updated ${Date.now()}`,
      }),
  },
  {
    name: 'create credential',
    kind: 'write',
    weight: 4,
    run: (c) =>
      request(c, 'POST', '/api/credentials', {
        name: `soak-${Math.random().toString(36).slice(2, 10)}`,
        credential_type_id: c.fixture.credentialTypeId,
        data: {
          host: 'db.internal',
          port: 5432,
          database: 'app',
          username: 'app',
          password: `${SECRET_PREFIX}${Math.random().toString(36).slice(2)}`,
        },
      }),
  },
  {
    name: 'run + follow (SSE)',
    kind: 'stream',
    weight: 10,
    async run(c) {
      const started = await call(c.api, 'POST', `/api/workflows/${c.fixture.workflowId}/run`, {}, c.signal);
      const text = scan(await started.text());
      if (started.status !== 202) throw new OperationFailed(c.problem(started.status, text));
      const { id } = JSON.parse(text) as { id: string };
      acknowledgedRuns.add(id);
      const events = await call(c.api, 'GET', `/api/runs/${id}/events`, undefined, c.signal);
      await readStream(c, events, (event) =>
        ['run.completed', 'run.failed', 'run.cancelled'].includes(event),
      );
      return 200;
    },
  },
  {
    name: 'chat (SSE)',
    kind: 'stream',
    weight: 6,
    async run(c) {
      const response = await call(c.api, 'POST', '/api/chat', { message: 'Say something short.' }, c.signal);
      await readStream(c, response, (event) => event === 'done');
      return 200;
    },
  },
];
const totalWeight = MIX.reduce((sum, op) => sum + op.weight, 0);
function chooseOperation(): Operation {
  let point = Math.random() * totalWeight;
  for (const op of MIX) {
    point -= op.weight;
    if (point < 0) return op;
  }
  return MIX[0] as Operation;
}

// ---------------------------------------------------------------------------------------------
// Faults

interface Window {
  fault: Fault;
  from: number;
  to: number;
}

const windows: Window[] = [];
const inWindow = (from: number, to: number) => windows.some((w) => from <= w.to && to >= w.from);

async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await sleep(100);
  }
}

const redisAnswers = () =>
  spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', REDIS_PORT, 'ping'], {
    encoding: 'utf8',
  }).stdout.trim() === 'PONG';

/** Starts Redis as `.ci/run` does: no persistence, so a restart comes back empty. */
function startRedis(): void {
  spawnSync('redis-server', [
    '--daemonize',
    'yes',
    '--bind',
    '127.0.0.1',
    '--port',
    REDIS_PORT,
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
}

async function inject(fault: Fault, system: System, pgAdmin: pg.Client, database: string): Promise<void> {
  // The window opens a little before the fault, so a request already failing is inside it.
  const window: Window = { fault, from: Date.now() - 1000, to: Number.POSITIVE_INFINITY };
  windows.push(window);
  try {
    if (fault === 'worker') {
      await stopChild(system.workers[0] as ChildProcess, 'SIGKILL');
      await sleep(2000);
      await system.startWorker(0);
    } else if (fault === 'redis') {
      spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', REDIS_PORT, 'shutdown', 'nosave']);
      await until(() => !redisAnswers(), 'Redis to stop', 10_000);
      await sleep(3000);
      startRedis();
      await until(redisAnswers, 'Redis to start', 10_000);
    } else if (fault === 'postgres') {
      await pgAdmin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [database],
      );
    } else {
      await stopChild(system.api, 'SIGKILL');
      await sleep(1000);
      await system.startApi();
    }
  } finally {
    window.to = Date.now() + FAULT_WINDOW_MS;
  }
}

// ---------------------------------------------------------------------------------------------
// Load and figures

interface Sample {
  op: string;
  kind: OperationClass;
  start: number;
  end: number;
  error?: string;
}

function classify(error: unknown): string {
  if (error instanceof OperationFailed) return error.message;
  const cause = (error as { cause?: { code?: string } }).cause;
  if ((error as Error).name === 'TimeoutError') return 'timeout';
  return `connection ${cause?.code ?? (error as Error).name}`;
}

function problemOf(status: number, body: string): string {
  try {
    return `${status} ${(JSON.parse(body) as { code?: string }).code ?? ''}`.trim();
  } catch {
    return `${status}`;
  }
}

async function perform(
  api: () => Api,
  fixture: Fixture,
  samples: Sample[],
  scheduled: number,
): Promise<void> {
  const op = chooseOperation();
  const sample: Sample = { op: op.name, kind: op.kind, start: scheduled, end: 0 };
  try {
    // Each operation is one of the users', as the many people behind the connections are.
    const base = api();
    await op.run({
      api: { ...base, token: pick(base.users).token },
      fixture,
      signal: AbortSignal.timeout(OPERATION_TIMEOUT_MS),
      problem: problemOf,
    });
  } catch (error) {
    sample.error = classify(error);
  }
  sample.end = Date.now();
  samples.push(sample);
}

/**
 * Closed loop: `connections` clients, each starting its next operation when one ends. A client
 * whose connection was refused waits a moment before the next, as a real one backs off, rather
 * than spinning through thousands of refusals while the API restarts.
 */
async function closedLoop(api: () => Api, fixture: Fixture, seconds: number, connections: number) {
  const samples: Sample[] = [];
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < end) {
        await perform(api, fixture, samples, Date.now());
        if (samples.at(-1)?.error?.startsWith('connection')) await sleep(250);
      }
    }),
  );
  return samples;
}

/** Open loop: an operation starts every 1/rate seconds, whether or not earlier ones ended. */
async function openLoop(api: () => Api, fixture: Fixture, seconds: number, rate: number) {
  const samples: Sample[] = [];
  const started = Date.now();
  const pending = new Set<Promise<void>>();
  for (let n = 0; ; n++) {
    const at = started + (n * 1000) / rate;
    if (at >= started + seconds * 1000) break;
    const wait = at - Date.now();
    if (wait > 0) await sleep(wait);
    const done = perform(api, fixture, samples, at).finally(() => pending.delete(done));
    pending.add(done);
  }
  await Promise.all(pending);
  return samples;
}

/** Faults spread over a phase: the first at a sixth of it, then evenly apart. */
async function faultSchedule(
  faults: Fault[],
  seconds: number,
  everyMs: number | undefined,
  inject1: (fault: Fault) => Promise<void>,
): Promise<void> {
  if (faults.length === 0) return;
  const start = Date.now();
  const end = start + seconds * 1000;
  const gap = everyMs ?? (seconds * 1000) / (faults.length + 1);
  for (let n = 0; ; n++) {
    const at = start + gap * (n + (everyMs ? 1 : 0.5));
    if (at + FAULT_WINDOW_MS > end) return;
    await sleep(Math.max(0, at - Date.now()));
    const fault = faults[n % faults.length] as Fault;
    process.stdout.write(`  fault: ${fault} at +${Math.round((Date.now() - start) / 1000)} s\n`);
    await inject1(fault);
  }
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
};

function countBy(items: string[]): string {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1);
  return (
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${n} × ${k}`)
      .join(', ') || '—'
  );
}

function report(phase: Phase, samples: Sample[], seconds: number): { outsideErrors: number } {
  const lines = [
    `\n### ${phase} (${seconds} s${phase === 'closed' ? `, ${CONNECTIONS} connections` : `, ${RATE} ops/s offered`})\n`,
    '| operation | class | done/s | p50 ms | p99 ms | errors outside fault windows | errors inside |',
    '|---|---|---:|---:|---:|---|---|',
  ];
  let outsideErrors = 0;
  const byOp = new Map<string, Sample[]>();
  for (const s of samples) byOp.set(s.op, [...(byOp.get(s.op) ?? []), s]);
  for (const op of MIX) {
    const list = byOp.get(op.name) ?? [];
    const clean = list.filter((s) => !inWindow(s.start, s.end));
    const ok = clean.filter((s) => !s.error).map((s) => s.end - s.start);
    const outside = clean.filter((s) => s.error).map((s) => s.error as string);
    const inside = list.filter((s) => s.error && inWindow(s.start, s.end)).map((s) => s.error as string);
    outsideErrors += outside.length;
    lines.push(
      `| ${op.name} | ${op.kind} | ${(list.filter((s) => !s.error).length / seconds).toFixed(1)} | ${percentile(ok, 50).toFixed(0)} | ${percentile(ok, 99).toFixed(0)} | ${countBy(outside)} | ${countBy(inside)} |`,
    );
  }
  for (const kind of ['read', 'write', 'stream'] as const) {
    const ok = samples
      .filter((s) => s.kind === kind && !s.error && !inWindow(s.start, s.end))
      .map((s) => s.end - s.start);
    lines.push(
      `| **all ${kind}s** | | ${(samples.filter((s) => s.kind === kind && !s.error).length / seconds).toFixed(1)} | ${percentile(ok, 50).toFixed(0)} | ${percentile(ok, 99).toFixed(0)} | | |`,
    );
  }
  lines.push(
    `| **all** | | ${(samples.filter((s) => !s.error).length / seconds).toFixed(1)} | | | ${outsideErrors} | ${samples.filter((s) => s.error && inWindow(s.start, s.end)).length} |`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  return { outsideErrors };
}

// ---------------------------------------------------------------------------------------------
// Memory

function rssMb(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

function memoryReport(series: Map<string, { at: number; pid: number; mb: number }[]>, seconds: number): void {
  const lines = [
    '\n### memory: resident set per process (MB)\n',
    '| process | after warm-up | at half | at end | growth over the second half |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const [name, points] of series) {
    if (points.length < 4) continue;
    const start = points[0]?.at ?? 0;
    const median = (from: number, to: number) =>
      percentile(
        points.filter((p) => p.at >= from && p.at <= to).map((p) => p.mb),
        50,
      );
    const minute = 60_000;
    const warm = median(start + minute, start + 2 * minute);
    const half = median(start + (seconds * 1000) / 2 - minute / 2, start + (seconds * 1000) / 2 + minute / 2);
    const last = median(start + seconds * 1000 - minute, start + seconds * 1000);
    const samePid = new Set(points.map((p) => p.pid)).size === 1 ? '' : ' (restarted)';
    lines.push(
      `| ${name}${samePid} | ${warm.toFixed(0)} | ${half.toFixed(0)} | ${last.toFixed(0)} | ${(((last - half) / half) * 100).toFixed(1)} % |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

// ---------------------------------------------------------------------------------------------
// Checks after the load

async function checks(api: Api, db: pg.Client): Promise<void> {
  const deadline = Date.now() + 120_000;
  let unfinished = 0;
  do {
    unfinished = Number(
      (await db.query(`select count(*) as n from runs where status in ('Queued', 'Running')`)).rows[0].n,
    );
    if (unfinished > 0) await sleep(1000);
  } while (unfinished > 0 && Date.now() < deadline);
  const ids = [...acknowledgedRuns];
  const found = await db.query<{ status: string; n: string }>(
    'select status, count(*) as n from runs where id = any($1::uuid[]) group by status',
    [ids],
  );
  const statuses = found.rows.map((r) => `${r.n} ${r.status}`).join(', ');
  const missing = ids.length - found.rows.reduce((sum, r) => sum + Number(r.n), 0);
  const twice = Number(
    (
      await db.query(
        `select count(*) as n from (select run_id, position from run_steps where status = 'Completed'
         group by run_id, position having count(*) > 1) d`,
      )
    ).rows[0].n,
  );
  const audit = await callJson<Record<string, unknown>>(api, 'GET', '/api/settings/audit/info');
  const logLeaks = outputs.filter((chunk) => chunk.includes(SECRET_PREFIX)).length;
  process.stdout.write(
    [
      '\n### checks\n',
      `- runs acknowledged (202): ${ids.length}; in the database: ${statuses}; missing: ${missing}; still unfinished 2 min after the load: ${unfinished}`,
      `- steps completed twice: ${twice}`,
      `- audit trail: ${JSON.stringify(audit).slice(0, 400)}`,
      `- secrets seen in responses: ${leaks}; in process output: ${logLeaks}`,
      '',
    ].join('\n'),
  );
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (!redisAnswers()) throw new Error(`Redis does not answer on 127.0.0.1:${REDIS_PORT}`);
  const database = await createBenchPostgres('soak');
  if (!database) throw new Error('PostgreSQL does not answer (POSTGRES_* or 127.0.0.1:5432)');
  const model = await startModel();
  const env: NodeJS.ProcessEnv = {
    ...database.env,
    REDIS_URL,
    QUEUE_PREFIX: `soak-${process.pid}`,
    OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32',
    ...Object.fromEntries(
      Object.entries(process.env)
        .filter(([k]) => k.startsWith('SOAK_ENV_'))
        .map(([k, v]) => [k.slice(9), v]),
    ),
  };
  const port = 40_000 + (process.pid % 20_000);
  const system = new System(env, port);
  const pgAdmin = new pg.Client({
    host: env.POSTGRES_HOST,
    port: Number(env.POSTGRES_PORT),
    user: env.POSTGRES_USER,
    password: env.POSTGRES_PASSWORD,
    database: 'postgres',
  });
  const dbClient = () =>
    new pg.Client({
      host: env.POSTGRES_HOST,
      port: Number(env.POSTGRES_PORT),
      user: env.POSTGRES_USER,
      password: env.POSTGRES_PASSWORD,
      database: env.POSTGRES_DB,
    });
  try {
    await pgAdmin.connect();
    await system.startApi();
    await system.startWorker(0);
    await system.startWorker(1);
    process.stdout.write(
      `soak: API ${system.info.url}, 2 workers, PostgreSQL ${env.POSTGRES_DB}, Redis ${REDIS_URL}; ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(2)}\n`,
    );
    const fixture = await seed(system.info, model.url);
    // A short warm-up, not measured.
    await closedLoop(() => system.info, fixture, 10, 20);
    acknowledgedRuns.clear();
    let outsideErrors = 0;
    for (const phase of PHASES) {
      const seconds = PHASE_SECONDS[phase];
      const faults = phase === 'memory' ? MEMORY_FAULTS : FAULTS;
      process.stdout.write(`phase ${phase}: ${seconds} s, faults ${faults.join(', ') || 'none'}\n`);
      const memory = new Map<string, { at: number; pid: number; mb: number }[]>();
      const sampler =
        phase === 'memory'
          ? setInterval(() => {
              for (const [name, child] of system.processes()) {
                const mb = rssMb(child.pid);
                if (mb !== undefined && child.pid)
                  memory.set(name, [...(memory.get(name) ?? []), { at: Date.now(), pid: child.pid, mb }]);
              }
            }, 10_000)
          : undefined;
      const faulting = faultSchedule(
        faults,
        seconds,
        phase === 'memory' ? MEMORY_FAULT_EVERY_MS : undefined,
        (fault) => inject(fault, system, pgAdmin, env.POSTGRES_DB as string),
      );
      const samples =
        phase === 'closed'
          ? await closedLoop(() => system.info, fixture, seconds, CONNECTIONS)
          : await openLoop(() => system.info, fixture, seconds, RATE);
      await faulting;
      if (sampler) clearInterval(sampler);
      outsideErrors += report(phase, samples, seconds).outsideErrors;
      if (phase === 'memory') memoryReport(memory, seconds);
    }
    const db = dbClient();
    await db.connect();
    try {
      await checks(system.info, db);
    } finally {
      await db.end();
    }
    process.stdout.write(`\nerrors outside fault windows, all phases: ${outsideErrors}\n`);
  } finally {
    await Promise.all([...children].map((child) => stopChild(child)));
    await pgAdmin.end().catch(() => {});
    await database
      .drop()
      .catch((error) => process.stderr.write(`could not drop the database: ${String(error)}\n`));
    if (!redisAnswers()) {
      startRedis();
    }
  }
}

if (process.argv[2] === 'model') {
  // The child: the loopback model answering at once; requests are forgotten as they come.
  const { startOpenAiServer } = await import('../tests/helpers/llm-servers.ts');
  const llm = await startOpenAiServer();
  llm.fallbackReply = { type: 'text', text: 'done', usage: { input_tokens: 12, output_tokens: 3 } };
  setInterval(() => llm.reset(), 1000).unref();
  process.send?.({ url: llm.url });
} else {
  await main();
  process.exit(0);
}
