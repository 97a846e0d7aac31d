import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const root = path.resolve(import.meta.dirname, '../..');

/** A child process running one of the repository's TypeScript entry points. */
export interface ScriptProcess {
  child: ChildProcess;
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stdout and stderr so far. */
  output(): string;
}

const running = new Set<ChildProcess>();

/** Runs `script` (a path from the repository root) on this Node, as npm scripts do. */
export function spawnScript(script: string, env: NodeJS.ProcessEnv): ScriptProcess {
  const child = spawn(process.execPath, [script], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, pid: child.pid as number, exited, output: () => output };
}

/** Kills (SIGKILL) every spawned process still running: for `afterEach`, so no test leaves one behind. */
export function killSpawned(): void {
  for (const child of running) child.kill('SIGKILL');
}

/** Polls `probe` until it returns something other than undefined or false. */
export async function until<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * The file `tests/fixtures/queue-worker.ts` processes record their executions in, standing
 * for the database (it survives a Redis restart), with readers of it.
 */
export function workerRecords() {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'queue-records-')), 'records.txt');
  fs.writeFileSync(file, '');
  const lines = (kind: 'started' | 'done') =>
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith(`${kind} `))
      .map((line) => line.split(' ').slice(1).join(':'));
  return {
    file,
    /** `<n>:<pid>` of every start, in order. */
    started: () => lines('started'),
    /** `<n>:<pid>` of every completion, in order. */
    doneBy: () => lines('done'),
    /** Completions per job number. */
    doneCounts: () => {
      const counts: Record<string, number> = {};
      for (const entry of lines('done')) {
        const n = entry.split(':')[0] as string;
        counts[n] = (counts[n] ?? 0) + 1;
      }
      return counts;
    },
    remove: () => fs.rmSync(path.dirname(file), { recursive: true, force: true }),
  };
}

/** Starts a queue worker process recording into `records`, and waits until it consumes. */
export async function startQueueWorker(
  env: NodeJS.ProcessEnv,
  records: { file: string },
): Promise<ScriptProcess> {
  const worker = spawnScript('tests/fixtures/queue-worker.ts', { ...env, RECORD_FILE: records.file });
  await until(() => worker.output().includes('ready\n'), 'the worker to consume');
  return worker;
}
