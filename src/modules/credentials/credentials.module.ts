import type { Config } from '../../config.ts';
import type { Db } from '../../db/transaction.ts';
import type { Module } from '../../module.ts';
import { createAuditRecorder } from '../audit/audit.service.ts';
import type { SettingsService } from '../settings/settings.service.ts';
import { testConnection } from './connection-tester.ts';
import { credentialsRoutes } from './credentials.routes.ts';
import { createCredentialsService } from './credentials.service.ts';
import { createVaultKeys, loadKeyring } from './vault-keys.ts';

export interface CredentialsModuleDependencies {
  db: Db;
  /** The vault's settings live in the settings module, namespace `credentials`. */
  settings: Pick<SettingsService, 'get' | 'update'>;
  config: Pick<
    Config,
    'encryptionKey' | 'encryptionKeysPrevious' | 'dataDir' | 'outbound' | 'platformAdmins'
  >;
}

/**
 * The credential vault: typed, encrypted, audited credentials, and the one outbound address
 * policy (`service.addressPolicy`) every request to a user-chosen address follows.
 */
export function createCredentialsModule(deps: CredentialsModuleDependencies) {
  const { config } = deps;
  const { keyring, source: keySource } = loadKeyring({
    encryptionKey: config.encryptionKey,
    previousKeys: config.encryptionKeysPrevious,
    dataDir: config.dataDir,
  });
  const vaultKeys = createVaultKeys(deps.db, keyring);
  const platformAdmins = new Set(config.platformAdmins);
  const service = createCredentialsService({
    db: deps.db,
    settings: deps.settings,
    keys: vaultKeys,
    // The workspace trail reads the vault's records for its export, so the vault records its
    // settings changes with a recorder of its own rather than the audit module's.
    audit: createAuditRecorder(),
    testConnection,
    outbound: config.outbound,
  });
  return {
    service,
    vaultKeys,
    /** Where the master key came from: the environment, a kept development file, or just generated. */
    keySource,
    routes: (app) => credentialsRoutes(app, { credentials: service, platformAdmins }),
  } satisfies Module;
}
