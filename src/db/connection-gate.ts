import { AppError } from '../errors.ts';
import { currentWorkStart } from '../lib/request-order.ts';

/** How long work may wait for a database connection, and how many may wait at once. */
export interface GateLimits {
  /** Milliseconds a caller may wait before it is turned away with 503 `database_busy`. */
  timeoutMs: number;
  /** Waiting callers beyond which a new one is turned away at once. */
  maxQueue: number;
  /** Callers served at once: PGlite's one connection (the default), or a pool's size. */
  connections?: number;
  /** What a caller turned away is told is saturated (`the embedded database`). */
  what?: string;
}

interface Waiter {
  /** Orders the line: the start of the request the caller serves, else its arrival. */
  rank: number;
  seq: number;
  /** performance.now() past which the waiter is turned away rather than served. */
  deadline: number;
  grant(): void;
  refuse(): void;
  timer: NodeJS.Timeout;
}

/**
 * The error every caller turned away gets; the error handler answers it as 503 with
 * Retry-After. Backpressure, not an outage: the database answers, it has no room right now.
 */
export const databaseBusy = (what = 'the embedded database'): AppError =>
  new AppError(503, 'database_busy', `${what} is saturated; retry shortly`, undefined, {
    'Retry-After': '1',
  });

/**
 * Bounded, fair access to a fixed number of database connections: PGlite's single one, or
 * a PostgreSQL pool's. PGlite runs every statement on one connection and its own mutex
 * queues callers without limit, so under load a request waited seconds; pg-pool's queue
 * is unbounded too, and its only timeout cannot tell a full pool from a database that
 * does not answer. Here a caller waits at most `timeoutMs`, the line holds at most
 * `maxQueue`, and the line is served oldest request first (see lib/request-order.ts): a
 * request that has started its work finishes before new ones start theirs, so the requests
 * turned away are the newest, which have not written anything yet.
 */
export class ConnectionGate {
  private readonly limits: GateLimits;
  private readonly connections: number;
  private readonly line: Waiter[] = [];
  private held = 0;
  private seq = 0;

  constructor(limits: GateLimits) {
    this.limits = limits;
    this.connections = limits.connections ?? 1;
  }

  /** Callers waiting now (not counting those holding a connection). */
  get waiting(): number {
    return this.line.length;
  }

  /** True while every connection is held and callers wait for one: busy, not down. */
  get saturated(): boolean {
    return this.line.length > 0;
  }

  /** Runs `fn` holding a connection; throws `database_busy` when it cannot get one in time. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  /**
   * Waits for a connection; the caller must `release()` it exactly once. For callers whose
   * hold does not fit one function call (a pool client checked out, used, released later).
   */
  acquire(): Promise<void> {
    if (this.held < this.connections && this.line.length === 0) {
      this.held += 1;
      return Promise.resolve();
    }
    if (this.line.length >= this.limits.maxQueue) return Promise.reject(this.refusal());
    return new Promise((resolve, reject) => {
      const now = performance.now();
      const waiter: Waiter = {
        rank: currentWorkStart() ?? now,
        seq: this.seq++,
        deadline: now + this.limits.timeoutMs,
        grant: resolve,
        refuse: () => reject(this.refusal()),
        timer: setTimeout(() => {
          const index = this.line.indexOf(waiter);
          if (index >= 0) this.line.splice(index, 1);
          reject(this.refusal());
        }, this.limits.timeoutMs),
      };
      this.line.splice(this.insertionPoint(waiter), 0, waiter);
    });
  }

  private refusal(): AppError {
    return databaseBusy(this.limits.what);
  }

  /** Binary search for the first waiter ranked after `waiter`: ties keep arrival order. */
  private insertionPoint(waiter: Waiter): number {
    let low = 0;
    let high = this.line.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const other = this.line[middle] as Waiter;
      if (other.rank < waiter.rank || (other.rank === waiter.rank && other.seq < waiter.seq))
        low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /**
   * Hands the connection on, after one turn of the event loop. PGlite runs in this thread
   * and resolves its promises as microtasks, so without the pause one batch of requests
   * would run statement after statement without the loop ever reading a socket: the wait
   * then happens, unbounded and unseen, in the socket buffers (the event loop stalled for
   * 200-400 ms at a time under 50 connections). With it, new requests enter the line,
   * ranked by arrival, and timers fire, so the deadline is real.
   */
  release(): void {
    if (this.line.length === 0) {
      this.held -= 1;
      return;
    }
    setImmediate(() => this.grantNext());
  }

  /**
   * Grants the first waiter still within its deadline. The deadline is checked here as well
   * as by each waiter's timer, in case a long statement kept the timer from firing.
   */
  private grantNext(): void {
    const now = performance.now();
    for (let next = this.line.shift(); next; next = this.line.shift()) {
      clearTimeout(next.timer);
      if (next.deadline < now) {
        next.refuse();
        continue;
      }
      next.grant();
      return;
    }
    this.held -= 1;
  }
}
