import type { Component, ComponentHealth } from '../../lifecycle.ts';
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
  const name = 'Analytics rollups';
  const intervalMs = options.intervalMs ?? 5 * 60_000;
  let timer: NodeJS.Timeout | undefined;
  let lastError: string | undefined;
  let sweeping: Promise<number> | undefined;
  const stopping = new AbortController();

  function sweep(): Promise<number> {
    if (sweeping) return sweeping;
    sweeping = options.analytics
      .rollup(stopping.signal)
      .then((days) => {
        lastError = undefined;
        if (days > 0) options.log.info({ days }, 'analytics rollups computed');
        return days;
      })
      .catch((error: unknown) => {
        lastError = error instanceof Error ? error.message : String(error);
        options.log.warn({ err: error }, 'the analytics rollup sweep failed; it runs again shortly');
        return 0;
      })
      .finally(() => {
        sweeping = undefined;
      });
    return sweeping;
  }

  const component: Component & { sweep(): Promise<number> } = {
    name,
    sweep,
    async start() {
      timer = setInterval(() => void sweep(), intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      stopping.abort(new Error('the process is stopping'));
      await sweeping;
    },
    async health(): Promise<ComponentHealth> {
      return lastError ? { name, status: 'down', detail: lastError } : { name, status: 'up' };
    },
  };
  return component;
}
