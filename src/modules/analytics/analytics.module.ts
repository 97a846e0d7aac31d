import type { Db } from '../../db/transaction.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import { createRollupJob } from './analytics.jobs.ts';
import { analyticsRoutes } from './analytics.routes.ts';
import { createAnalyticsService } from './analytics.service.ts';

export interface AnalyticsModuleDependencies {
  db: Db;
  /** This process consumes jobs (RUN_MODE worker or all): it computes the daily rollups. */
  consumes: boolean;
  log: Logger;
}

/** Analytics over runs: figures, breakdowns and the daily rollups they read (docs/analytics.md). */
export function createAnalyticsModule(deps: AnalyticsModuleDependencies) {
  const service = createAnalyticsService({ db: deps.db });
  return {
    service,
    routes: (app) => analyticsRoutes(app, { analytics: service }),
    sweeps: deps.consumes ? [createRollupJob({ analytics: service, log: deps.log })] : [],
  } satisfies Module;
}
