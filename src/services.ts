import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from './config.ts';
import type { Database } from './db/client.ts';
import { createLocalEventHub, type EventHub } from './events/event-hub.ts';
import { createRedisEventHub } from './events/redis-event-hub.ts';
import { createBullmqQueue } from './jobs/bullmq-queue.ts';
import { createLocalQueue } from './jobs/local-queue.ts';
import { createRedisConnection } from './lib/redis/redis-connection.ts';
import { createLogger, type Logger } from './logger.ts';
import type { ModuleRoutes } from './module.ts';
import { createActivityModule } from './modules/activity/activity.module.ts';
import type { TicketStore } from './modules/activity/ws-tickets.ts';
import { createAgentsModule } from './modules/agents/agents.module.ts';
import { createAnalyticsModule } from './modules/analytics/analytics.module.ts';
import { createAuditModule } from './modules/audit/audit.module.ts';
import { createChatModule } from './modules/chat/chat.module.ts';
import { createCodegraphModule } from './modules/codegraph/codegraph.module.ts';
import { createCorsModule } from './modules/cors/cors.module.ts';
import { createCredentialsModule } from './modules/credentials/credentials.module.ts';
import { createFlagsModule } from './modules/flags/flags.module.ts';
import { createIdentityModule } from './modules/identity/identity.module.ts';
import { createKnowledgeModule } from './modules/knowledge/knowledge.module.ts';
import { createPlaybooksModule } from './modules/playbooks/playbooks.module.ts';
import { createPoliciesModule } from './modules/policies/policies.module.ts';
import { createProvidersModule } from './modules/providers/providers.module.ts';
import { createRetrievalModule } from './modules/retrieval/retrieval.module.ts';
import { createRunEngineModule } from './modules/runs/run-engine.module.ts';
import { createRunsModule } from './modules/runs/runs.module.ts';
import { createSettingsModule } from './modules/settings/settings.module.ts';
import { createSystemModule } from './modules/system/system.module.ts';
import { createToolsModule } from './modules/tools/tools.module.ts';
import { createWorkflowsModule } from './modules/workflows/workflows.module.ts';
import { createTenantsModule } from './modules/workspaces/tenants.module.ts';
import { createWorkspacesModule } from './modules/workspaces/workspaces.module.ts';

/** Parts a caller may supply instead of the defaults. */
export interface ServiceOptions {
  /** Carries the ids of new activity (and run) events between processes; in-process by default. */
  eventHub?: EventHub;
  /**
   * Where WebSocket tickets wait to be redeemed; this process's memory by default. Several
   * API processes share one (`createRedisTicketStore`), so any of them can redeem a ticket.
   */
  tickets?: TicketStore;
  /** Where the long-lived parts (Redis, the queue, jobs) log; a new logger at `LOG_LEVEL` by default. */
  log?: Logger;
}

/**
 * The composition root: each module built by its entrypoint (`create<Name>Module`), in
 * dependency order, from values only. No function is written here: a module that needs another
 * is built after it, so a cycle cannot hide behind a closure (tests/architecture.test.ts).
 */
