import type { Db } from '../../db/transaction.ts';
import type { Component } from '../../lifecycle.ts';
import { createSystemRepository } from './system.repository.ts';

export const MINUTE_MS = 60_000;

/** `date` truncated to its UTC minute. */
export const minuteOf = (date: Date): Date => new Date(Math.floor(date.getTime() / MINUTE_MS) * MINUTE_MS);

export interface HeartbeatDependencies {
  db: Db;
  clock?: () => Date;
  /** A write that failed (the database away): that minute stays unrecorded, which is the point. */
  onError?: (error: unknown) => void;
}

/**
 * Records the current minute in `heartbeats` at start and then once a minute, so uptime can
 * be computed from the database after any restart. Every process runs one; they share rows.
 */
export function createHeartbeat(deps: HeartbeatDependencies): Component {
  const clock = deps.clock ?? (() => new Date());
  const repo = createSystemRepository(deps.db);
  let timer: NodeJS.Timeout | undefined;
  let last: Promise<void> = Promise.resolve();

  const beat = () => {
    last = repo.recordMinute(minuteOf(clock())).catch((error) => deps.onError?.(error));
    return last;
  };

  return {
    name: 'Heartbeat',
    async start() {
      await beat();
      timer = setInterval(beat, MINUTE_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await last;
    },
    async health() {
      return { name: 'Heartbeat', status: timer ? 'up' : 'down' };
    },
  };
}
