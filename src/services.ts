import type { JWK } from 'jose';
import type { Config } from './config.ts';
import type { Database } from './db/client.ts';
import { createLocalEventHub } from './events/event-hub.ts';
import { createRedisEventHub } from './events/redis-event-hub.ts';
import { createBullmqQueue } from './jobs/bullmq-queue.ts';
import type { RegisteredJob } from './jobs/job.ts';
import { createLocalQueue } from './jobs/local-queue.ts';
import { createRedisConnection } from './lib/redis/redis-connection.ts';
import type { Component } from './lifecycle.ts';
import { createLogger, type Logger } from './logger.ts';
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

export interface ServicesOptions {
  /** Where the long-lived parts (Redis, the queue, jobs) log; a new logger at `LOG_LEVEL` by default. */
  log?: Logger;
}

/** Everything the HTTP layer and the commands use, wired in dependency order. */
export async function createServices(config: Config, database: Database, options: ServicesOptions = {}) {
  const log = options.log ?? createLogger(config.logLevel);
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
  // Agents and workflows meet inside each other's transactions: each gets only the one
  // function it calls (the closure defers the lookup until after both exist).
  const agents = createAgentsService(db, {
    removeFromWorkflows: (tx, workspaceId, agentId) => workflows.removeAgent(tx, workspaceId, agentId),
  });
  const workflows = createWorkflowsService(db, { agents: { lockExisting: agents.lockExisting } });

  // Jobs and events: on Redis when REDIS_URL is set (any number of processes), else in-process.
  const redis = config.redis ? createRedisConnection({ url: config.redis.url, log }) : undefined;
  const { prefix, lockMs, stopGraceMs } = config.queue;
  const eventHub = redis ? createRedisEventHub({ redis, prefix, log }) : createLocalEventHub();
  const queue = redis
    ? createBullmqQueue({ redis, log, prefix, lockMs, stopGraceMs })
    : createLocalQueue({ log, stopGraceMs });
  // Each module's `<module>.jobs.ts` definitions, bound to what their handlers use
  // (`bindJob(definition, deps)`). Any process may enqueue them; RUN_MODE worker|all consumes.
  const jobs: RegisteredJob[] = [];
  // Started in this order, stopped in reverse. The queue comes last so it stops first: its
  // running jobs use everything before it.
  const components: Component[] = [...(redis ? [redis] : []), eventHub, queue];

  return {
    config,
    log,
    eventHub,
    queue,
    jobs,
    components,
    keySource,
    vaultKeys,
    database,
    devKey,
    devJwks,
    verifyToken: createTokenVerifier(config.auth, devJwks),
    workspaces: createWorkspacesService(db),
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
      // Reported under their names: Redis and the model providers fill the spec's rows.
      components: redis ? [redis] : [],
    }),
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
