import type { Config } from '../../config.ts';
import type { Database } from '../../db/client.ts';
import type { Db } from '../../db/transaction.ts';
import { bindJob } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { AddressPolicy } from '../../lib/net/address-guard.ts';
import { createGuardedFetch } from '../../lib/net/guarded-fetch.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import type { RetrievalService } from '../retrieval/retrieval.service.ts';
import { createDocumentIndexer } from './document-indexer.ts';
import {
  createKnowledgeRecovery,
  documentJobId,
  INDEX_SOURCE,
  indexSourceJob,
  PROCESS_DOCUMENT,
  processDocumentJob,
  runJobId,
} from './knowledge.jobs.ts';
import { knowledgeRoutes } from './knowledge.routes.ts';
import { createKnowledgeService } from './knowledge.service.ts';

export interface KnowledgeModuleDependencies {
  db: Db;
  /** The embedded database serves one transaction at a time in this thread: indexing slices its work. */
  databaseKind: Database['kind'];
  /** The search index: chunks are written, removed and searched there. */
  retrieval: RetrievalService;
  activity: Pick<ActivityService, 'record'>;
  /** Each tenant's own subtree of SOURCES_ROOT; absent, no directory source can be created. */
  sourcesRootOf: ((workspaceId: string) => Promise<string>) | undefined;
  /** URL sources fetch under the same address policy as every user-chosen address. */
  addressPolicy(workspaceId: string): Promise<AddressPolicy>;
  queue: Pick<JobQueue, 'enqueue' | 'onJobsLost'>;
  config: Pick<Config, 'uploadMaxBytes'>;
  /** This process consumes jobs (RUN_MODE worker or all): it sweeps for stranded documents and runs. */
  consumes: boolean;
  log: Logger;
}

/**
 * Knowledge: the API side records sources, documents and uploads (`service`); the indexer
 * chunks and embeds them in jobs (`indexer`).
 */
export function createKnowledgeModule(deps: KnowledgeModuleDependencies) {
  const { queue, log, addressPolicy } = deps;
  const sourcesRootOf = deps.sourcesRootOf ? { sourcesRootOf: deps.sourcesRootOf } : {};
  const service = createKnowledgeService({
    db: deps.db,
    retrieval: deps.retrieval,
    activity: deps.activity,
    ...sourcesRootOf,
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
    db: deps.db,
    retrieval: deps.retrieval,
    activity: deps.activity,
    ...sourcesRootOf,
    maxBytes: deps.config.uploadMaxBytes,
    sliceTransactions: deps.databaseKind === 'pglite',
    fetchFor: (workspaceId) => createGuardedFetch(() => addressPolicy(workspaceId)),
    log,
  });
  const { uploadMaxBytes } = deps.config;
  return {
    service,
    indexer,
    routes: (app) => knowledgeRoutes(app, { knowledge: service, uploadMaxBytes }),
    jobs: [bindJob(processDocumentJob, { indexer }), bindJob(indexSourceJob, { indexer })],
    sweeps: deps.consumes ? [createKnowledgeRecovery({ knowledge: service, queue, log })] : [],
  } satisfies Module;
}
