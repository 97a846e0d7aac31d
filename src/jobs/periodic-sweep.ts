import type { Component, ComponentHealth } from '../lifecycle.ts';
import type { Logger } from '../logger.ts';

/** Why a sweep runs: `urgent` at start and when `alsoOn` fires, `periodic` on the timer. */
export type SweepReason = 'urgent' | 'periodic';

export interface PeriodicSweepOptions {
  /** The component's name in health reports. */
  name: string;
  log: Logger;
  /** Absent: no timer, only the sweeps at start and on `alsoOn`. */
  intervalMs?: number;
  /**
   * One sweep: answers how much it did (for its callers and tests). Sweeps never overlap; it
   * should stop early when `signal` aborts (the process is stopping).
   */
  work: (reason: SweepReason, signal: AbortSignal) => Promise<number>;
  /** Logged (warn) when a sweep fails; the next one runs after `intervalMs`. */
  failure: string;
  /** Sweeps once when the component starts, before `start` resolves. */
  atStart?: boolean;
  /** Subscribes to an event that asks for an urgent sweep (a queue that lost its jobs); answers the unsubscribe. */
  alsoOn?: (sweep: () => void) => () => void;
}

/**
 * The shape every background sweep of a consuming process shares (stranded runs and
 * documents handed to the queue again, nightly mining, analytics rollups): a sweep every
 * `intervalMs` on an unref'd timer, one at a time (asking during a sweep answers that sweep),
 * its last failure reported as the component's health until a sweep succeeds, and a stop that
 * aborts the sweep in flight and waits for it. The work itself is idempotent in each user, so a
 * sweep cut short or repeated by another process costs time, never correctness.
 */
export function createPeriodicSweep(options: PeriodicSweepOptions): Component & {
  /** Runs a sweep now (or joins the one in flight); answers what it did, 0 when it failed. */
  sweep(reason?: SweepReason): Promise<number>;
} {
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  let lastError: string | undefined;
  let sweeping: Promise<number> | undefined;
  const stopping = new AbortController();

  function sweep(reason: SweepReason = 'urgent'): Promise<number> {
    sweeping ??= options
      .work(reason, stopping.signal)
      .then((done) => {
        lastError = undefined;
        return done;
      })
      .catch((error: unknown) => {
        lastError = error instanceof Error ? error.message : String(error);
        options.log.warn({ err: error }, options.failure);
        return 0;
      })
      .finally(() => {
        sweeping = undefined;
      });
    return sweeping;
  }

  return {
    name: options.name,
    sweep,
    async start() {
      if (options.atStart) await sweep('urgent');
      if (options.intervalMs !== undefined) {
        timer = setInterval(() => void sweep('periodic'), options.intervalMs);
        timer.unref();
      }
      unsubscribe = options.alsoOn?.(() => void sweep('urgent'));
    },
    async stop() {
      clearInterval(timer);
      unsubscribe?.();
      stopping.abort(new Error('the process is stopping'));
      await sweeping;
    },
    async health(): Promise<ComponentHealth> {
      return lastError
        ? { name: options.name, status: 'down', detail: lastError }
        : { name: options.name, status: 'up' };
    },
  };
}
