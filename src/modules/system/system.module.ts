import type { Config } from '../../config.ts';
import type { Database } from '../../db/client.ts';
import type { Component } from '../../lifecycle.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import type { AnalyticsService } from '../analytics/analytics.service.ts';
import { createHeartbeat } from './heartbeat.ts';
import { systemRoutes } from './system.routes.ts';
import { createSystemService, type ProviderHealth } from './system.service.ts';

export interface SystemModuleDependencies {
  database: Pick<Database, 'db' | 'ping' | 'busy' | 'kind'>;
  /** The components reported as rows of the health report (Redis fills the spec's row of that name). */
  health: readonly Component[];
  /** The model providers' row, which is per viewer. */
  providers: ProviderHealth;
  analytics: Pick<AnalyticsService, 'dashboardCounts'>;
  config: Pick<Config, 'platformAdmins' | 'metricsShareMs'>;
  log: Pick<Logger, 'warn'>;
}

/** Liveness, component health, the dashboard's metrics, and the heartbeat behind uptime. */
export function createSystemModule(deps: SystemModuleDependencies) {
  const { database, log } = deps;
  const service = createSystemService({
    pingDatabase: database.ping,
    databaseBusy: database.busy,
    databaseKind: database.kind,
    startedAt: new Date(),
    components: deps.health,
    providers: deps.providers,
    metrics: { db: database.db, analytics: deps.analytics },
    shareMs: deps.config.metricsShareMs,
  });
  const platformAdmins = new Set(deps.config.platformAdmins);
  return {
    service,
    // Every process records its minutes up, for the uptime percentage.
    components: [
      createHeartbeat({
        db: database.db,
        onError: (error) => log.warn({ err: error }, 'heartbeat minute not recorded'),
      }),
    ],
    routes: (app) => systemRoutes(app, { system: service, platformAdmins }),
  } satisfies Module;
}
