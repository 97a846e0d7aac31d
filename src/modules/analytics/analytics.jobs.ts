import { createPeriodicSweep } from '../../jobs/periodic-sweep.ts';
import type { Logger } from '../../logger.ts';
import type { AnalyticsService } from './analytics.service.ts';

export interface RollupJobOptions {
  analytics: Pick<AnalyticsService, 'rollup'>;
  log: Logger;
  /** How often closed and dirty days are looked for (5 minutes). */
  intervalMs?: number;
}

/**
 * The daily rollup job of every consuming process: every `intervalMs` it computes the UTC
 * days that closed since the last sweep and the days a changed run marked dirty
 * (`AnalyticsService.rollup`). Each workspace-day is recomputed whole in one transaction, so
 * the work is idempotent: several processes sweeping at once repeat a day at worst, and a
 * process that dies mid-sweep leaves every day either as it was or done. Until a day is
 * rolled up (and while it is dirty) the analytics read its raw runs, so a late sweep costs
 * only query time, never correctness.
 */
export function createRollupJob(options: RollupJobOptions) {
  return createPeriodicSweep({
    name: 'Analytics rollups',
    log: options.log,
    intervalMs: options.intervalMs ?? 5 * 60_000,
    failure: 'the analytics rollup sweep failed; it runs again shortly',
    async work(_reason, signal) {
      const days = await options.analytics.rollup(signal);
      if (days > 0) options.log.info({ days }, 'analytics rollups computed');
      return days;
    },
  });
}
