/**
 * `npm run bench:runs`: the run engine's throughput and latency and the chat's added time to
 * first byte, in one unattended run, setups side by side in one markdown table:
 *
 * - (a) embedded: PGlite, the in-process queue, RUN_MODE=all, one process;
 * - (b) PostgreSQL + Redis, an API process (RUN_MODE=api) and one `src/worker.ts` process;
 * - (c) the same with two worker processes.
 *
 * Runs: one-step workflows (one agent) on a loopback OpenAI-compatible model that answers at
 * once (tests/helpers/llm-servers.ts, in this process). Bounded concurrent posters call
 * `POST /api/workflows/{id}/run` on the API process's real port and keep the workspace's
 * unfinished runs (Queued + Running) near a cap above the consumers' concurrency, so workers
 * are never idle and the queue never grows without bound. After a warm-up, BENCH_SECONDS
 * (default 30) are measured; the figures come from the database (bench/runs-server.ts):
 * runs whose finished_at falls in the window per second, and for the runs created in it
 * `started_at - created_at` (enqueue to start) and `finished_at - created_at` (end to end).
 * The CPU time each part of the system used in the window (from /proc, Linux only), per run
 * finished, says where a run's cost goes: a steadier figure than runs/s on a noisy machine.
 *
 * Clients (setup `clients`, on the embedded default with no DB_QUEUE_* set): BENCH_CLIENTS
 * (default `20,50`) closed-loop clients, each starting a two-step run, following it
 * (`GET /api/runs/{id}` every 100 ms) to its end and starting the next, for BENCH_SECONDS;
 * counted: runs completed per second, 503 answers (`database_busy`), other refusals, runs
 * that ended Failed, runs not finished after the drain. The embedded default must hold 50
 * such clients with no 503 and no failed run.
 *
 * Chat (setups a and b, whose API process serves chat): the platform's added time to first
 * byte, that is the client's time from sending `POST /api/chat` to its first `delta` SSE event,
 * minus the provider's own time to first byte (the loopback server's first byte written minus
 * its request's arrival), sequential requests; then 200 concurrent streams held open (10 chunks
 * 200 ms apart), counted completed (a `done` event) or errored.
 *
 * PostgreSQL (127.0.0.1:5432 or POSTGRES_*) and Redis (REDIS_URL or 127.0.0.1:6379) are needed
 * for b and c: their columns are skipped, and said so, when either does not answer. Throwaway
 * databases, temporary data directories and a QUEUE_PREFIX of its own, all removed at the end.
 * BENCH_SETUPS (default `embedded,clients,redis1,redis2`), BENCH_SECONDS, BENCH_WARMUP_SECONDS
 * (default 3), BENCH_POSTERS (default 16), BENCH_CHAT_REQUESTS (default 200),
 * BENCH_CHAT_STREAMS (default 200) tune it; BENCH_NODE_FLAGS adds Node flags to the spawned
 * processes (`--cpu-prof --cpu-prof-dir=/tmp/prof` to profile them).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { Redis } from 'ioredis';
import pg from 'pg';
import { type LlmServer, startOpenAiServer } from '../tests/helpers/llm-servers.ts';
import { createBenchPostgres } from './postgres-env.ts';

const root = path.resolve(import.meta.dirname, '..');
const nodeFlags = (
  JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }
).scripts.start
  .trim()
  .split(/\s+/)
  .slice(1)
  .filter((arg) => arg.startsWith('-'));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const POSTERS = Number(process.env.BENCH_POSTERS ?? 16);
const CHAT_REQUESTS = Number(process.env.BENCH_CHAT_REQUESTS ?? 200);
const CHAT_STREAMS = Number(process.env.BENCH_CHAT_STREAMS ?? 200);
const IDLE_RUNS = Number(process.env.BENCH_IDLE_RUNS ?? 100);
/** A provider's time to first byte in the second chat series (hosted models take 200 ms to seconds). */
const SLOW_FIRST_BYTE_MS = 50;
/** Jobs each consuming process runs at once (the product's default WORKER_CONCURRENCY). */
const CONCURRENCY = Number(process.env.WORKER_CONCURRENCY ?? 10);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const QUEUE_PREFIX = `bench-runs-${process.pid}`;
const setups = (process.env.BENCH_SETUPS ?? 'embedded,clients,redis1,redis2').split(',');
const CLIENTS = (process.env.BENCH_CLIENTS ?? '20,50').split(',').map(Number);
const loadAverageAtStart = os.loadavg();

