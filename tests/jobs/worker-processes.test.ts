/**
 * Worker processes on one queue, on the machine's Redis (REDIS_URL): real child processes
 * (`tests/fixtures/queue-worker.ts`, the product's BullMQ driver with a test job that
 * records each execution in a file that stands for the database), killed and stopped as an
 * operator or a crash would. Also `npm run worker` itself (`src/worker.ts`).
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBullmqQueue, QUEUE_NAME } from '../../src/jobs/bullmq-queue.ts';
import type { JobQueue } from '../../src/jobs/queue.ts';
import { createRedisConnection, type RedisConnection } from '../../src/lib/redis/redis-connection.ts';
import {
  killSpawned,
  spawnScript,
  startQueueWorker,
  until,
  workerRecords,
} from '../helpers/queue-workers.ts';
import { createTestDatabaseEnv, onPostgres } from '../helpers/test-app.ts';
import { captureLog } from '../helpers/test-log.ts';
import { dropRedisPrefix, redisUrl, testRedisClient, testRedisPrefix } from '../helpers/test-redis.ts';

// Whole processes on a loaded 2-core machine: generous limits, tight assertions.
vi.setConfig({ testTimeout: 120_000 });
const root = path.resolve(import.meta.dirname, '../..');

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  killSpawned();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The test's side of one queue: a producer, workers to start, and what they recorded. */
async function sharedQueue(lockMs: number) {
  const prefix = testRedisPrefix();
  const { log } = captureLog('warn');
  const redis: RedisConnection = createRedisConnection({ url: redisUrl as string, log });
  const producer: JobQueue = createBullmqQueue({ redis, log, prefix, lockMs, stopGraceMs: 1000 });
  await redis.start();
  expect(redis.isReady(), 'Redis at REDIS_URL must be reachable').toBe(true);
  await producer.start();
  const records = workerRecords();
  cleanups.push(async () => {
    await producer.stop();
    await redis.stop();
    await dropRedisPrefix(prefix);
    records.remove();
  });
  const startWorker = (env: NodeJS.ProcessEnv = {}) =>
    startQueueWorker(
      { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, QUEUE_LOCK_MS: String(lockMs), ...env },
      records,
    );
  return { prefix, producer, startWorker, ...records };
}

describe.runIf(redisUrl)('worker processes sharing one queue', () => {
  it('run N jobs between them, each exactly once', async () => {
    const q = await sharedQueue(5000);
    const [a, b] = await Promise.all([q.startWorker(), q.startWorker()]);
    const n = 60;
    for (let i = 0; i < n; i++) await q.producer.enqueue('test.record', { n: i, hold_ms: 20 });
    await until(() => q.doneBy().length >= n, `${n} jobs`);
    await sleep(500);
    const counts = q.doneCounts();
    expect(Object.keys(counts)).toHaveLength(n);
    expect(Object.values(counts).every((count) => count === 1)).toBe(true);
    const pids = new Set(q.doneBy().map((entry) => entry.split(':')[1]));
    expect(pids).toEqual(new Set([String(a?.pid), String(b?.pid)]));
  });

  it('re-deliver a job whose worker was killed mid-job (SIGKILL) to another worker, which completes it', async () => {
    // Lock 2 s: renewed every second; once the dead worker's lock expires, the next stalled
    // check (every 2 s) moves the job back to waiting, so it is re-delivered within ~4 s.
    const q = await sharedQueue(2000);
    const doomed = await q.startWorker();
    await q.producer.enqueue('test.record', { n: 1, hold_ms: 60_000 });
    await until(() => q.started().includes(`1:${doomed.pid}`), 'the job to start');
    doomed.child.kill('SIGKILL');
    expect((await doomed.exited).signal).toBe('SIGKILL');

    const survivor = await q.startWorker();
    const readyAt = Date.now();
    await until(() => q.doneBy().length > 0, 'the job to complete elsewhere', 30_000);
    // Well before the 60 s the first delivery would have held it: the stalled check, not a timeout.
    expect(Date.now() - readyAt).toBeLessThan(15_000);
    expect(q.doneBy()).toEqual([`1:${survivor.pid}`]);
    expect(q.started()).toEqual([`1:${doomed.pid}`, `1:${survivor.pid}`]);
    expect(q.doneCounts()).toEqual({ 1: 1 });
  });

  it('hand a running job back when a worker stops (SIGTERM) after its grace period', async () => {
    // A 60 s lock: only a hand-back (not the stalled check) gets the job to the other worker in time.
    const q = await sharedQueue(60_000);
    const leaving = await q.startWorker({ WORKER_STOP_GRACE_MS: '300' });
    await q.producer.enqueue('test.record', { n: 7, hold_ms: 60_000 });
    await until(() => q.started().includes(`7:${leaving.pid}`), 'the job to start');
    const staying = await q.startWorker();
    leaving.child.kill('SIGTERM');
    expect(await leaving.exited).toEqual({ code: 0, signal: null });
    expect(leaving.output()).toContain('job handed back to the queue');
    await until(() => q.doneBy().length > 0, 'the other worker to finish it', 15_000);
    expect(q.doneBy()).toEqual([`7:${staying.pid}`]);
  });
});

describe('npm run worker (src/worker.ts)', () => {
  it('refuses to start without REDIS_URL and PostgreSQL, saying why', async () => {
    const worker = spawnScript('src/worker.ts', {
      NODE_ENV: 'test',
      DATA_DIR: path.join(root, 'data-never-made'),
    });
    expect((await worker.exited).code).toBe(1);
    expect(worker.output()).toContain('RUN_MODE=worker needs REDIS_URL');
    expect(worker.output()).toContain('RUN_MODE=worker needs PostgreSQL');
  });

  it.runIf(redisUrl && onPostgres)(
    'consumes from the queue on PostgreSQL and Redis and stops gracefully on SIGTERM',
    async () => {
      const dbEnv = await createTestDatabaseEnv();
      cleanups.push(dbEnv.drop);
      const worker = spawnScript('src/worker.ts', { ...dbEnv.env, RUN_MODE: 'all' });
      await until(() => /"msg":"worker started: consuming jobs"/.test(worker.output()), 'the worker');
      const client = testRedisClient();
      const queue = new Queue(QUEUE_NAME, { connection: client, prefix: dbEnv.env.QUEUE_PREFIX });
      try {
        await until(async () => (await queue.getWorkers()).length === 1, 'its BullMQ worker');
      } finally {
        await queue.close();
        client.disconnect();
      }
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      expect(worker.output()).toContain('"msg":"worker stopped"');
    },
  );
});
