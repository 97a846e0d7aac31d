/**
 * `npm run bench:startup`: what starting the service costs, every figure taken in fresh child
 * processes, printed as markdown tables (bench/RESULTS.md keeps them).
 *
 * 1. Imports: the time, CPU and resident memory of loading what `src/main.ts` loads before it
 *    opens the database (src/services.ts, then src/app.ts), in a process that prepares module
 *    loading as main.ts does. The first run has an empty V8 compile cache (the first start after
 *    an install); the others reuse it, as every later start does. Then which packages that
 *    load brings in (modules per package, counted by a module hook), and each heavy package
 *    imported alone in a fresh process.
 * 2. Start-up: `npm start`'s command (`node <flags> src/main.ts`) spawned on the embedded
 *    database, timed from the spawn to the first 200 of `GET /api/health`: cold (an empty
 *    DATA_DIR: the cluster unpacked from the install-time template and migrated) and warm (the
 *    same DATA_DIR again). Resident memory (VmRSS from /proc, Linux) after BENCH_IDLE_MS (5 s)
 *    idle after each, then after a few requests (lists, writes, health, metrics, the OpenAPI
 *    document) and the same idle time again. Before that, `src/main.ts`'s steps one by one
 *    (bench/startup-phases.ts: wall, CPU, RSS, V8 heap and PGlite's WASM memory after each),
 *    and each module entrypoint's own import time.
 * 3. `npm run dev-token`'s command, with the service stopped and while it runs, and `--help`.
 *
 * BENCH_RUNS (default 5) sets the runs per import figure and per start figure (medians shown,
 * with the range). A busy machine slows every figure: compare figures taken together.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const root = path.resolve(import.meta.dirname, '..');
const RUNS = Math.max(2, Number(process.env.BENCH_RUNS ?? 5));
/** Seconds of idleness before resident memory is read: start-up's garbage collected, V8 settled. */
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 5000);
const startWords = (
  JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }
).scripts.start
  .trim()
  .split(/\s+/);
/** `npm start`'s environment assignments (`NAME=value` before `node`), given to every child here. */
const startEnv = Object.fromEntries(
  startWords
    .slice(0, startWords.indexOf('node'))
    .map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
);
const nodeFlags = startWords.slice(startWords.indexOf('node') + 1).filter((arg) => arg.startsWith('-'));
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-startup-'));
const compileCache = path.join(scratch, 'compile-cache');
const fileUrl = (file: string) => new URL(`file://${path.join(root, file)}`).href;

/** Packages the import table shows alone: the heavy ones, and the ones start-up should not need. */
const PACKAGES = [
  'drizzle-orm',
  'drizzle-orm/pg-core',
  'typebox',
  'fastify',
  'ai',
  '@ai-sdk/anthropic',
  '@ai-sdk/openai-compatible',
  'bullmq',
  'ioredis',
  'pg',
  '@electric-sql/pglite',
  'prom-client',
  'jose',
  '@fastify/swagger-ui',
  'htmlparser2',
  'marked',
  'unpdf',
  'web-tree-sitter',
  '@huggingface/transformers',
];

interface Sample {
  ms: number;
  cpuMs: number;
  rssMb: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
const range = (values: number[], digits = 0) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;

/**
 * What a child process runs before the timed imports: the same preparation src/main.ts makes
 * before it loads the service (the compile cache, module hooks when main.ts installs them).
 */
function preamble(): string {
  const hooks = path.join(root, 'src/lib/module-loading.ts');
  return fs.existsSync(hooks)
    ? `const { prepareModuleLoading } = await import(${JSON.stringify(fileUrl('src/lib/module-loading.ts'))}); prepareModuleLoading();`
    : `const { enableCompileCache } = await import('node:module'); enableCompileCache();`;
}

/** Imports `specifiers` in a fresh process; returns wall time, CPU and RSS after. */
function importInChild<Extra extends object = object>(specifiers: string[], extra = ''): Sample & Extra {
  const code = `${preamble()}
${extra}
const t0 = performance.now();
const c0 = process.cpuUsage();
for (const specifier of ${JSON.stringify(specifiers)}) await import(specifier);
const cpu = process.cpuUsage(c0);
const result = { ms: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000, rssMb: process.memoryUsage().rss / 2 ** 20 };
${extra ? 'Object.assign(result, globalThis.__benchExtra?.() ?? {});' : ''}
process.stdout.write(JSON.stringify(result));`;
  const output = execFileSync(process.execPath, [...nodeFlags, '--input-type=module', '-e', code], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_COMPILE_CACHE: compileCache, ...startEnv },
    encoding: 'utf8',
  });
  return JSON.parse(output) as Sample & Extra;
}