interface ApiServer {
  url: string;
  token: string;
  workspace_id: string;
  child: ChildProcess;
}

/** The processes a setup's CPU time is read from: the API and the workers it spawned. */
interface BenchProcesses {
  api: ChildProcess;
  workers: ChildProcess[];
}

const CPU_ROLES = ['API', 'workers', 'PostgreSQL', 'Redis', 'bench'] as const;
type CpuRole = (typeof CPU_ROLES)[number];
const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU seconds used so far, by role: the setup's own children, every `postgres` and
 * `redis-server` process on the machine, and this process (the posters and the loopback
 * model). Undefined where /proc does not exist.
 */
function cpuSeconds(processes: BenchProcesses): Map<CpuRole, number> | undefined {
  if (!fs.existsSync('/proc/self/stat')) return undefined;
  const roleOf = new Map<number, CpuRole>([[process.pid, 'bench']]);
  if (processes.api.pid) roleOf.set(processes.api.pid, 'API');
  for (const worker of processes.workers) if (worker.pid) roleOf.set(worker.pid, 'workers');
  const seconds = new Map<CpuRole, number>(CPU_ROLES.map((role) => [role, 0]));
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const role =
      roleOf.get(pid) ??
      (command === 'postgres' ? 'PostgreSQL' : command === 'redis-server' ? 'Redis' : undefined);
    if (!role) continue;
    // After the command: state is field 3; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    seconds.set(role, (seconds.get(role) ?? 0) + (Number(fields[11]) + Number(fields[12])) / clockTicks);
  }
  return seconds;
}

/** Waits for a child to exit, sending SIGTERM first unless it already has. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const children = new Set<ChildProcess>();

function spawnNode(script: string, env: NodeJS.ProcessEnv): ChildProcess {
  const extraFlags = process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeFlags, ...extraFlags, script], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'development',
      VAULT_ALLOW_LOOPBACK: 'true',
      WORKER_CONCURRENCY: String(CONCURRENCY),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Resolves with the first stdout line matching `test`; rejects if the child exits first. */
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
      if (!done) reject(new Error(`${what} exited with ${code} before it was ready`));
    });
  });
}

async function startApiServer(env: NodeJS.ProcessEnv): Promise<ApiServer> {
  const child = spawnNode('bench/runs-server.ts', env);
  const line = await firstLine(child, (l) => l.startsWith('{"url"'), 'bench/runs-server.ts');
  // Keep draining stdout so the child never blocks on a full pipe.
  child.stdout?.resume();
  return { ...(JSON.parse(line) as Omit<ApiServer, 'child'>), child };
}

async function startWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawnNode('src/worker.ts', { ...env, RUN_MODE: 'worker', LOG_LEVEL: 'info' });
  await firstLine(child, (l) => l.includes('worker started'), 'src/worker.ts');
  child.stdout?.resume();
  return child;
}

