import type { Db } from '../../db/transaction.ts';
import type { Module } from '../../module.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import { flagsRoutes } from './flags.routes.ts';
import { createFlagsService, type FlagsDependencies } from './flags.service.ts';

export interface FlagsModuleDependencies {
  db: Db;
  activity: FlagsDependencies['activity'];
  audit: AuditRecorder;
}

/** Feature flags: the one service through which the platform reads its switches. */
export function createFlagsModule(deps: FlagsModuleDependencies) {
  const service = createFlagsService({ db: deps.db, activity: deps.activity, audit: deps.audit });
  return { service, routes: (app) => flagsRoutes(app, { flags: service }) } satisfies Module;
}
