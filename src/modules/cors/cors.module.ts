import type { Config } from '../../config.ts';
import type { Db } from '../../db/transaction.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import { corsRoutes } from './cors.routes.ts';
import { type CorsDependencies, createCorsService } from './cors.service.ts';

export interface CorsModuleDependencies {
  db: Db;
  hub: CorsDependencies['hub'];
  audit: AuditRecorder;
  config: Pick<Config, 'platformAdmins'>;
  /** Where a change is logged: CORS belongs to no workspace, so no activity feed records it. */
  log: Pick<Logger, 'info'>;
}

/** The CORS policy: platform operators change it, every process applies it per request. */
export function createCorsModule(deps: CorsModuleDependencies) {
  const { log } = deps;
  const service = createCorsService({
    db: deps.db,
    hub: deps.hub,
    platformAdmins: new Set(deps.config.platformAdmins),
    onChange: (change) =>
      log.info({ user_id: change.userId, version: change.version }, 'CORS settings changed'),
    audit: deps.audit,
  });
  return { service, routes: (app) => corsRoutes(app, { cors: service }) } satisfies Module;
}