/** A hook in the child that counts the modules loaded per package (or per src/ folder). */
const COUNT_MODULES = `
const { registerHooks } = await import('node:module');
const perPackage = new Map();
registerHooks({
  load(url, context, next) {
    const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(url);
    const key = match ? match[1] : url.startsWith('node:') ? '(node builtins)' : url.includes('/src/') ? 'src/ (the service)' : '(other)';
    perPackage.set(key, (perPackage.get(key) ?? 0) + 1);
    return next(url, context);
  },
});
globalThis.__benchExtra = () => ({ perPackage: Object.fromEntries(perPackage) });`;

function importTables(): string[] {
  const lines: string[] = [];
  const entry = [fileUrl('src/services.ts'), fileUrl('src/app.ts')];
  const first = importInChild(entry);
  const warm: Sample[] = [];
  for (let i = 1; i < RUNS; i++) warm.push(importInChild(entry));
  lines.push(
    '### Importing what the service loads before it opens the database (src/services.ts + src/app.ts)',
    '',
    '| compile cache | runs | wall ms | CPU ms | RSS after, MB |',
    '|---|---:|---:|---:|---:|',
    `| empty (first start after install) | 1 | ${first.ms.toFixed(0)} | ${first.cpuMs.toFixed(0)} | ${first.rssMb.toFixed(0)} |`,
    `| filled (every later start) | ${warm.length} | ${range(warm.map((s) => s.ms))} | ${range(warm.map((s) => s.cpuMs))} | ${range(warm.map((s) => s.rssMb))} |`,
    '',
  );

  const counted = importInChild<{ perPackage: Record<string, number> }>(entry, COUNT_MODULES);
  const total = Object.values(counted.perPackage).reduce((sum, n) => sum + n, 0);
  lines.push(
    `### Modules loaded by that import: ${total}, by package (the 25 largest)`,
    '',
    '| package | modules |',
    '|---|---:|',
    ...Object.entries(counted.perPackage)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25)
      .map(([name, count]) => `| ${name} | ${count} |`),
    '',
  );
  const loaded = new Set(Object.keys(counted.perPackage));

  lines.push(
    '### Each package imported alone (fresh process, compile cache filled; the median of runs)',
    '',
    '| package | loaded at start | wall ms | CPU ms | RSS after, MB |',
    '|---|---|---:|---:|---:|',
  );
  const baseline = importInChild([]);
  for (const name of PACKAGES) {
    const samples: Sample[] = [];
    try {
      for (let i = 0; i < Math.min(RUNS, 3); i++) samples.push(importInChild([name]));
    } catch {
      lines.push(`| ${name} | — | not installed | | |`);
      continue;
    }
    const packageName = name.startsWith('@')
      ? name.split('/').slice(0, 2).join('/')
      : (name.split('/')[0] as string);
    lines.push(
      `| ${name} | ${loaded.has(packageName) ? 'yes' : 'no'} | ${median(samples.map((s) => s.ms)).toFixed(0)} | ${median(samples.map((s) => s.cpuMs)).toFixed(0)} | ${median(samples.map((s) => s.rssMb)).toFixed(0)} |`,
    );
  }
  lines.push(`| (nothing: the process alone) | | | | ${baseline.rssMb.toFixed(0)} |`, '');
  return lines;
}

/**
 * Each module entrypoint (`src/modules/<name>/<name>.module.ts`) imported in turn, in one fresh process
 * that first loaded what every module shares (config, db, http, lib, typebox, drizzle): the wall
 * and CPU time each adds, that is what it alone brings in. The median of runs, largest first.
 */
