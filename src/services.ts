import type { JWK } from 'jose';
import type { Config } from './config.ts';
import type { Database } from './db/client.ts';
import { createLocalEventHub, type EventHub } from './events/event-hub.ts';
import { createActivityService } from './modules/activity/activity.service.ts';
import { createMemoryTicketStore, type TicketStore } from './modules/activity/ws-tickets.ts';
import { createAgentsService } from './modules/agents/agents.service.ts';
import { testConnection } from './modules/credentials/connection-tester.ts';
import { createCredentialsService } from './modules/credentials/credentials.service.ts';
import { createVaultKeys, loadKeyring } from './modules/credentials/vault-keys.ts';
import { type DevSigningKey, loadDevSigningKey } from './modules/identity/dev-issuer.ts';
import { createTokenVerifier } from './modules/identity/token-verifier.ts';
import { createSettingsService } from './modules/settings/settings.service.ts';
import { createSystemService } from './modules/system/system.service.ts';
import { createWorkflowsService } from './modules/workflows/workflows.service.ts';
import { createWorkspacesService } from './modules/workspaces/workspaces.service.ts';

/** Parts a caller may supply instead of the defaults. */
export interface ServiceOptions {
  /** Carries the ids of new activity (and run) events between processes; in-process by default. */
  eventHub?: EventHub;
  /**
   * Where WebSocket tickets wait to be redeemed; this process's memory by default. Several
   * API processes share one (`createRedisTicketStore`), so any of them can redeem a ticket.
   */
  tickets?: TicketStore;
}

/** Everything the HTTP layer and the commands use, wired in dependency order. */
export async function createServices(config: Config, database: Database, options: ServiceOptions = {}) {
  const devKey: DevSigningKey | undefined =
    config.auth.mode === 'dev' ? await loadDevSigningKey(config.dataDir) : undefined;
  const devJwks: { keys: JWK[] } | undefined = devKey ? { keys: [devKey.publicJwk] } : undefined;

  const { keyring, source: keySource } = loadKeyring({
    encryptionKey: config.encryptionKey,
    previousKeys: config.encryptionKeysPrevious,
    dataDir: config.dataDir,
  });
  const { db } = database;
  const vaultKeys = createVaultKeys(db, keyring);
  const settings = createSettingsService(db);
  const eventHub = options.eventHub ?? createLocalEventHub();
  const activity = createActivityService(db, {
    hub: eventHub,
    tickets: options.tickets ?? createMemoryTicketStore(),
  });
  // Agents and workflows meet inside each other's transactions: each gets only the one
  // function it calls (the closure defers the lookup until after both exist).
  const agents = createAgentsService(db, {
    removeFromWorkflows: (tx, workspaceId, agentId) => workflows.removeAgent(tx, workspaceId, agentId),
    activity: { record: activity.record },
  });
  const workflows = createWorkflowsService(db, {
    agents: { lockExisting: agents.lockExisting },
    activity: { record: activity.record },
  });

  return {
    config,
    keySource,
    vaultKeys,
    database,
    devKey,
    devJwks,
    verifyToken: createTokenVerifier(config.auth, devJwks),
    workspaces: createWorkspacesService(db),
    eventHub,
    activity,
    agents,
    workflows,
    settings,
    credentials: createCredentialsService({
      db,
      settings,
      keys: vaultKeys,
      testConnection: (request) => testConnection({ ...request, allowLoopback: config.vaultAllowLoopback }),
    }),
    system: createSystemService({
      pingDatabase: database.ping,
      databaseKind: database.kind,
      startedAt: new Date(),
    }),
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