async function call(server: ApiServer, method: string, url: string, body?: unknown): Promise<Response> {
  return fetch(`${server.url}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${server.token}`,
      'x-workspace-id': server.workspace_id,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function callJson<T>(server: ApiServer, method: string, url: string, body?: unknown): Promise<T> {
  const response = await call(server, method, url, body);
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** The workspace's default model is the loopback server; `steps` agents on it; a workflow of them. */
async function seed(server: ApiServer, llm: LlmServer, steps = 1): Promise<string> {
  await callJson(server, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
    default_model: { provider: 'loop', name: 'm' },
  });
  const agents: string[] = [];
  for (let step = 0; step < steps; step++) {
    const agent = await callJson<{ id: string }>(server, 'POST', '/api/agents', {
      name: `Bench agent ${step + 1}`,
      model: null,
    });
    agents.push(agent.id);
  }
  const workflow = await callJson<{ id: string }>(server, 'POST', '/api/workflows', {
    name: `Bench workflow of ${steps}`,
    goal: 'Answer at once',
    agents,
  });
  return workflow.id;
}

/**
 * Enqueue to start with a consumer waiting: IDLE_RUNS runs one after the other, each posted
 * once the previous has finished (polled through GET /api/runs/{id}), so the figure is the
 * pickup path alone (commit, queue, wake, claim) and not the wait behind other runs that the
 * throughput load measures by design. The first five warm up and are left out.
 */
async function idleStartLatency(
  server: ApiServer,
  workflowId: string,
): Promise<{ p50: number | null; p99: number | null }> {
  const waitForEnd = async (id: string) => {
    for (;;) {
      const run = await callJson<{ status: string }>(server, 'GET', `/api/runs/${id}`);
      if (['Completed', 'Failed', 'Cancelled'].includes(run.status)) return;
      // Not tighter: polling every millisecond kept the API process and the database busy
      // during the very pickup being measured.
      await sleep(20);
    }
  };
  for (let i = 0; i < 5; i++) {
    await waitForEnd(
      (await callJson<{ id: string }>(server, 'POST', `/api/workflows/${workflowId}/run`, {})).id,
    );
  }
  const from = new Date();
  for (let i = 0; i < IDLE_RUNS; i++) {
    await waitForEnd(
      (await callJson<{ id: string }>(server, 'POST', `/api/workflows/${workflowId}/run`, {})).id,
    );
  }
  const query = new URLSearchParams({ from: from.toISOString(), to: new Date().toISOString() });
  const window = (await (await fetch(`${server.url}/bench/window?${query}`)).json()) as {
    start_p50: number | null;
    start_p99: number | null;
  };
  return { p50: window.start_p50, p99: window.start_p99 };
}

interface RunFigures {
  runsPerSecond: number;
  startP50: number | null;
  startP99: number | null;
  endP50: number | null;
  endP99: number | null;
  created: number;
  failed: number;
  postErrors: number;
  /** The refused posts by status and problem code (`281 503 database_busy`). */
  postErrorKinds: string;
  notFinished: number;
  inFlightCap: number;
  /** GET /bench/unfinished calls made: statements the database served for the bench itself. */
  polls: number;
  /** Enqueue to start of runs posted one at a time to an idle consumer. */
  idleStart?: { p50: number | null; p99: number | null };
  /** PostgreSQL only: what the database did per run, from its statistics views. */
  perRun?: { commits: number; rows: string };
  /** CPU milliseconds per run finished in the window, by role (Linux only). */
  cpuPerRun?: Map<CpuRole, number>;
}

/**
 * Keeps the workspace's unfinished runs near `cap` with POSTERS concurrent posters for the
 * warm-up plus SECONDS, lets the runs drain, then reads the window's figures.
 */
async function loadRuns(
  server: ApiServer,
  workflowId: string,
  processes: BenchProcesses,
): Promise<RunFigures> {
  const consumers = Math.max(1, processes.workers.length);
  const cap = Math.ceil(consumers * CONCURRENCY * 1.5);
  const windowStart = Date.now() + WARMUP_SECONDS * 1000;
  const windowEnd = windowStart + SECONDS * 1000;
  let cpuAtStart: Map<CpuRole, number> | undefined;
  let cpuAtEnd: Map<CpuRole, number> | undefined;
  const cpuTimers = [
    setTimeout(() => (cpuAtStart = cpuSeconds(processes)), windowStart - Date.now()),
    setTimeout(() => (cpuAtEnd = cpuSeconds(processes)), windowEnd - Date.now()),
  ];
  let inFlight = 0;
  let posted = 0;
  let postErrors = 0;
  const postErrorKinds = new Map<string, number>();
  let polling = true;
  let polls = 0;
  const poller = (async () => {
    while (polling) {
      polls += 1;
      const postedAtSend = posted;
      const response = await fetch(`${server.url}/bench/unfinished`);
      const { unfinished } = (await response.json()) as { unfinished: number };
      inFlight = unfinished + (posted - postedAtSend);
      await sleep(10);
    }
  })();
  const poster = async () => {
    while (Date.now() < windowEnd) {
      if (inFlight >= cap) {
        await sleep(1);
        continue;
      }
      inFlight += 1;
      posted += 1;
      const response = await call(server, 'POST', `/api/workflows/${workflowId}/run`, {});
      const text = await response.text();
      if (response.status !== 202) {
        postErrors += 1;
        const kind = `${response.status} ${(JSON.parse(text) as { code?: string }).code ?? ''}`.trim();
        postErrorKinds.set(kind, (postErrorKinds.get(kind) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: POSTERS }, poster));
  const drainDeadline = Date.now() + 60_000;
  while (Date.now() < drainDeadline) {
    polls += 1;
    const response = await fetch(`${server.url}/bench/unfinished`);
    if (((await response.json()) as { unfinished: number }).unfinished === 0) break;
    await sleep(100);
  }
  polling = false;
  await poller;
  for (const timer of cpuTimers) clearTimeout(timer);
  const query = new URLSearchParams({
    from: new Date(windowStart).toISOString(),
    to: new Date(windowEnd).toISOString(),
  });
  const response = await fetch(`${server.url}/bench/window?${query}`);
  const window = (await response.json()) as {
    finished: number;
    created: number;
    failed: number;
    unfinished: number;
    start_p50: number | null;
    start_p99: number | null;
    end_p50: number | null;
    end_p99: number | null;
  };
  return {
    runsPerSecond: window.finished / SECONDS,
    startP50: window.start_p50,
    startP99: window.start_p99,
    endP50: window.end_p50,
    endP99: window.end_p99,
    created: window.created,
    failed: window.failed,
    postErrors,
    postErrorKinds: [...postErrorKinds].map(([kind, n]) => `${n} ${kind}`).join(', '),
    notFinished: window.unfinished,
    inFlightCap: cap,
    polls,
    ...(cpuAtStart && cpuAtEnd && window.finished > 0
      ? {
          cpuPerRun: new Map(
            CPU_ROLES.map((role) => [
              role,
              ((cpuAtEnd?.get(role) ?? 0) - (cpuAtStart?.get(role) ?? 0)) * (1000 / window.finished),
            ]),
          ),
        }
      : {}),
  };
}

/** PostgreSQL's counters: commits, runs, and rows inserted and updated per table. */
interface DatabaseCounters {
  commits: number;
  runs: number;
  tables: Map<string, { ins: number; upd: number }>;
}

/**
 * Reads the counters from pg_stat_database and pg_stat_user_tables. The backends flush their
 * statistics about once a second, hence the pause first.
 */
async function readDatabaseCounters(env: NodeJS.ProcessEnv): Promise<DatabaseCounters> {
  await sleep(2500);
  const client = new pg.Client({
    host: env.POSTGRES_HOST,
    port: Number(env.POSTGRES_PORT),
    user: env.POSTGRES_USER,
    password: env.POSTGRES_PASSWORD,
    database: env.POSTGRES_DB,
  });
  await client.connect();
  try {
    const runs = Number((await client.query('select count(*) as n from runs')).rows[0].n);
    const commits = Number(
      (await client.query('select xact_commit from pg_stat_database where datname = current_database()'))
        .rows[0].xact_commit,
    );
    const tables = await client.query<{ relname: string; ins: string; upd: string }>(
      'select relname, n_tup_ins as ins, n_tup_upd as upd from pg_stat_user_tables',
    );
    return {
      commits,
      runs,
      tables: new Map(tables.rows.map((t) => [t.relname, { ins: Number(t.ins), upd: Number(t.upd) }])),
    };
  } finally {
    await client.end();
  }
}

/**
 * What PostgreSQL did per run of the throughput load (between two readings of the counters):
 * commits (a statement outside a transaction counts as one) less the bench's own polls, and
 * rows inserted or updated per table.
 */
function databaseWorkPerRun(
  before: DatabaseCounters,
  after: DatabaseCounters,
  polls: number,
): { commits: number; rows: string } {
  const runs = after.runs - before.runs;
  const rows = [...after.tables]
    .map(([name, t]) => {
      const earlier = before.tables.get(name) ?? { ins: 0, upd: 0 };
      return { name, ins: (t.ins - earlier.ins) / runs, upd: (t.upd - earlier.upd) / runs };
    })
    .filter((t) => t.ins + t.upd >= 0.5)
    .sort((a, b) => b.ins + b.upd - (a.ins + a.upd))
    .map((t) => `${t.name} +${t.ins.toFixed(1)}/~${t.upd.toFixed(1)}`)
    .join(', ');
  return { commits: (after.commits - before.commits - polls) / runs, rows };
}

/** Reads an SSE response to its end; the time of the first body byte and of the first `delta`. */
async function readChat(
  response: Response,
  sentAt: number,
): Promise<{ firstByteMs?: number; firstDeltaMs?: number; done: boolean; error?: string }> {
  let firstByteMs: number | undefined;
  let firstDeltaMs: number | undefined;
  let done = false;
  let error: string | undefined;
  const body = response.body as ReadableStream<Uint8Array>;
  const timed = body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        firstByteMs ??= performance.now() - sentAt;
        controller.enqueue(chunk);
      },
    }),
  );
  const events = timed.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  for await (const event of events) {
    if (event.event === 'delta') firstDeltaMs ??= performance.now() - sentAt;
    if (event.event === 'done') done = true;
    if (event.event === 'error') error = event.data;
  }
  return { firstByteMs, firstDeltaMs, done, error };
}

