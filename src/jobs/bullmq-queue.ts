import { randomUUID } from 'node:crypto';
import type { Job, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { type RedisConnection, withTimeout } from '../lib/redis/redis-connection.ts';
import type { ComponentHealth } from '../lifecycle.ts';
import {
  JobStoppedError,
  JobTimeoutError,
  MAX_JOB_ATTEMPTS,
  type RegisteredJob,
  retryDelayMs,
} from './job.ts';
import { type ConsumeOptions, type EnqueueOptions, type JobQueue, QueueUnavailableError } from './queue.ts';

/** The product's one BullMQ queue; deployments and tests are told apart by the key prefix. */
export const QUEUE_NAME = 'agent-platform';

/** Finished jobs kept for inspection: bounded by age and count so Redis does not grow. */
const KEEP_COMPLETED = { age: 24 * 3600, count: 1000 };
const KEEP_FAILED = { age: 7 * 24 * 3600, count: 5000 };
/** The backoff type jobs are enqueued with: the worker computes it from the job's definition. */
const DEFINITION_BACKOFF = 'definition';

export interface BullmqQueueOptions {
  redis: RedisConnection;
  log: Logger;
  /** Redis key prefix (`bull` by default in BullMQ); tests give each file its own. */
  prefix: string;
  /**
   * The job lock. A worker renews it every half of it; a job whose worker died (SIGKILL, a
   * lost machine) is moved back to waiting by the next stalled check once the lock has
   * expired, so it is re-delivered within about two lock durations. Shorter means faster
   * recovery but a worker whose event loop stalls for half of it loses its jobs (30 s).
   */
  lockMs: number;
  /** On stop, how long running jobs may finish before their signal is aborted and they are handed back. */
  stopGraceMs: number;
  /** After that abort, how long to wait for handlers to return before closing anyway (5 s). */
  abortWaitMs?: number;
  random?: () => number;
}

/** BullMQ, loaded when a queue starts: a process without REDIS_URL never loads it (~60 ms of start-up). */
const loadBullmq = () => import('bullmq');

/**
 * The job queue on Redis with BullMQ 6: any number of API processes enqueue, any number of
 * worker processes consume, each job runs in one worker at a time.
 *
 * - Retries: a job is enqueued with the attempt ceiling and a backoff the worker computes;
 *   the worker applies its definition's `attempts` (a last failure is made unrecoverable) and
 *   `backoffMs` (exponential with jitter), so producers need to know nothing but the name.
 * - Timeout: per attempt, delivered to the handler as an abort of its signal.
 * - Stalled jobs: a worker that dies mid-job stops renewing its lock; another worker's
 *   stalled check re-delivers the job (`maxStalledCount` 2, then it fails).
 * - Stop: the worker takes no new job; running ones get `stopGraceMs` to finish, then their
 *   signal aborts and each is handed back to the waiting list for another worker at once.
 * - Redis away: `enqueue` fails fast with `QueueUnavailableError`; the worker waits and goes
 *   on when Redis is back. Redis here runs without persistence (`--save ""`, no AOF), so a
 *   Redis restart loses every waiting, delayed and running job: a marker key tells, and
 *   `onJobsLost` listeners re-enqueue from the database.
 */
export function createBullmqQueue(options: BullmqQueueOptions): JobQueue {
  const { redis, log, prefix } = options;
  const random = options.random ?? Math.random;
  const markerKey = `${prefix}:${QUEUE_NAME}:epoch`;
  const lostListeners = new Set<() => void>();
  /** Handlers running in this process, by their controller, with what settles when they return. */
  const running = new Map<AbortController, Promise<unknown>>();
  let queue: Queue | undefined;
  let worker: Worker | undefined;
  let workerConnection: Redis | undefined;
  let definitions = new Map<string, RegisteredJob>();
  let markerSeen: string | undefined;
  /** Set when the worker starts closing: a job fetched after that goes straight back. */
  let closing = false;
  const warn = throttledWarn(log);

  /**
   * A marker key lives as long as Redis keeps the queue's keys. At each (re)connection this
   * process reads it: missing, or another value than it saw last (another process found it
   * missing first and made a new one), means Redis came back without the queue's jobs, and
   * this process's listeners re-enqueue from the database. Every process hears it, so it
   * does not matter which one reconnects first; the job ids make the re-enqueues one job.
   */
  async function checkMarker(): Promise<void> {
    try {
      await redis.client.set(markerKey, randomUUID(), 'NX');
      const marker = await redis.client.get(markerKey);
      if (markerSeen !== undefined && marker !== markerSeen) {
        log.warn(
          { queue: QUEUE_NAME },
          'Redis came back without the queue (restarted without persistence, flushed or failed over): its jobs are re-enqueued from the database',
        );
        for (const listener of lostListeners) {
          try {
            listener();
          } catch (error) {
            log.error({ err: error }, 'a listener of lost jobs failed');
          }
        }
      }
      markerSeen = marker ?? undefined;
    } catch (error) {
      warn('could not check the queue marker in Redis', error);
    }
  }
  const onReady = () => void checkMarker();

  async function processJob(job: Job, token?: string): Promise<void> {
    const { UnrecoverableError } = await loadBullmq();
    const definition = definitions.get(job.name);
    const context = { job: job.name, job_id: job.id, attempt: job.attemptsMade + 1 };
    if (!definition) {
      log.error(context, 'no handler for this job in this process; it fails without retry');
      throw new UnrecoverableError(`no handler for job ${job.name}`);
    }
    const problems = definition.check(job.data);
    if (problems.length > 0) {
      log.error({ ...context, problems }, 'job payload does not fit its schema; it fails without retry');
      throw new UnrecoverableError(`job payload does not fit its schema: ${problems.join('; ')}`);
    }
    if (closing) {
      // A fetch already under way when the worker began to close brought it (perhaps the
      // very job just handed back): give it to a worker that stays.
      await handBack(job, token, context);
    }
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new JobTimeoutError(definition.name, definition.timeoutMs)),
      definition.timeoutMs,
    );
    let failure: Error | undefined;
    const handled = (async () => definition.run(job.data, controller.signal))().catch((error: unknown) => {
      failure = error instanceof Error ? error : new Error(String(error));
    });
    running.set(controller, handled);
    try {
      await handled;
    } finally {
      clearTimeout(timer);
      running.delete(controller);
    }

    if (controller.signal.reason instanceof JobStoppedError) await handBack(job, token, context);
    if (!failure) return;
    if (job.attemptsMade + 1 >= definition.attempts) {
      log.error({ ...context, err: failure, attempts: definition.attempts }, 'job failed for good');
      throw new UnrecoverableError(failure.message);
    }
    log.warn({ ...context, err: failure, attempts: definition.attempts }, 'job failed; retrying');
    throw failure;
  }

  /** Another worker takes the job now rather than after its lock expires. */
  async function handBack(job: Job, token: string | undefined, context: object): Promise<never> {
    const { WaitingError } = await loadBullmq();
    try {
      await job.moveToWait(token);
      log.info(context, 'job handed back to the queue: this worker is stopping');
    } catch (error) {
      warn('could not hand a job back; it is re-delivered when its lock expires', error);
    }
    throw new WaitingError();
  }

  /**
   * Takes no new job, gives running handlers the grace period, then aborts them (they hand
   * their jobs back), and closes the worker once BullMQ has recorded their outcomes. While
   * Redis is away there is nothing to record and BullMQ's graceful close would wait for a
   * connection forever, so it is closed by force.
   */
  async function closeWorker(): Promise<void> {
    if (!worker) return;
    closing = true;
    await worker.pause(true).catch(() => {});
    if (!(await resolvesWithin(Promise.all(running.values()), options.stopGraceMs))) {
      for (const controller of running.keys()) controller.abort(new JobStoppedError());
      if (!(await resolvesWithin(Promise.all(running.values()), options.abortWaitMs ?? 5000))) {
        log.error(
          { jobs: running.size },
          'jobs did not return after their signal was aborted; closing without them',
        );
      }
    }
    if (!(await resolvesWithin(worker.close(!redis.isReady()), 5000))) {
      log.warn('the job worker did not close within 5 s; disconnecting it');
    }
    workerConnection?.disconnect();
  }

  return {
    name: 'Job queue',

    async start() {
      const { Queue } = await loadBullmq();
      queue = new Queue(QUEUE_NAME, { connection: redis.client, prefix });
      queue.on('error', (error) => warn('job queue error', error));
      redis.client.on('ready', onReady);
      if (redis.isReady()) await checkMarker();
    },

    async enqueue(name: string, payload: unknown, enqueueOptions: EnqueueOptions = {}) {
      if (!queue) throw new QueueUnavailableError('the queue is not started or is stopping');
      if (!redis.isReady()) throw new QueueUnavailableError('Redis is not connected');
      const { jobId, delayMs } = enqueueOptions;
      try {
        await queue.add(name, payload, {
          attempts: MAX_JOB_ATTEMPTS,
          backoff: { type: DEFINITION_BACKOFF },
          ...(delayMs ? { delay: delayMs } : {}),
          // BullMQ's deduplication (not its jobId) gives "one job while waiting or running"
          // and frees the id when the job finishes, while finished jobs stay inspectable.
          ...(jobId !== undefined ? { deduplication: { id: jobId } } : {}),
        });
      } catch (error) {
        throw new QueueUnavailableError((error as Error).message);
      }
    },

    async consume(jobs: RegisteredJob[], { concurrency }: ConsumeOptions) {
      const { Worker } = await loadBullmq();
      if (worker) throw new Error('the queue already consumes');
      definitions = new Map(jobs.map((job) => [job.name, job]));
      workerConnection = redis.duplicate('worker', { waitForReconnect: true });
      worker = new Worker(QUEUE_NAME, (job, token) => processJob(job, token), {
        connection: workerConnection,
        prefix,
        concurrency,
        lockDuration: options.lockMs,
        stalledInterval: options.lockMs,
        maxStalledCount: 2,
        removeOnComplete: KEEP_COMPLETED,
        removeOnFail: KEEP_FAILED,
        settings: {
          backoffStrategy: (attemptsMade: number, _type?: string, _error?: Error, job?: { name: string }) =>
            retryDelayMs(attemptsMade, definitions.get(job?.name ?? '')?.backoffMs ?? 1000, { random }),
        },
      });
      worker.on('error', (error) => warn('job worker error', error));
    },

    onJobsLost(listener) {
      lostListeners.add(listener);
      return () => lostListeners.delete(listener);
    },

    async stop() {
      redis.client.off('ready', onReady);
      const producer = queue;
      queue = undefined;
      await closeWorker();
      if (producer) await resolvesWithin(producer.close(), 2000);
    },

    async health(): Promise<ComponentHealth> {
      if (!queue || !redis.isReady()) {
        return { name: 'Job queue', status: 'down', detail: 'Redis is not connected' };
      }
      const started = performance.now();
      try {
        const counts = await withTimeout(
          queue.getJobCounts('wait', 'active', 'delayed'),
          1000,
          'no answer within 1000 ms',
        );
        return {
          name: 'Job queue',
          status: 'up',
          latency_ms: Math.round((performance.now() - started) * 10) / 10,
          detail: `BullMQ: ${counts.wait ?? 0} waiting, ${counts.active ?? 0} running, ${counts.delayed ?? 0} delayed`,
        };
      } catch (error) {
        return { name: 'Job queue', status: 'down', detail: (error as Error).message };
      }
    },
  };
}

/** True when `promise` settles within `ms`; false (leaving it running) otherwise. */
async function resolvesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    timeout,
  ]).finally(() => clearTimeout(timer));
}

/**
 * BullMQ reports every failed command and reconnect attempt while Redis is away: one line
 * per distinct message per 30 s says the same without flooding the log.
 */
function throttledWarn(log: Logger): (message: string, error: unknown) => void {
  const last = new Map<string, number>();
  return (message, error) => {
    const reason = error instanceof Error ? error.message : String(error);
    const key = `${message}:${reason}`;
    const now = Date.now();
    if ((last.get(key) ?? 0) > now - 30_000) return;
    last.set(key, now);
    if (last.size > 100) last.clear();
    log.warn({ reason }, message);
  };
}
