import type { Component } from '../lifecycle.ts';
import type { RegisteredJob } from './job.ts';

export interface EnqueueOptions {
  /**
   * Makes the enqueue idempotent: while a job with this id is waiting, delayed (between
   * attempts) or running, enqueueing it again adds nothing. Once it has completed or failed
   * for good, the id is free again.
   */
  jobId?: string;
  /** Runs the job no sooner than this many milliseconds from now. */
  delayMs?: number;
}

export interface ConsumeOptions {
  /** Jobs this process runs at once. */
  concurrency: number;
}

/**
 * Wakes workers. The database row is the truth (a run, an outbox row): a producer records
 * the work in its transaction and enqueues after the commit; a consumer reads the row. So a
 * lost job costs a delay, never work: the owner re-enqueues what is recorded and unfinished
 * at start-up and when `onJobsLost` says the queue forgot its jobs.
 *
 * Two drivers: BullMQ on Redis (`bullmq-queue.ts`, any number of processes) and the
 * in-process queue of the embedded mode (`local-queue.ts`).
 */
export interface JobQueue extends Component {
  /**
   * Hands a job to the queue. Rejects with `QueueUnavailableError` at once when the queue
   * cannot take it (Redis away), so the caller can leave the recovery to the owner's sweep.
   */
  enqueue(name: string, payload: unknown, options?: EnqueueOptions): Promise<void>;
  /**
   * Starts running `jobs` in this process, `concurrency` at a time. Called once, after
   * `start()`, and only by processes that consume (RUN_MODE worker or all). A job with no
   * definition here fails without retry.
   */
  consume(jobs: RegisteredJob[], options: ConsumeOptions): Promise<void>;
  /**
   * Calls `listener` when jobs the queue held may be gone although this process lives on:
   * Redis came back without them (restarted without persistence, flushed, failed over to an
   * empty replica). The owner re-enqueues from its rows. Returns the function that removes it.
   */
  onJobsLost(listener: () => void): () => void;
}

/** The queue cannot take a job now (Redis is away); the row stays, the owner re-enqueues later. */
export class QueueUnavailableError extends Error {
  constructor(reason: string) {
    super(`the job queue is unavailable: ${reason}`);
    this.name = 'QueueUnavailableError';
  }
}