interface ChatFigures {
  /** Added time with a provider that takes SLOW_FIRST_BYTE_MS to its first byte. */
  slowAddedP50: number;
  slowAddedP99: number;
  addedP50: number;
  addedP99: number;
  /** The added time before the provider's request arrived, and after its first byte (p50). */
  beforeProviderP50: number;
  afterFirstByteP50: number;
  clientP50: number;
  providerP50: number;
  chatErrors: number;
  streamsCompleted: number;
  streamsErrored: number;
  /** What the errored streams answered, each kind once. */
  streamErrorKinds: string;
  streamsSeconds: number;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
};

/**
 * Sequential chats: the platform's added time to the first `delta`, that is the client's time
 * from sending to its first `delta` less the provider's own time to first byte. The first 20
 * warm the JIT and the pools.
 */
async function timeFirstDelta(
  server: ApiServer,
  llm: LlmServer,
  requests: number,
  firstByteDelayMs: number,
): Promise<{
  added: number[];
  before: number[];
  after: number[];
  client: number[];
  provider: number[];
  errors: number;
}> {
  llm.reset();
  llm.fallbackReply = { type: 'text', text: ['Hello', ' from', ' the loopback model.'], firstByteDelayMs };
  const added: number[] = [];
  const before: number[] = [];
  const after: number[] = [];
  const client: number[] = [];
  const provider: number[] = [];
  let errors = 0;
  for (let i = 0; i < requests + 20; i++) {
    const seen = llm.modelRequests().length;
    const sentAt = performance.now();
    const response = await call(server, 'POST', '/api/chat', { message: `Question ${i}` });
    if (response.status !== 200) {
      errors += 1;
      await response.arrayBuffer();
      continue;
    }
    const read = await readChat(response, sentAt);
    const request = llm.modelRequests()[seen];
    if (!read.done || read.firstDeltaMs === undefined || request?.firstByteAt === undefined) {
      errors += 1;
      continue;
    }
    if (i < 20) continue;
    const providerMs = request.firstByteAt - request.arrivedAt;
    client.push(read.firstDeltaMs);
    provider.push(providerMs);
    added.push(read.firstDeltaMs - providerMs);
    // The added time split: until the provider's request arrives, and from its first byte on.
    before.push(request.arrivedAt - sentAt);
    after.push(sentAt + read.firstDeltaMs - request.firstByteAt);
  }
  return { added, before, after, client, provider, errors };
}