function moduleImportTable(): string[] {
  const modules = fs
    .readdirSync(path.join(root, 'src/modules'))
    .flatMap((folder) =>
      fs
        .readdirSync(path.join(root, 'src/modules', folder))
        .filter((file) => file.endsWith('.module.ts'))
        .map((file) => `src/modules/${folder}/${file}`),
    )
    .sort();
  const shared = [
    'src/config.ts',
    'src/db/client.ts',
    'src/http/schemas.ts',
    'src/errors.ts',
    'src/module.ts',
  ];
  const code = `${preamble()}
for (const file of ${JSON.stringify(shared.map(fileUrl))}) await import(file);
const out = {};
for (const file of ${JSON.stringify(modules)}) {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await import(${JSON.stringify(`file://${root}/`)} + file);
  const cpu = process.cpuUsage(c0);
  out[file] = { ms: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 };
}
process.stdout.write(JSON.stringify(out));`;
  const runs: Record<string, { ms: number; cpuMs: number }>[] = [];
  for (let i = 0; i < Math.min(RUNS, 3); i++) {
    runs.push(
      JSON.parse(
        execFileSync(process.execPath, [...nodeFlags, '--input-type=module', '-e', code], {
          cwd: root,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            NODE_COMPILE_CACHE: compileCache,
            ...startEnv,
          },
          encoding: 'utf8',
        }),
      ),
    );
  }
  const rows = modules
    .map((file) => ({
      file,
      ms: median(runs.map((run) => run[file]?.ms ?? 0)),
      cpuMs: median(runs.map((run) => run[file]?.cpuMs ?? 0)),
    }))
    .sort((a, b) => b.cpuMs - a.cpuMs);
  return [
    `### Each module entrypoint imported in turn, after what they share (config, db, http, errors); ${runs.length} runs`,
    '',
    '| module | wall ms | CPU ms |',
    '|---|---:|---:|',
    ...rows.map((row) => `| ${row.file} | ${row.ms.toFixed(0)} | ${row.cpuMs.toFixed(0)} |`),
    `| (all ${rows.length}) | ${rows.reduce((sum, row) => sum + row.ms, 0).toFixed(0)} | ${rows.reduce((sum, row) => sum + row.cpuMs, 0).toFixed(0)} |`,
    '',
  ];
}

interface PhaseSample {
  phase: string;
  ms: number;
  cpuMs: number;
  rssMb: number;
  heapMb: number;
  externalMb: number;
}

/**
 * `src/main.ts`'s steps one by one (bench/startup-phases.ts) in a fresh process with `npm
 * start`'s flags: cold (an empty DATA_DIR) then warm (the same one); medians of runs.
 */
function phaseTables(): string[] {
  const runPhases = (dataDir: string) =>
    JSON.parse(
      execFileSync(process.execPath, [...nodeFlags, 'bench/startup-phases.ts'], {
        cwd: root,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NODE_COMPILE_CACHE: compileCache,
          ...startEnv,
          DATA_DIR: dataDir,
          LOG_LEVEL: 'warn',
          IDLE_MS: String(IDLE_MS),
        },
        encoding: 'utf8',
      }),
    ) as PhaseSample[];
  const cold: PhaseSample[][] = [];
  const warm: PhaseSample[][] = [];
  for (let i = 0; i < Math.min(RUNS, 3); i++) {
    const dataDir = path.join(scratch, `phases-${i}`);
    cold.push(runPhases(dataDir));
    warm.push(runPhases(dataDir));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  const table = (title: string, runs: PhaseSample[][]) => [
    `#### ${title}`,
    '',
    '| phase | wall ms | CPU ms | RSS after, MB | V8 heap used, MB | external (PGlite WASM memory), MB |',
    '|---|---:|---:|---:|---:|---:|',
    ...(runs[0] ?? []).map((first, index) => {
      const of = (key: keyof Omit<PhaseSample, 'phase'>) =>
        median(runs.map((run) => run[index]?.[key] ?? 0)).toFixed(0);
      return `| ${first.phase} | ${of('ms')} | ${of('cpuMs')} | ${of('rssMb')} | ${of('heapMb')} | ${of('externalMb')} |`;
    }),
    `| **to the first 200** | ${median(runs.map((run) => run.slice(0, -1).reduce((sum, p) => sum + p.ms, 0))).toFixed(0)} | ${median(runs.map((run) => run.slice(0, -1).reduce((sum, p) => sum + p.cpuMs, 0))).toFixed(0)} | | | |`,
    '',
  ];
  return [
    `### \`src/main.ts\`'s steps one by one (bench/startup-phases.ts), ${cold.length} runs, idle ${IDLE_MS / 1000} s at the end`,
    '',
    ...table('Cold (empty DATA_DIR)', cold),
    ...table('Warm (the same DATA_DIR again)', warm),
  ];
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || !address) throw new Error('no free port');
  return address.port;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces). */
