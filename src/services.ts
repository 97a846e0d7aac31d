import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { JWK } from 'jose';
import type { Config } from './config.ts';
import type { Database } from './db/client.ts';
import { createLocalEventHub, type EventHub } from './events/event-hub.ts';
import { createRedisEventHub } from './events/redis-event-hub.ts';
import { createBullmqQueue } from './jobs/bullmq-queue.ts';
import { bindJob, type RegisteredJob } from './jobs/job.ts';
import { createLocalQueue } from './jobs/local-queue.ts';
import { tenantSourcesRoot } from './lib/fs/within-root.ts';
import { createGuardedFetch } from './lib/net/guarded-fetch.ts';
import { createRedisConnection } from './lib/redis/redis-connection.ts';
import type { Component } from './lifecycle.ts';
import { createLogger, type Logger } from './logger.ts';
import { createActivityService } from './modules/activity/activity.service.ts';
import {
  createMemoryTicketStore,
  createRedisTicketStore,
  type TicketStore,
} from './modules/activity/ws-tickets.ts';
import { createAgentsService } from './modules/agents/agents.service.ts';
import { createRollupJob } from './modules/analytics/analytics.jobs.ts';
import { createAnalyticsService } from './modules/analytics/analytics.service.ts';
import { createAuditService } from './modules/audit/audit.service.ts';
import { createChatService } from './modules/chat/chat.service.ts';
import {
  CODEGRAPH_INDEX,
  createCodegraphRecovery,
  indexJobId,
  indexProjectJob,
} from './modules/codegraph/codegraph.jobs.ts';
import { createCodegraphService } from './modules/codegraph/codegraph.service.ts';
import { createCorsService } from './modules/cors/cors.service.ts';
import { testConnection } from './modules/credentials/connection-tester.ts';
import { createCredentialsService } from './modules/credentials/credentials.service.ts';
import { createVaultKeys, loadKeyring } from './modules/credentials/vault-keys.ts';
import { createFlagsService } from './modules/flags/flags.service.ts';
import { type DevSigningKey, loadDevSigningKey } from './modules/identity/dev-issuer.ts';
import { createTokenVerifier } from './modules/identity/token-verifier.ts';
import { createDocumentIndexer } from './modules/knowledge/document-indexer.ts';
import {
  createKnowledgeRecovery,
  documentJobId,
  INDEX_SOURCE,
  indexSourceJob,
  PROCESS_DOCUMENT,
  processDocumentJob,
  runJobId,
} from './modules/knowledge/knowledge.jobs.ts';
import { createKnowledgeService } from './modules/knowledge/knowledge.service.ts';
import { createNightlyMining } from './modules/playbooks/playbooks.jobs.ts';
import { createPlaybooksService } from './modules/playbooks/playbooks.service.ts';
import { createPoliciesService } from './modules/policies/policies.service.ts';
import { createModelGateway } from './modules/providers/ai-gateway.ts';
import { createProvidersService } from './modules/providers/providers.service.ts';
import { createLocalModels } from './modules/retrieval/local-models.ts';
import { createRetrievalService } from './modules/retrieval/retrieval.service.ts';
import { createRunEngine } from './modules/runs/run-engine.ts';
import { createRunLog, createRunWriter } from './modules/runs/run-log.ts';
import { renderGoal } from './modules/runs/run-state.ts';
import { createRunRecovery, executeRunJob, RUN_EXECUTE } from './modules/runs/runs.jobs.ts';
import { createRunsService } from './modules/runs/runs.service.ts';
import { createSettingsService } from './modules/settings/settings.service.ts';
import { createHeartbeat } from './modules/system/heartbeat.ts';
import { createSystemService } from './modules/system/system.service.ts';
import { loadToolDefinitions } from './modules/tools/tool-registry.ts';
import { createToolsService } from './modules/tools/tools.service.ts';
import { createWorkflowsService } from './modules/workflows/workflows.service.ts';
import { createTenantsService } from './modules/workspaces/tenants.service.ts';
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
  /** Where the long-lived parts (Redis, the queue, jobs) log; a new logger at `LOG_LEVEL` by default. */
  log?: Logger;
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
  // The workspace audit trail: every administrative change below records into it, in the
  // change's transaction. Its export merges in the vault's credential records (created below).
  const audit = createAuditService({
    db,
    vault: () => credentials,
    platformAdmins: new Set(config.platformAdmins),
  });
  const log = options.log ?? createLogger(config.logLevel);
  // Jobs and events: on Redis when REDIS_URL is set (any number of processes), else in-process.
  const redis = config.redis ? createRedisConnection({ url: config.redis.url, log }) : undefined;
  const { prefix, lockMs, stopGraceMs } = config.queue;
  const eventHub =
    options.eventHub ?? (redis ? createRedisEventHub({ redis, prefix, log }) : createLocalEventHub());
  const settings = createSettingsService(db, { hub: eventHub });
  const queue = redis
    ? createBullmqQueue({ redis, log, prefix, lockMs, stopGraceMs })
    : createLocalQueue({ log, stopGraceMs });
  const activity = createActivityService(db, {
    hub: eventHub,
    // With Redis, any API process redeems a ticket another issued; `client` fails fast when down.
    tickets:
      options.tickets ??
      (redis
        ? createRedisTicketStore(redis.client, `${prefix}:agent-platform:ws-ticket:`)
        : createMemoryTicketStore()),
  });
  // Feature flags: the one service through which the platform reads its switches.
  const flags = createFlagsService({ db, activity: { record: activity.record }, audit });
  const credentials = createCredentialsService({
    db,
    settings,
    keys: vaultKeys,
    audit,
    testConnection,
    outbound: config.outbound,
  });
  // Every outbound request to an address a user chose (connection tests, LLM and embedding base
  // URLs, URL sources, the http_request tool) follows one policy: the operator's OUTBOUND_*
  // settings, which a workspace's refuse_private_networks may only narrow.
  const addressPolicy = credentials.addressPolicy;
  const workspaces = createWorkspacesService(db, undefined, audit, eventHub);
  // Server-side folders (directory sources, code graph directories): each tenant reads only its
  // own subtree, SOURCES_ROOT/<tenant id>, which the operator provisions.
  const { sourcesRoot } = config;
  const sourcesRootOf = sourcesRoot
    ? async (workspaceId: string) => {
        const tenantId = await workspaces.tenantOf(workspaceId);
        if (!tenantId) throw new Error(`workspace ${workspaceId} has no tenant`);
        return tenantSourcesRoot(sourcesRoot, tenantId);
      }
    : undefined;
  const codegraph = createCodegraphService({
    db,
    activity: { record: activity.record },
    enqueue: (payload) => queue.enqueue(CODEGRAPH_INDEX, payload, { jobId: indexJobId(payload) }),
    ...(sourcesRootOf ? { sourcesRootOf } : {}),
    syncMaxBytes: config.codegraphSyncMaxBytes,
    log,
  });
  // The knowledge_search tool reaches the search index through this closure: the index
  // embeds queries through the model gateway, which binds the tools (created below).
  const tools = createToolsService({
    definitions: await loadToolDefinitions(),
    credentials,
    codegraph,
    addressPolicy,
    knowledge: { search: (caller, input, signal) => retrieval.search(caller, input, signal) },
  });
  // Agents and workflows meet inside each other's transactions: each gets only the one
  // function it calls (the closure defers the lookup until after both exist).
  const agents = createAgentsService(db, {
    removeFromWorkflows: (tx, workspaceId, agentId) => workflows.removeAgent(tx, workspaceId, agentId),
    activity: { record: activity.record },
    checkTools: tools.checkRefs,
    boundCredentials: tools.boundCredentials,
    audit,
  });
  const workflows = createWorkflowsService(db, {
    agents: { lockExisting: agents.lockExisting },
    activity: { record: activity.record },
  });
  const modelGateway = createModelGateway({
    settings,
    credentials,
    tools,
    addressPolicy,
    // With no model configured, chat quotes the workspace's best passages (the index's default mode).
    knowledge: {
      async search({ workspaceId, userId, query, top_k }, signal) {
        const found = await retrieval.search({ workspaceId, userId }, { query, top_k }, signal);
        return found.results.map((result) => ({
          document_id: result.document.id,
          title: result.document.title,
          source: result.document.source.name,
          heading_path: result.chunk.heading_path,
          score: result.score,
          passage: result.chunk.text,
        }));
      },
    },
  });
  const retrieval = createRetrievalService({
    db,
    models: modelGateway,
    settings,
    credentials,
    localModels: createLocalModels(config.embeddingModelsDir),
    keywordOnly: (caller) => flags.enabled(caller, 'search.keyword_only'),
    onStatsError: (error) =>
      log.warn({ err: error }, 'search counts could not be written; kept for the next try'),
    onAnalyzeError: (error) => log.warn({ err: error }, 'ANALYZE of the search index failed'),
    postings: config.searchPostings,
    onPostingsError: (error) =>
      log.warn({ err: error }, 'in-memory postings could not be built; the source is searched in SQL'),
  });
  const runLog = {
    db,
    hub: eventHub,
    activity: {
      recordAll: activity.recordAll,
      insertForSource: activity.insertForSource,
      announce: activity.announce,
    },
  };
  const commit = createRunLog(runLog);
  const write = createRunWriter(runLog);
  const processOwner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const engine = createRunEngine({
    db,
    commit,
    write,
    agents,
    workflows,
    models: modelGateway,
    hub: eventHub,
    owner: processOwner,
    leaseMs: config.queue.runLeaseMs,
    // Playbooks are created below (they start runs); the engine reaches them when a run executes.
    playbooks: {
      attachmentsOfRunQuery: () => playbooks.attachmentsOfRunQuery(),
      triggersFrom: (attached, facts) => playbooks.triggersFrom(attached, facts),
      countTriggers: (db, ids) => playbooks.countTriggers(db, ids),
    },
    // Policies are created below (they read runs); agents with a policy are assembled by them.
    policies: { assembleForAgent: (input) => policies.assembleForAgent(input) },
  });
  const runs = createRunsService({
    db,
    commit,
    write,
    workflows,
    hub: eventHub,
    enqueue: (runId, jobId) => queue.enqueue(RUN_EXECUTE, { run_id: runId }, { jobId }),
    onEnqueueError: (error, runId) =>
      log.warn(
        { err: error, run_id: runId },
        'the queue did not take the run; the recovery sweep hands it over',
      ),
  });
  // Policies read their experiments' run figures through the runs service.
  const policies = createPoliciesService({ db, runs: { experimentData: runs.experimentData }, audit });
  const playbooks = createPlaybooksService({
    db,
    activity: { record: activity.record },
    workflows,
    runs,
    workspacesOf: (userId) => workspaces.listMine(userId),
    audit,
    missingInputs: (goal, inputs) => renderGoal(goal, inputs).missing,
  });
  // Knowledge: the API side records documents and runs; the indexer does their work in jobs.
  const knowledge = createKnowledgeService({
    db,
    retrieval,
    activity: { record: activity.record },
    ...(sourcesRootOf ? { sourcesRootOf } : {}),
    enqueueDocument: (id) =>
      queue.enqueue(PROCESS_DOCUMENT, { document_id: id }, { jobId: documentJobId(id) }),
    enqueueRun: (sourceId, runId) =>
      queue.enqueue(INDEX_SOURCE, { source_id: sourceId, run_id: runId }, { jobId: runJobId(runId) }),
    onEnqueueError: (error, what) =>
      log.warn(
        { err: error, ...what },
        'the queue did not take knowledge work; the recovery sweep hands it over',
      ),
  });
  const indexer = createDocumentIndexer({
    db,
    retrieval,
    activity: { record: activity.record },
    ...(sourcesRootOf ? { sourcesRootOf } : {}),
    maxBytes: config.uploadMaxBytes,
    // The embedded database serves one transaction at a time in this thread.
    sliceTransactions: database.kind === 'pglite',
    // URL sources fetch under the same address policy as every user-chosen address.
    fetchFor: (workspaceId) => createGuardedFetch(() => addressPolicy(workspaceId)),
    log,
  });
  // Each module's `<module>.jobs.ts` definitions, bound to what their handlers use
  // (`bindJob(definition, deps)`). Any process may enqueue them; RUN_MODE worker|all consumes.
  const jobs: RegisteredJob[] = [
    bindJob(executeRunJob, { engine }),
    bindJob(indexProjectJob, { codegraph }),
    bindJob(processDocumentJob, { indexer }),
    bindJob(indexSourceJob, { indexer }),
  ];
  // Started in this order, stopped in reverse. The queue comes last so it stops first: its
  // running jobs use everything before it (the model gateway's stop aborts calls still open).
  // A hub given by the caller is the caller's to start and stop.
  const analytics = createAnalyticsService({ db });
  const components: Component[] = [
    // Every process records its minutes up, for the uptime percentage.
    createHeartbeat({ db, onError: (error) => log.warn({ err: error }, 'heartbeat minute not recorded') }),
    ...(redis ? [redis] : []),
    ...(options.eventHub ? [] : [eventHub]),
    modelGateway,
    retrieval.statsComponent,
    ...(retrieval.localModelsComponent ? [retrieval.localModelsComponent] : []),
    queue,
    // Consumers sweep for runs, code indexes and documents a lost enqueue or a dead worker left behind.
    ...(config.runMode === 'api'
      ? []
      : [
          createRunRecovery({ runs, queue, log }),
          createCodegraphRecovery({ codegraph, queue, log }),
          createKnowledgeRecovery({ knowledge, queue, log }),
          createNightlyMining({ playbooks, log, owner: processOwner }),
          createRollupJob({ analytics, log }),
        ]),
  ];

  return {
    config,
    log,
    queue,
    jobs,
    components,
    keySource,
    vaultKeys,
    database,
    devKey,
    devJwks,
    verifyToken: createTokenVerifier(config.auth, devJwks),
    workspaces,
    tenants: createTenantsService({
      db,
      activity: { record: activity.record },
      seedDefaultModel: (tx, workspaceId, model) =>
        settings.update(workspaceId, 'providers', { default_model: model }, tx),
      platformAdmins: new Set(config.platformAdmins),
      audit,
      hub: eventHub,
    }),
    cors: createCorsService({
      db,
      hub: eventHub,
      platformAdmins: new Set(config.platformAdmins),
      onChange: (change) =>
        log.info({ user_id: change.userId, version: change.version }, 'CORS settings changed'),
      audit,
    }),
    eventHub,
    activity,
    audit,
    agents,
    workflows,
    runs,
    engine,
    settings,
    flags,
    credentials,
    tools,
    providers: createProvidersService({
      db,
      settings,
      credentials,
      addressPolicy,
      activity: { record: activity.record },
      audit,
    }),
    modelGateway,
    retrieval,
    chat: createChatService({ db, gateway: modelGateway, agents, policies }),
    playbooks,
    policies,
    codegraph,
    knowledge,
    indexer,
    analytics,
    system: createSystemService({
      pingDatabase: database.ping,
      databaseBusy: database.busy,
      databaseKind: database.kind,
      startedAt: new Date(),
      // Redis fills the spec's row of that name; the model providers' row is per viewer. Local
      // embedding models have a row when EMBEDDING_MODELS_DIR is set (down without their package).
      components: [
        ...(redis ? [redis] : []),
        ...(retrieval.localModelsComponent ? [retrieval.localModelsComponent] : []),
      ],
      providers: modelGateway,
      metrics: { db, analytics },
      shareMs: config.metricsShareMs,
    }),
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