async function benchChat(server: ApiServer, llm: LlmServer): Promise<ChatFigures> {
  const instant = await timeFirstDelta(server, llm, CHAT_REQUESTS, 0);
  const slow = await timeFirstDelta(server, llm, Math.ceil(CHAT_REQUESTS / 2), SLOW_FIRST_BYTE_MS);
  const added = instant.added;
  const client = instant.client;
  const provider = instant.provider;
  const chatErrors = instant.errors + slow.errors;

  llm.reset();
  llm.fallbackReply = {
    type: 'text',
    text: Array.from({ length: 10 }, (_, n) => `chunk ${n} `),
    chunkDelayMs: 200,
  };
  const started = performance.now();
  const streamErrorKinds = new Set<string>();
  const outcomes = await Promise.all(
    Array.from({ length: CHAT_STREAMS }, async (_, n) => {
      try {
        const sentAt = performance.now();
        const response = await call(server, 'POST', '/api/chat', { message: `Stream ${n}` });
        if (response.status !== 200) {
          const problem = (await response.json().catch(() => ({}))) as { code?: string };
          streamErrorKinds.add(`${response.status} ${problem.code ?? ''}`.trim());
          return false;
        }
        const read = await readChat(response, sentAt);
        if (read.error !== undefined) streamErrorKinds.add(`error event ${read.error.slice(0, 80)}`);
        return read.done && read.error === undefined;
      } catch (error) {
        streamErrorKinds.add(String(error).slice(0, 80));
        return false;
      }
    }),
  );
  const streamsSeconds = (performance.now() - started) / 1000;
  const streamsCompleted = outcomes.filter(Boolean).length;
  return {
    slowAddedP50: percentile(slow.added, 50),
    slowAddedP99: percentile(slow.added, 99),
    addedP50: percentile(added, 50),
    addedP99: percentile(added, 99),
    beforeProviderP50: percentile(instant.before, 50),
    afterFirstByteP50: percentile(instant.after, 50),
    clientP50: percentile(client, 50),
    providerP50: percentile(provider, 50),
    chatErrors,
    streamsCompleted,
    streamsErrored: outcomes.length - streamsCompleted,
    streamErrorKinds: [...streamErrorKinds].join('; '),
    streamsSeconds,
  };
}