const statFields = (pid: number | 'self') => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
};

/** CPU time a process has used (user + system), in ms. */
const cpuMsOf = (pid: number) => {
  const fields = statFields(pid);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
};

/** CPU time (user + system, ms) of this process's children that have ended and been waited for. */
const childrenCpuMs = () => {
  const fields = statFields('self');
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
};

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

interface Started {
  child: ChildProcess;
  url: string;
  ms: number;
  /** The service's CPU time (user + system) until that first 200: steadier than `ms` on a busy machine. */
  cpuMs: number;
  stderr: () => string;
}

/** Spawns the service as `npm start` does and waits for its first 200 on /api/health. */
async function startService(dataDir: string, env: NodeJS.ProcessEnv = {}): Promise<Started> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, 'src/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_COMPILE_CACHE: compileCache,
      ...startEnv,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  for (;;) {
    if (exited) throw new Error(`the service exited before answering: ${stderr}`);
    try {
      const response = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(1000) });
      if (response.status === 200) {
        const ms = performance.now() - t0;
        return { child, url, ms, cpuMs: cpuMsOf(child.pid as number), stderr: () => stderr };
      }
    } catch {
      // not listening yet
    }
    await sleep(10);
  }
}

async function stopService(started: Started): Promise<void> {
  if (started.child.exitCode !== null) return;
  const exited = new Promise((resolve) => started.child.once('exit', resolve));
  started.child.kill('SIGTERM');
  await exited;
}

/** A few requests of a first session: lists, writes, health, metrics, the OpenAPI document. */
async function someRequests(url: string, dataDir: string): Promise<void> {
  const { token, workspace_id } = JSON.parse(
    execFileSync(process.execPath, ['src/cli/dev-token.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATA_DIR: dataDir,
        PORT: new URL(url).port,
        NODE_COMPILE_CACHE: compileCache,
      },
      encoding: 'utf8',
    }),
  ) as { token: string; workspace_id: string };
  const headers = {
    authorization: `Bearer ${token}`,
    'x-workspace-id': workspace_id,
    'content-type': 'application/json',
  };
  const call = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${url}${route}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    await response.arrayBuffer();
    if (response.status >= 400) throw new Error(`${method} ${route}: ${response.status}`);
  };
  for (let i = 0; i < 5; i++) await call('POST', '/api/agents', { name: `Startup ${i}-${Date.now()}` });
  await call('GET', '/api/agents?limit=50');
  await call('GET', '/api/workflows');
  await call('GET', '/api/runs');
  await call('GET', '/api/credentials');
  await call('GET', '/api/system/health');
  await call('GET', '/api/system/metrics');
  await call('GET', '/docs/json');
}

