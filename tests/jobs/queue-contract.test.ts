/**
 * The job queue's contract, for both drivers: the in-process queue always, BullMQ on the
 * machine's Redis when REDIS_URL is set (and then it must be reachable: these tests fail,
 * never skip, without it). Each BullMQ test runs under a Redis key prefix of its own.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from 'typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { createBullmqQueue } from '../../src/jobs/bullmq-queue.ts';
import {
  bindJob,
  defineJob,
  JobStoppedError,
  JobTimeoutError,
  type RegisteredJob,
} from '../../src/jobs/job.ts';
import { createLocalQueue } from '../../src/jobs/local-queue.ts';
import { type JobQueue, QueueUnavailableError } from '../../src/jobs/queue.ts';
import { createRedisConnection, type RedisConnection } from '../../src/lib/redis/redis-connection.ts';
import { captureLog } from '../helpers/test-log.ts';
import { dropRedisPrefix, redisUrl, testRedisClient, testRedisPrefix } from '../helpers/test-redis.ts';

interface Harness {
  queue: JobQueue;
  lines: Record<string, unknown>[];
  /** Another queue on the same jobs (BullMQ: the same prefix, as a second process would be). */
  sibling?: () => Promise<JobQueue>;
}

interface HarnessOptions {
  stopGraceMs?: number;
  lockMs?: number;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function localHarness(options: HarnessOptions = {}): Promise<Harness> {
  const { log, lines } = captureLog();
  const queue = createLocalQueue({ log, stopGraceMs: options.stopGraceMs ?? 5000 });
  await queue.start();
  cleanups.push(() => queue.stop());
  return { queue, lines };
}

async function bullmqHarness(options: HarnessOptions = {}): Promise<Harness> {
  const { log, lines } = captureLog();
  const prefix = testRedisPrefix();
  const open = async () => {
    const redis = createRedisConnection({ url: redisUrl as string, log });
    const queue = createBullmqQueue({
      redis,
      log,
      prefix,
      lockMs: options.lockMs ?? 5000,
      stopGraceMs: options.stopGraceMs ?? 5000,
    });
    await redis.start();
    // Set, but unreachable, is a failure of the test run, not a reason to skip.
    expect(redis.isReady(), `Redis at REDIS_URL must be reachable`).toBe(true);
    await queue.start();
    cleanups.push(async () => {
      await queue.stop();
      await redis.stop();
    });
    return queue;
  };
  const queue = await open();
  cleanups.push(() => dropRedisPrefix(prefix));
  return { queue, lines, sibling: open };
}

const drivers: [string, (options?: HarnessOptions) => Promise<Harness>][] = [
  ['in-process', localHarness],
  ...(redisUrl ? [['BullMQ', bullmqHarness] as [string, typeof bullmqHarness]] : []),
];

const until = (probe: () => boolean, what: string, ms = 15_000): Promise<void> =>
  expect.poll(probe, { timeout: ms, interval: 10, message: `timed out waiting for ${what}` }).toBe(true);

/** A job that records every call; `behave` decides what each call does. */
function recordingJob(
  options: { name?: string; attempts?: number; backoffMs?: number; timeoutMs?: number } = {},
  behave: (call: number, signal: AbortSignal) => Promise<void> = async () => {},
) {
  const calls: { payload: unknown; at: number; signal: AbortSignal }[] = [];
  const definition = defineJob({
    name: options.name ?? 'test.record',
    payload: Type.Object(
      { n: Type.Integer(), note: Type.Optional(Type.String()) },
      { additionalProperties: false },
    ),
    attempts: options.attempts,
    backoffMs: options.backoffMs,
    timeoutMs: options.timeoutMs,
    async handle(deps: { calls: typeof calls }, payload, signal) {
      deps.calls.push({ payload, at: Date.now(), signal });
      await behave(deps.calls.length, signal);
    },
  });
  return { calls, job: bindJob(definition, { calls }) };
}

function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

const waitForAbort = (signal: AbortSignal) =>
  new Promise<void>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

describe.each(drivers)('the %s queue', (_driver, harness) => {
  it('runs an enqueued job once, with its payload as JSON carries it', async () => {
    const { queue } = await harness();
    const { calls, job } = recordingJob();
    await queue.consume([job], { concurrency: 2 });
    const payload = { n: 1, note: 'hello' };
    await queue.enqueue('test.record', payload);
    payload.note = 'changed after enqueue';
    await until(() => calls.length === 1, 'the job');
    await sleep(300);
    expect(calls.map((c) => c.payload)).toEqual([{ n: 1, note: 'hello' }]);
  });

  it('makes one job of one jobId while it waits or runs, and takes the id again once it finished', async () => {
    const { queue } = await harness();
    const release = gate();
    const { calls, job } = recordingJob({}, async (call) => {
      if (call === 1) await release.opened;
    });
    await queue.consume([job], { concurrency: 4 });
    await queue.enqueue('test.record', { n: 1 }, { jobId: 'same', delayMs: 300 });
    await queue.enqueue('test.record', { n: 2 }, { jobId: 'same', delayMs: 300 });
    await until(() => calls.length === 1, 'the first job to start');
    await queue.enqueue('test.record', { n: 3 }, { jobId: 'same' });
    await sleep(300);
    expect(calls).toHaveLength(1);
    release.open();
    await sleep(300);
    expect(calls.map((c) => c.payload)).toEqual([{ n: 1 }]);
    await queue.enqueue('test.record', { n: 4 }, { jobId: 'same' });
    await until(() => calls.length === 2, 'the same id to be taken again');
    expect(calls[1]?.payload).toEqual({ n: 4 });
  });

  it('retries a failing job with exponential backoff and jitter, up to its attempts', async () => {
    const { queue, lines } = await harness();
    const { calls, job } = recordingJob({ attempts: 3, backoffMs: 200 }, async () => {
      throw new Error('always fails');
    });
    const flaky = recordingJob({ name: 'test.flaky', attempts: 3, backoffMs: 50 }, async (call) => {
      if (call === 1) throw new Error('fails once');
    });
    await queue.consume([job, flaky.job], { concurrency: 2 });
    await queue.enqueue('test.record', { n: 1 });
    await queue.enqueue('test.flaky', { n: 2 });
    await until(() => calls.length === 3, 'three attempts');
    await until(() => flaky.calls.length === 2, 'the flaky job to succeed on its second attempt');
    const [first, second, third] = calls.map((c) => c.at) as [number, number, number];
    // Retry n waits 2^(n-1) x 200 ms, less up to half at random.
    expect(second - first).toBeGreaterThanOrEqual(95);
    expect(third - second).toBeGreaterThanOrEqual(195);
    await sleep(1000);
    expect(calls).toHaveLength(3);
    expect(flaky.calls).toHaveLength(2);
    await until(() => lines.some((l) => l.msg === 'job failed for good'), 'the final failure to be logged');
    expect(lines.filter((l) => l.msg === 'job failed; retrying' && l.job === 'test.record')).toHaveLength(2);
  });

  it('fails a job whose payload does not fit its schema, or that has no handler, without retry', async () => {
    const { queue, lines } = await harness();
    const { calls, job } = recordingJob({ attempts: 5, backoffMs: 10 });
    await queue.consume([job], { concurrency: 2 });
    await queue.enqueue('test.record', { n: 'one', extra: true });
    await queue.enqueue('test.unknown', { n: 1 });
    await until(
      () => lines.filter((l) => /fails without retry/.test(String(l.msg))).length === 2,
      'both failures',
    );
    await sleep(300);
    expect(calls).toHaveLength(0);
    const bad = lines.find((l) => String(l.msg).includes('does not fit'));
    expect(bad?.problems).toEqual(expect.arrayContaining(['/n: must be integer']));
    expect(lines.some((l) => l.job === 'test.unknown' && String(l.msg).startsWith('no handler'))).toBe(true);
  });

  it('aborts the signal of an attempt that runs out of time, and retries it', async () => {
    const { queue } = await harness();
    const reasons: unknown[] = [];
    const { calls, job } = recordingJob(
      { attempts: 2, backoffMs: 10, timeoutMs: 200 },
      async (_call, signal) => {
        await waitForAbort(signal).catch((reason) => {
          reasons.push(reason);
          throw reason;
        });
      },
    );
    await queue.consume([job], { concurrency: 1 });
    const started = Date.now();
    await queue.enqueue('test.record', { n: 1 });
    await until(() => reasons.length === 2, 'both attempts to time out');
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(reasons.every((reason) => reason instanceof JobTimeoutError)).toBe(true);
    expect(calls).toHaveLength(2);
  });

  it('runs no more jobs at once than its concurrency, and delays a job by delayMs', async () => {
    const { queue } = await harness();
    let running = 0;
    let most = 0;
    const { calls, job } = recordingJob({}, async () => {
      running += 1;
      most = Math.max(most, running);
      await sleep(100);
      running -= 1;
    });
    await queue.consume([job], { concurrency: 2 });
    const enqueuedAt = Date.now();
    await queue.enqueue('test.record', { n: 0 }, { delayMs: 700 });
    for (let n = 1; n <= 6; n++) await queue.enqueue('test.record', { n });
    await until(() => calls.length === 7, 'every job');
    expect(most).toBe(2);
    const delayed = calls.find((c) => (c.payload as { n: number }).n === 0);
    expect((delayed?.at ?? 0) - enqueuedAt).toBeGreaterThanOrEqual(690);
  });

  it('on stop, lets running jobs finish within the grace period', async () => {
    const { queue } = await harness({ stopGraceMs: 3000 });
    let finished = false;
    const { calls, job } = recordingJob({}, async () => {
      await sleep(300);
      finished = true;
    });
    await queue.consume([job], { concurrency: 1 });
    await queue.enqueue('test.record', { n: 1 });
    await until(() => calls.length === 1, 'the job to start');
    await queue.stop();
    expect(finished).toBe(true);
    expect(calls[0]?.signal.aborted).toBe(false);
  });

  it('on stop, aborts running jobs after the grace period and hands them back', async () => {
    const { queue, sibling } = await harness({ stopGraceMs: 300, lockMs: 30_000 });
    const { calls, job } = recordingJob({ attempts: 1 }, async (call, signal) => {
      if (call === 1) await waitForAbort(signal);
    });
    await queue.consume([job], { concurrency: 1 });
    await queue.enqueue('test.record', { n: 1 });
    await until(() => calls.length === 1, 'the job to start');
    const stopping = Date.now();
    await queue.stop();
    const took = Date.now() - stopping;
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(3000);
    expect(calls[0]?.signal.reason).toBeInstanceOf(JobStoppedError);
    await expect(queue.enqueue('test.record', { n: 2 })).rejects.toBeInstanceOf(QueueUnavailableError);
    if (sibling) {
      // Handed back, not left to the stalled check: another worker runs it well within the 30 s lock.
      const other = await sibling();
      await other.consume([job], { concurrency: 1 });
      await until(() => calls.length === 2, 'another worker to take the job handed back', 5000);
      expect(calls[1]?.payload).toEqual({ n: 1 });
    }
  });

  it('reports its health', async () => {
    const { queue } = await harness();
    expect(await queue.health()).toMatchObject({ name: 'Job queue', status: 'up' });
  });
});

describe('the BullMQ queue without Redis', () => {
  it('starts, reports down and fails enqueues fast, without crashing', async () => {
    const { log, lines } = captureLog();
    // Nothing listens on port 1: every connection attempt is refused.
    const redis: RedisConnection = createRedisConnection({
      url: 'redis://:secret-password@127.0.0.1:1',
      log,
      connectTimeoutMs: 300,
    });
    const queue = createBullmqQueue({
      redis,
      log,
      prefix: testRedisPrefix(),
      lockMs: 5000,
      stopGraceMs: 100,
    });
    await redis.start();
    await queue.start();
    const { calls, job } = recordingJob();
    await queue.consume([job] as RegisteredJob[], { concurrency: 1 });
    const started = performance.now();
    const error = await queue.enqueue('test.record', { n: 1 }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(100);
    expect(error).toBeInstanceOf(QueueUnavailableError);
    expect((error as Error).message).toBe('the job queue is unavailable: Redis is not connected');
    expect(await redis.health()).toMatchObject({ name: 'Redis', status: 'down' });
    expect(await queue.health()).toMatchObject({ status: 'down' });
    await sleep(500);
    await queue.stop();
    await redis.stop();
    expect(calls).toHaveLength(0);
    expect(lines.some((l) => l.msg === 'Redis connection lost; reconnecting')).toBe(true);
    expect(JSON.stringify(lines)).not.toContain('secret-password');
  });
});

describe.runIf(redisUrl)('the BullMQ queue when Redis forgets it', () => {
  it('tells every process to re-enqueue when the queue marker is gone after a reconnect', async () => {
    const { log, lines } = captureLog();
    const prefix = testRedisPrefix();
    cleanups.push(() => dropRedisPrefix(prefix));
    const open = async () => {
      const redis = createRedisConnection({ url: redisUrl as string, log });
      const queue = createBullmqQueue({ redis, log, prefix, lockMs: 5000, stopGraceMs: 100 });
      await redis.start();
      await queue.start();
      cleanups.push(async () => {
        await queue.stop();
        await redis.stop();
      });
      let lost = 0;
      queue.onJobsLost(() => {
        lost += 1;
      });
      return { redis, queue, lost: () => lost };
    };
    const first = await open();
    const second = await open();
    const admin = testRedisClient();
    await admin.connect();
    try {
      // A reconnect that finds the marker in place is an ordinary reconnect: nothing is lost.
      await admin.client('KILL', 'ADDR', `127.0.0.1:${first.redis.client.stream.localPort}`);
      await until(() => first.redis.isReady(), 'the first to reconnect');
      await sleep(200);
      expect(first.lost()).toBe(0);

      // As after a restart without persistence: the queue's keys are gone, both reconnect.
      await admin.del(`${prefix}:agent-platform:epoch`);
      await admin.client('KILL', 'ADDR', `127.0.0.1:${first.redis.client.stream.localPort}`);
      await admin.client('KILL', 'ADDR', `127.0.0.1:${second.redis.client.stream.localPort}`);
      await until(() => first.lost() === 1 && second.lost() === 1, 'both processes to hear it');
      expect(lines.filter((l) => String(l.msg).startsWith('Redis came back without the queue'))).toHaveLength(
        2,
      );
    } finally {
      admin.disconnect();
    }
  });
});