interface Column {
  name: string;
  runs?: RunFigures;
  chat?: ChatFigures;
  skipped?: string;
}

async function redisReachable(): Promise<boolean> {
  const redis = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  try {
    await redis.connect();
    await redis.ping();
    return true;
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** Deletes every Redis key under the bench's own prefix. */
async function cleanRedis(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

async function benchEmbedded(llm: LlmServer): Promise<Column> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-runs-pglite-'));
  let server: ApiServer | undefined;
  try {
    server = await startApiServer({ DATA_DIR: dataDir, RUN_MODE: 'all' });
    const workflowId = await seed(server, llm);
    llm.reset();
    llm.fallbackReply = { type: 'text', text: 'done' };
    const idleStart = await idleStartLatency(server, workflowId);
    const runs = { ...(await loadRuns(server, workflowId, { api: server.child, workers: [] })), idleStart };
    const chat = await benchChat(server, llm);
    return { name: '(a) embedded: PGlite, in-process queue, 1 process', runs, chat };
  } finally {
    if (server) await stopChild(server.child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** What closed-loop clients with a run in flight each saw on the embedded default. */
interface ClientFigures {
  clients: number;
  runsPerSecond: number;
  started: number;
  failed: number;
  /** Why the failed runs failed, by reason and error. */
  failedKinds: string;
  notFinished: number;
  /** 503 answers, any request. */
  unavailable: number;
  /** Other answers that were not 2xx, by status and code. */
  refusedKinds: string;
}

/**
 * `clients` closed-loop clients for SECONDS: each starts a two-step run, follows it to its
 * end (a read every 100 ms, as a console does) and starts the next; then the runs drain.
 */
async function loadClients(server: ApiServer, workflowId: string, clients: number): Promise<ClientFigures> {
  const until = Date.now() + SECONDS * 1000;
  let started = 0;
  let completedInWindow = 0;
  let failed = 0;
  const failures = new Map<string, number>();
  let notFinished = 0;
  let unavailable = 0;
  const refused = new Map<string, number>();
  const note = async (response: Response): Promise<unknown> => {
    const text = await response.text();
    if (response.ok) return JSON.parse(text);
    if (response.status === 503) unavailable += 1;
    else {
      const kind = `${response.status} ${(JSON.parse(text) as { code?: string }).code ?? ''}`.trim();
      refused.set(kind, (refused.get(kind) ?? 0) + 1);
    }
    return undefined;
  };
  const client = async () => {
    while (Date.now() < until) {
      const run = (await note(await call(server, 'POST', `/api/workflows/${workflowId}/run`, {}))) as
        | { id: string }
        | undefined;
      if (!run) continue;
      started += 1;
      const drainUntil = until + 60_000;
      for (;;) {
        await sleep(100);
        const read = (await note(await call(server, 'GET', `/api/runs/${run.id}`))) as
          | { status: string; failure_reason: string | null; error: string | null }
          | undefined;
        if (read?.status === 'Completed' || read?.status === 'Failed' || read?.status === 'Cancelled') {
          if (read.status === 'Failed') {
            failed += 1;
            const kind = `${read.failure_reason}: ${read.error?.slice(0, 120)}`;
            failures.set(kind, (failures.get(kind) ?? 0) + 1);
          } else if (Date.now() < until) completedInWindow += 1;
          break;
        }
        if (Date.now() > drainUntil) {
          notFinished += 1;
          break;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return {
    clients,
    runsPerSecond: completedInWindow / SECONDS,
    started,
    failed,
    failedKinds: [...failures].map(([kind, n]) => `${n} ${kind}`).join(', '),
    notFinished,
    unavailable,
    refusedKinds: [...refused].map(([kind, n]) => `${n} ${kind}`).join(', '),
  };
}

/** The embedded default (no DB_QUEUE_* set) under each count of closed-loop clients in turn. */
async function benchClients(llm: LlmServer): Promise<ClientFigures[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-runs-clients-'));
  let server: ApiServer | undefined;
  try {
    server = await startApiServer({ DATA_DIR: dataDir, RUN_MODE: 'all' });
    const workflowId = await seed(server, llm, 2);
    llm.reset();
    llm.fallbackReply = { type: 'text', text: 'done' };
    const figures: ClientFigures[] = [];
    for (const clients of CLIENTS) figures.push(await loadClients(server, workflowId, clients));
    return figures;
  } finally {
    if (server) await stopChild(server.child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function benchRedis(llm: LlmServer, workers: number, withChat: boolean): Promise<Column> {
  const name = `(${workers === 1 ? 'b' : 'c'}) PostgreSQL + Redis, API + ${workers} worker${workers === 1 ? '' : 's'}`;
  if (!(await redisReachable())) return { name, skipped: `Redis not reachable at ${REDIS_URL}` };
  const database = await createBenchPostgres(`bench_runs${workers}`);
  if (!database) return { name, skipped: 'PostgreSQL not reachable' };
  const prefix = `${QUEUE_PREFIX}-${workers}`;
  const env = { ...database.env, REDIS_URL, QUEUE_PREFIX: prefix };
  const started: ChildProcess[] = [];
  try {
    const server = await startApiServer({ ...env, RUN_MODE: 'api' });
    started.push(server.child);
    const workerChildren: ChildProcess[] = [];
    for (let i = 0; i < workers; i++) workerChildren.push(await startWorker(env));
    started.push(...workerChildren);
    const workflowId = await seed(server, llm);
    llm.reset();
    llm.fallbackReply = { type: 'text', text: 'done' };
    const idleStart = await idleStartLatency(server, workflowId);
    const before = await readDatabaseCounters(database.env);
    const runs: RunFigures = {
      ...(await loadRuns(server, workflowId, { api: server.child, workers: workerChildren })),
      idleStart,
    };
    runs.perRun = databaseWorkPerRun(before, await readDatabaseCounters(database.env), runs.polls);
    const chat = withChat ? await benchChat(server, llm) : undefined;
    return { name, runs, chat };
  } finally {
    await Promise.all(started.reverse().map(stopChild));
    await database.drop();
    await cleanRedis(prefix);
  }
}

const llm = await startOpenAiServer();
const columns: Column[] = [];
let clientFigures: ClientFigures[] = [];
try {
  if (setups.includes('embedded')) columns.push(await benchEmbedded(llm));
  if (setups.includes('clients')) clientFigures = await benchClients(llm);
  if (setups.includes('redis1')) columns.push(await benchRedis(llm, 1, true));
  if (setups.includes('redis2')) columns.push(await benchRedis(llm, 2, false));
} finally {
  for (const child of children) child.kill('SIGKILL');
  await llm.close();
}

const ms = (value: number | null | undefined) =>
  value == null
    ? '–'
    : value < 10
      ? `${value.toFixed(2)} ms`
      : `${Math.round(value).toLocaleString('en-US')} ms`;
const count = (value: number) => Math.round(value).toLocaleString('en-US');
const load = (values: number[]) => values.map((value) => value.toFixed(2)).join(', ');
console.log(
  `\nnode ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), load average at start ${load(loadAverageAtStart)}, at end ${load(os.loadavg())}; ${SECONDS} s measured after ${WARMUP_SECONDS} s of warm-up, ${POSTERS} posters, WORKER_CONCURRENCY ${CONCURRENCY}\n`,
);
for (const column of columns) {
  if (column.skipped) console.log(`${column.name}: skipped, ${column.skipped}`);
}
const shown = columns.filter((column) => !column.skipped);
type Row = [string, (column: Column) => string, string];
const rows: Row[] = [
  [
    'runs completed per second (finished_at in the window)',
    (c) => (c.runs ? `**${count(c.runs.runsPerSecond)}**` : '–'),
    '>= 500 with 2 workers (n8n: ~220 for one instance)',
  ],
  [
    `enqueue to start, a consumer waiting: p50 / p99 (${IDLE_RUNS} runs one at a time)`,
    (c) => (c.runs?.idleStart ? `${ms(c.runs.idleStart.p50)} / ${ms(c.runs.idleStart.p99)}` : '–'),
    'p50 < 5 ms',
  ],
  [
    'enqueue to start under the load p50 / p99 (`started_at - created_at`: mostly the wait behind the runs ahead)',
    (c) => (c.runs ? `${ms(c.runs.startP50)} / ${ms(c.runs.startP99)}` : '–'),
    '',
  ],
  [
    'end to end p50 / p99 (`finished_at - created_at`)',
    (c) => (c.runs ? `${ms(c.runs.endP50)} / ${ms(c.runs.endP99)}` : '–'),
    '',
  ],
  [
    'runs created in the window; failed; unfinished after the drain; POST errors',
    (c) =>
      c.runs
        ? `${count(c.runs.created)}; ${c.runs.failed}; ${c.runs.notFinished}; ${c.runs.postErrors}${c.runs.postErrorKinds ? ` (${c.runs.postErrorKinds})` : ''}`
        : '–',
    '0 failures',
  ],
  [
    'PostgreSQL per run: commits; rows inserted (+) / updated (~) by table',
    (c) => (c.runs?.perRun ? `${c.runs.perRun.commits.toFixed(1)}; ${c.runs.perRun.rows}` : '–'),
    '',
  ],
  [
    `CPU per run finished: ${CPU_ROLES.join(' / ')} (posters and loopback model) = sum`,
    (c) => {
      const cpu = c.runs?.cpuPerRun;
      if (!cpu) return '–';
      const sum = [...cpu.values()].reduce((a, b) => a + b, 0);
      return `${CPU_ROLES.map((role) => (cpu.get(role) ?? 0).toFixed(1)).join(' / ')} = ${sum.toFixed(1)} ms`;
    },
    '',
  ],
  ['unfinished runs kept near (Queued + Running)', (c) => (c.runs ? String(c.runs.inFlightCap) : '–'), ''],
  [
    `chat: added time to first \`delta\` p50 / p99 (${CHAT_REQUESTS} sequential)`,
    (c) => (c.chat ? `${ms(c.chat.addedP50)} / ${ms(c.chat.addedP99)}` : '–'),
    'p50 < 5 ms',
  ],
  [
    'chat: of which before the provider call arrives / after its first byte (p50)',
    (c) => (c.chat ? `${ms(c.chat.beforeProviderP50)} / ${ms(c.chat.afterFirstByteP50)}` : '–'),
    '',
  ],
  [
    `chat: the same with a provider taking ${SLOW_FIRST_BYTE_MS} ms to its first byte (${Math.ceil(CHAT_REQUESTS / 2)} sequential)`,
    (c) => (c.chat ? `${ms(c.chat.slowAddedP50)} / ${ms(c.chat.slowAddedP99)}` : '–'),
    'p50 < 5 ms',
  ],
  [
    'chat: client time to first `delta` p50; provider time to first byte p50; errors',
    (c) => (c.chat ? `${ms(c.chat.clientP50)}; ${ms(c.chat.providerP50)}; ${c.chat.chatErrors}` : '–'),
    '',
  ],
  [
    `chat: ${CHAT_STREAMS} concurrent streams (10 chunks, 200 ms apart): completed / errored, total time`,
    (c) =>
      c.chat
        ? `${c.chat.streamsCompleted} / ${c.chat.streamsErrored}${c.chat.streamErrorKinds ? ` (${c.chat.streamErrorKinds})` : ''}, ${c.chat.streamsSeconds.toFixed(2)} s`
        : '–',
    'no errors',
  ],
];
console.log(`| figure | ${shown.map((column) => column.name).join(' | ')} | target |`);
console.log(`|---|${shown.map(() => '---:').join('|')}|---|`);
for (const [label, cell, target] of rows) {
  console.log(`| ${label} | ${shown.map(cell).join(' | ')} | ${target} |`);
}
if (clientFigures.length > 0) {
  console.log(
    `\nEmbedded default (PGlite, no DB_QUEUE_* set), closed-loop clients each with a two-step run in flight, ${SECONDS} s each:\n`,
  );
  console.log(
    '| clients | runs completed per second | runs started | 503 answers | other refusals | runs Failed | not finished after the drain | target |',
  );
  console.log('|---:|---:|---:|---:|---|---:|---:|---|');
  for (const f of clientFigures) {
    console.log(
      `| ${f.clients} | ${count(f.runsPerSecond)} | ${count(f.started)} | ${f.unavailable} | ${f.refusedKinds || '–'} | ${f.failed}${f.failedKinds ? ` (${f.failedKinds})` : ''} | ${f.notFinished} | 0 503, 0 failed |`,
    );
  }
}
