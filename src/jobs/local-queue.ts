import type { Logger } from 'pino';
import type { ComponentHealth } from '../lifecycle.ts';
import { JobStoppedError, JobTimeoutError, type RegisteredJob, retryDelayMs } from './job.ts';
import { type ConsumeOptions, type EnqueueOptions, type JobQueue, QueueUnavailableError } from './queue.ts';

export interface LocalQueueOptions {
  log: Logger;
  /** On stop, how long running jobs may finish before their signal is aborted. */
  stopGraceMs: number;
  /** After that abort, how long to wait for handlers to return before giving up on them (2 s). */
  abortWaitMs?: number;
  random?: () => number;
}

interface Entry {
  name: string;
  payload: unknown;
  jobId?: string;
  /** Attempts that have run (and failed) so far. */
  attemptsMade: number;
}

/**
 * The queue of the embedded mode (no Redis): the same job definitions, run in this process
 * with a concurrency limit, `jobId` dedupe, delays, attempts with backoff and per-attempt
 * timeouts, and abort on stop.
 *
 * Jobs live in memory only. A crash or a stop loses those not yet finished, which is
 * acceptable because the database row is the truth: the owner re-enqueues unfinished work
 * when the process starts (runs: Queued and interrupted Running runs). Payloads go through
 * JSON as they would through Redis, so a handler never shares objects with its producer and a
 * payload that would not survive BullMQ fails here too.
 */
export function createLocalQueue(options: LocalQueueOptions): JobQueue {
  const { log } = options;
  const random = options.random ?? Math.random;
  const ready: Entry[] = [];
  const delayed = new Map<Entry, NodeJS.Timeout>();
  const active = new Map<Entry, { controller: AbortController; done: Promise<void> }>();
  /** jobIds of entries waiting, delayed or running: an enqueue of one of them adds nothing. */
  const ids = new Set<string>();
  let jobs: Map<string, RegisteredJob> | undefined;
  let concurrency = 0;
  let stopping = false;

  function release(entry: Entry): void {
    if (entry.jobId !== undefined) ids.delete(entry.jobId);
  }

  function schedule(entry: Entry, delayMs: number): void {
    if (delayMs <= 0) {
      ready.push(entry);
      pump();
      return;
    }
    const timer = setTimeout(() => {
      delayed.delete(entry);
      ready.push(entry);
      pump();
    }, delayMs);
    delayed.set(entry, timer);
  }

  function pump(): void {
    if (!jobs || stopping) return;
    while (active.size < concurrency && ready.length > 0) {
      const entry = ready.shift() as Entry;
      const controller = new AbortController();
      const done = execute(entry, controller).finally(() => {
        active.delete(entry);
        pump();
      });
      active.set(entry, { controller, done });
    }
  }

  async function execute(entry: Entry, controller: AbortController): Promise<void> {
    const job = jobs?.get(entry.name);
    const context = { job: entry.name, job_id: entry.jobId };
    if (!job) {
      log.error(context, 'no handler for this job in this process; it fails without retry');
      release(entry);
      return;
    }
    const problems = job.check(entry.payload);
    if (problems.length > 0) {
      log.error({ ...context, problems }, 'job payload does not fit its schema; it fails without retry');
      release(entry);
      return;
    }
    entry.attemptsMade += 1;
    const timer = setTimeout(
      () => controller.abort(new JobTimeoutError(job.name, job.timeoutMs)),
      job.timeoutMs,
    );
    try {
      await job.run(entry.payload, controller.signal);
      release(entry);
    } catch (error) {
      if (stopping) {
        log.info(
          { ...context, err: error },
          'job ended with the process stopping; its owner re-enqueues it at the next start',
        );
        release(entry);
      } else if (entry.attemptsMade < job.attempts) {
        const delayMs = retryDelayMs(entry.attemptsMade, job.backoffMs, { random });
        log.warn(
          {
            ...context,
            err: error,
            attempt: entry.attemptsMade,
            attempts: job.attempts,
            retry_in_ms: delayMs,
          },
          'job failed; retrying',
        );
        schedule(entry, delayMs);
      } else {
        log.error({ ...context, err: error, attempts: entry.attemptsMade }, 'job failed for good');
        release(entry);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  async function settled(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.allSettled([...active.values()].map((a) => a.done)).then(() => true);
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    return Promise.race([all, timeout]).finally(() => clearTimeout(timer));
  }

  return {
    name: 'Job queue',

    async start() {
      stopping = false;
    },

    async enqueue(name: string, payload: unknown, enqueueOptions: EnqueueOptions = {}) {
      if (stopping) throw new QueueUnavailableError('the queue is not started or is stopping');
      const { jobId, delayMs = 0 } = enqueueOptions;
      if (jobId !== undefined) {
        if (ids.has(jobId)) return;
        ids.add(jobId);
      }
      const copy = payload === undefined ? undefined : JSON.parse(JSON.stringify(payload));
      schedule({ name, payload: copy, jobId, attemptsMade: 0 }, delayMs);
    },

    async consume(definitions: RegisteredJob[], { concurrency: limit }: ConsumeOptions) {
      if (jobs) throw new Error('the queue already consumes');
      jobs = new Map(definitions.map((job) => [job.name, job]));
      concurrency = limit;
      pump();
    },

    onJobsLost() {
      // Nothing outlives this process's memory: a lost job means a lost process, whose
      // start-up re-enqueues from the database.
      return () => {};
    },

    async stop() {
      stopping = true;
      for (const timer of delayed.values()) clearTimeout(timer);
      const dropped = ready.length + delayed.size;
      for (const entry of [...ready, ...delayed.keys()]) release(entry);
      ready.length = 0;
      delayed.clear();
      if (dropped > 0)
        log.info({ jobs: dropped }, 'jobs not started are dropped; their owners re-enqueue them');
      if (active.size === 0 || (await settled(options.stopGraceMs))) return;
      for (const { controller } of active.values()) controller.abort(new JobStoppedError());
      if (!(await settled(options.abortWaitMs ?? 2000))) {
        log.error(
          { jobs: active.size },
          'jobs did not return after their signal was aborted; stopping without them',
        );
      }
    },

    async health(): Promise<ComponentHealth> {
      return {
        name: 'Job queue',
        status: 'up',
        detail: `in-process: ${ready.length} waiting, ${delayed.size} delayed, ${active.size} running`,
      };
    },
  };
}
