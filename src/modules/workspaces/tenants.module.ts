import type { Db } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import type { Module } from '../../module.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import type { SettingsService } from '../settings/settings.service.ts';
import { tenantsRoutes } from './tenants.routes.ts';
import { createTenantsService, type TenantsDependencies } from './tenants.service.ts';

export interface TenantsModuleDependencies {
  db: Db;
  activity: TenantsDependencies['activity'];
  /** A new workspace starts with its tenant's default model in its providers settings. */
  settings: Pick<SettingsService, 'update'>;
  platformAdmins: ReadonlySet<string>;
  audit: AuditRecorder;
  hub: Pick<EventHub, 'publish'>;
}

/** The tenant settings API: administrators, defaults, deletion with confirmation (docs/settings.md). */
export function createTenantsModule(deps: TenantsModuleDependencies) {
  const { settings } = deps;
  const service = createTenantsService({
    db: deps.db,
    activity: deps.activity,
    seedDefaultModel: (tx, workspaceId, model) =>
      settings.update(workspaceId, 'providers', { default_model: model }, tx),
    platformAdmins: deps.platformAdmins,
    audit: deps.audit,
    hub: deps.hub,
  });
  return { service, routes: (app) => tenantsRoutes(app, { tenants: service }) } satisfies Module;
}
