import type { Config } from '../../config.ts';
import type { Db } from '../../db/transaction.ts';
import type { Module } from '../../module.ts';
import { auditRoutes } from './audit.routes.ts';
import { type AuditVault, createAuditService } from './audit.service.ts';

export interface AuditModuleDependencies {
  db: Db;
  /** The vault's credential records, which the workspace export merges in by time. */
  vault: AuditVault;
  config: Pick<Config, 'platformAdmins'>;
}

/**
 * The workspace audit trail: every administrative change records into it (`service.record`,
 * an `AuditRecorder`) in the change's transaction; its routes count, verify and export it.
 */
export function createAuditModule(deps: AuditModuleDependencies) {
  const service = createAuditService({
    db: deps.db,
    vault: deps.vault,
    platformAdmins: new Set(deps.config.platformAdmins),
  });
  return { service, routes: (app) => auditRoutes(app, { audit: service }) } satisfies Module;
}