export async function createServices(config: Config, database: Database, options: ServiceOptions = {}) {
  const { db } = database;
  const log = options.log ?? createLogger(config.logLevel);
  // Jobs and events: on Redis when REDIS_URL is set (any number of processes), else in-process.
  const redis = config.redis ? createRedisConnection({ url: config.redis.url, log }) : undefined;
  const { prefix, lockMs, stopGraceMs } = config.queue;
  const hub =
    options.eventHub ?? (redis ? createRedisEventHub({ redis, prefix, log }) : createLocalEventHub());
  const queue = redis
    ? createBullmqQueue({ redis, log, prefix, lockMs, stopGraceMs })
    : createLocalQueue({ log, stopGraceMs });
  // Job consumers (RUN_MODE worker or all) also sweep for work a lost enqueue or a dead worker left.
  const consumes = config.runMode !== 'api';
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

  const identity = await createIdentityModule({ config });
  const settings = createSettingsModule({ db, hub });
  const activity = createActivityModule({
    db,
    hub,
    ...(options.tickets ? { tickets: options.tickets } : {}),
    ...(redis ? { redis } : {}),
    prefix,
    pingIntervalMs: config.wsPingIntervalMs,
  });
  const credentials = createCredentialsModule({ db, settings: settings.service, config });
  // Every outbound request to an address a user chose follows the vault's one policy.
  const { addressPolicy } = credentials.service;
  // The workspace audit trail: every administrative change below records into it.
  const audit = createAuditModule({ db, vault: credentials.service, config });
  const flags = createFlagsModule({ db, activity: activity.service, audit: audit.service });
  const workspaces = createWorkspacesModule({
    db,
    audit: audit.service,
    hub,
    ...(config.sourcesRoot ? { sourcesRoot: config.sourcesRoot } : {}),
  });
  const { sourcesRootOf } = workspaces;
  const tenants = createTenantsModule({
    db,
    activity: activity.service,
    settings: settings.service,
    platformAdmins: new Set(config.platformAdmins),
    audit: audit.service,
    hub,
  });
  const cors = createCorsModule({ db, hub, audit: audit.service, config, log });
  const codegraph = createCodegraphModule({
    db,
    activity: activity.service,
    queue,
    sourcesRootOf,
    config,
    consumes,
    log,
  });
  const providers = createProvidersModule({
    db,
    settings: settings.service,
    credentials: credentials.service,
    addressPolicy,
    activity: activity.service,
    audit: audit.service,
  });
  const { gateway } = providers;
  const retrieval = createRetrievalModule({
    db,
    models: gateway,
    settings: settings.service,
    credentials: credentials.service,
    flags: flags.service,
    config,
    log,
  });
  const tools = await createToolsModule({
    credentials: credentials.service,
    codegraph: codegraph.service,
    addressPolicy,
    knowledge: retrieval.service,
  });
  const workflows = createWorkflowsModule({ db, activity: activity.service });
  const agents = createAgentsModule({
    db,
    workflows: workflows.service,
    activity: activity.service,
    tools: tools.service,
    audit: audit.service,
  });
  const runs = createRunsModule({
    db,
    hub,
    activity: activity.service,
    workflows: workflows.service,
    queue,
    consumes,
    log,
  });
  const policies = createPoliciesModule({ db, runs: runs.service, audit: audit.service });
  const playbooks = createPlaybooksModule({
    db,
    activity: activity.service,
    workflows: workflows.service,
    runs: runs.service,
    missingInputs: runs.missingInputs,
    workspaces: workspaces.service,
    audit: audit.service,
    queue,
    config,
    owner,
    consumes,
    log,
  });
  const runEngine = createRunEngineModule({
    db,
    writers: runs.writers,
    agents: agents.service,
    workflows: workflows.service,
    gateway,
    tools: tools.service,
    playbooks: playbooks.service,
    policies: policies.service,
    hub,
    owner,
    config,
  });
  const chat = createChatModule({
    db,
    gateway,
    tools: tools.service,
    knowledge: retrieval.passages,
    agents: agents.service,
    policies: policies.service,
  });
  const knowledge = createKnowledgeModule({
    db,
    databaseKind: database.kind,
    retrieval: retrieval.service,
    activity: activity.service,
    sourcesRootOf,
    addressPolicy,
    queue,
    config,
    consumes,
    log,
  });
  const analytics = createAnalyticsModule({ db, consumes, log });
  const system = createSystemModule({
    database,
    // Redis and the search index fill the spec's rows of their names; the model providers' row is per viewer.
    health: [...(redis ? [redis] : []), ...retrieval.health],
    providers: gateway,
    analytics: analytics.service,
    config,
    log,
  });

  // The route plugins, registered under /api in this order (the order of openapi.json).
  const routes: ModuleRoutes[] = [
    identity.routes,
    system.routes,
    workspaces.routes,
    agents.routes,
    workflows.routes,
    runs.routes,
    analytics.routes,
    activity.routes,
    credentials.routes,
    chat.routes,
    playbooks.routes,
    policies.routes,
    providers.routes,
    flags.routes,
    tenants.routes,
    cors.routes,
    audit.routes,
    tools.routes,
    retrieval.routes,
    codegraph.routes,
    knowledge.routes,
  ];
  // Started in this order, stopped in reverse. The queue comes last of the long-lived parts so
  // it stops first: its running jobs use everything before it (the model gateway's stop aborts
  // calls still open). A hub given by the caller is the caller's to start and stop. The sweeps
  // (consumers only) come after the queue they hand work to.
  const components = [
    ...system.components,
    ...(redis ? [redis] : []),
    ...(options.eventHub ? [] : [hub]),
    ...providers.components,
    ...retrieval.components,
    queue,
    ...runs.sweeps,
    ...codegraph.sweeps,
    ...knowledge.sweeps,
    ...playbooks.sweeps,
    ...analytics.sweeps,
  ];
  // Each module's jobs, bound to what their handlers use. Any process may enqueue them;
  // RUN_MODE worker|all consumes.
  const jobs = [...runEngine.jobs, ...codegraph.jobs, ...knowledge.jobs, ...playbooks.jobs];

  return {
    config,
    log,
    queue,
    jobs,
    components,
    routes,
    keySource: credentials.keySource,
    vaultKeys: credentials.vaultKeys,
    database,
    devKey: identity.devKey,
    devJwks: identity.devJwks,
    verifyToken: identity.verifyToken,
    eventHub: hub,
    workspaces: workspaces.service,
    tenants: tenants.service,
    cors: cors.service,
    activity: activity.service,
    audit: audit.service,
    agents: agents.service,
    workflows: workflows.service,
    runs: runs.service,
    engine: runEngine.engine,
    settings: settings.service,
    flags: flags.service,
    credentials: credentials.service,
    tools: tools.service,
    providers: providers.service,
    modelGateway: gateway,
    retrieval: retrieval.service,
    chat: chat.service,
    playbooks: playbooks.service,
    policies: policies.service,
    codegraph: codegraph.service,
    knowledge: knowledge.service,
    indexer: knowledge.indexer,
    analytics: analytics.service,
    system: system.service,
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
