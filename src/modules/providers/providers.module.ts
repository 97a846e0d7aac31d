import type { Db } from '../../db/transaction.ts';
import type { AddressPolicy } from '../../lib/net/address-guard.ts';
import type { Module } from '../../module.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { SettingsActivity, SettingsService } from '../settings/settings.service.ts';
import { createModelGateway } from './ai-gateway.ts';
import { providersRoutes } from './providers.routes.ts';
import { createProvidersService } from './providers.service.ts';

export interface ProvidersModuleDependencies {
  db: Db;
  settings: Pick<SettingsService, 'get' | 'update' | 'valuesAcrossWorkspaces'>;
  credentials: Pick<CredentialsService, 'access' | 'get'>;
  /** The vault's outbound address policy: every provider call and probe follows it. */
  addressPolicy(workspaceId: string): Promise<AddressPolicy>;
  activity: SettingsActivity;
  audit: AuditRecorder;
}

/**
 * Model providers: their settings (`service`) and the model gateway, the one way the product
 * talks to models. The gateway binds no tools: the callers do (`createModelTurns`), so the
 * search index can embed through it and tools can search the index.
 */
export function createProvidersModule(deps: ProvidersModuleDependencies) {
  const { settings, credentials, addressPolicy } = deps;
  const gateway = createModelGateway({ settings, credentials, addressPolicy });
  const service = createProvidersService({
    db: deps.db,
    settings,
    credentials,
    addressPolicy,
    activity: deps.activity,
    audit: deps.audit,
  });
  return {
    service,
    gateway,
    // Stopped before the queue's jobs are handed back: its stop aborts the calls still open.
    components: [gateway],
    routes: (app) => providersRoutes(app, { providers: service }),
  } satisfies Module;
}