async function startTables(): Promise<string[]> {
  const cold: number[] = [];
  const warm: number[] = [];
  const coldCpu: number[] = [];
  const warmCpu: number[] = [];
  const coldIdle: number[] = [];
  const idle: number[] = [];
  const used: number[] = [];
  // The very first start after an install has no compile cache: taken once, before the others.
  fs.rmSync(compileCache, { recursive: true, force: true });
  const firstDir = path.join(scratch, 'data-first');
  const first = await startService(firstDir);
  await stopService(first);
  for (let i = 0; i < RUNS; i++) {
    const dataDir = path.join(scratch, `data-${i}`);
    const coldStart = await startService(dataDir);
    cold.push(coldStart.ms);
    coldCpu.push(coldStart.cpuMs);
    await sleep(IDLE_MS);
    coldIdle.push(rssMb(coldStart.child.pid as number));
    await stopService(coldStart);
    const warmStart = await startService(dataDir);
    warm.push(warmStart.ms);
    warmCpu.push(warmStart.cpuMs);
    await sleep(IDLE_MS);
    idle.push(rssMb(warmStart.child.pid as number));
    await someRequests(warmStart.url, dataDir);
    await sleep(IDLE_MS);
    used.push(rssMb(warmStart.child.pid as number));
    await stopService(warmStart);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return [
    `### Start-up on the embedded database (\`${Object.entries(startEnv)
      .map(([name, value]) => `${name}=${value} `)
      .join(
        '',
      )}node ${nodeFlags.join(' ')} src/main.ts\`), spawn to first 200 of GET /api/health; ${RUNS} runs`,
    '',
    '| start | wall ms | CPU ms | wall target (quiet machine) |',
    '|---|---:|---:|---|',
    `| first start after install (cold, empty compile cache) | ${first.ms.toFixed(0)} | ${first.cpuMs.toFixed(0)} | |`,
    `| cold (empty DATA_DIR) | ${range(cold)} | ${range(coldCpu)} | < 3000 |`,
    `| warm (existing DATA_DIR) | ${range(warm)} | ${range(warmCpu)} | < 1500 |`,
    '',
    '| resident memory (VmRSS) | MB | target |',
    '|---|---:|---|',
    `| idle, ${IDLE_MS / 1000} s after a cold start | ${range(coldIdle)} | |`,
    `| idle, ${IDLE_MS / 1000} s after a warm start | ${range(idle)} | < 200 |`,
    `| idle, ${IDLE_MS / 1000} s after a few requests | ${range(used)} | |`,
    '',
  ];
}

/**
 * Runs `src/cli/dev-token.ts` with `args`; returns its wall and CPU time and output. PORT is
 * one nothing listens on, so a service another process runs on 8080 is not taken for ours.
 */
function devToken(
  dataDir: string,
  port: number,
  args: string[] = [],
): { ms: number; cpuMs: number; stdout: string } {
  const t0 = performance.now();
  const cpu0 = childrenCpuMs();
  const stdout = execFileSync(process.execPath, ['src/cli/dev-token.ts', ...args], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: dataDir,
      PORT: String(port),
      NODE_COMPILE_CACHE: compileCache,
    },
    encoding: 'utf8',
  });
  return { ms: performance.now() - t0, cpuMs: childrenCpuMs() - cpu0, stdout };
}

async function devTokenTable(): Promise<string[]> {
  const dataDir = path.join(scratch, 'data-dev-token');
  const port = await freePort();
  const fresh = devToken(dataDir, port);
  const stopped: { ms: number; cpuMs: number }[] = [];
  for (let i = 0; i < RUNS; i++) stopped.push(devToken(dataDir, port));
  const started = await startService(dataDir);
  const running: { ms: number; cpuMs: number }[] = [];
  try {
    for (let i = 0; i < RUNS; i++) running.push(devToken(dataDir, port));
  } finally {
    await stopService(started);
  }
  let help = '| `--help` | fails | |';
  try {
    const answer = devToken(dataDir, port, ['--help']);
    help = `| \`--help\` | ${answer.ms.toFixed(0)} | ${answer.cpuMs.toFixed(0)} |`;
  } catch {
    // the command has no --help
  }
  return [
    `### \`npm run dev-token\`'s command (\`node src/cli/dev-token.ts\`), ${RUNS} runs`,
    '',
    '| case | wall ms | CPU ms |',
    '|---|---:|---:|',
    `| an empty DATA_DIR (first use) | ${fresh.ms.toFixed(0)} | ${fresh.cpuMs.toFixed(0)} |`,
    `| service stopped | ${range(stopped.map((s) => s.ms))} | ${range(stopped.map((s) => s.cpuMs))} |`,
    `| service running on the same DATA_DIR | ${range(running.map((s) => s.ms))} | ${range(running.map((s) => s.cpuMs))} |`,
    help,
    '',
  ];
}

try {
  const load = os.loadavg().map((n) => n.toFixed(2));
  const lines = [
    `Node ${process.version}, ${os.cpus().length} cores, load average ${load.join(' ')} at the start, ${new Date().toISOString()}.`,
    '',
    ...importTables(),
    ...moduleImportTable(),
    ...phaseTables(),
    ...(await startTables()),
    ...(await devTokenTable()),
    `Load average at the end: ${os
      .loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}.`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
