import { Type } from 'typebox';
import { defineJob } from '../../jobs/job.ts';
import { createPeriodicSweep } from '../../jobs/periodic-sweep.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Component } from '../../lifecycle.ts';
import type { Logger } from '../../logger.ts';
import { type DocumentIndexer, MAX_DELIVERIES } from './document-indexer.ts';
import type { KnowledgeService } from './knowledge.service.ts';

/** The queue's name for processing one uploaded document. */
export const PROCESS_DOCUMENT = 'knowledge.process_document';
/** The queue's name for running one source's indexing run. */
export const INDEX_SOURCE = 'knowledge.index_source';

/** One job per document while it waits or runs (the id is free again once it ended). */
export const documentJobId = (documentId: string) => `document:${documentId}`;
/** One job per run while it waits or runs. */
export const runJobId = (runId: string) => `source-run:${runId}`;

/**
 * Chunks, embeds and indexes one uploaded document. The handler reads the document's row:
 * a document no longer processing is a no-op, so duplicates and re-deliveries are harmless;
 * the row counts deliveries and fails the document past `MAX_DELIVERIES`.
 */
export const processDocumentJob = defineJob({
  name: PROCESS_DOCUMENT,
  payload: Type.Object({ document_id: Type.String({ format: 'uuid' }) }),
  attempts: MAX_DELIVERIES,
  backoffMs: 2_000,
  timeoutMs: 15 * 60_000,
  handle: (deps: { indexer: Pick<DocumentIndexer, 'processDocument'> }, payload, signal) =>
    deps.indexer.processDocument(payload.document_id, signal),
});

/**
 * Runs a source's indexing run (a sync with its folder or pages, or a reindex). A
 * re-delivery continues the same run: documents it already handled carry its id.
 */
export const indexSourceJob = defineJob({
  name: INDEX_SOURCE,
  payload: Type.Object({
    source_id: Type.String({ format: 'uuid' }),
    run_id: Type.String({ format: 'uuid' }),
  }),
  attempts: MAX_DELIVERIES,
  backoffMs: 5_000,
  timeoutMs: 6 * 60 * 60_000,
  handle: (deps: { indexer: Pick<DocumentIndexer, 'runSource'> }, payload, signal) =>
    deps.indexer.runSource(payload.source_id, payload.run_id, signal),
});

export interface KnowledgeRecoveryOptions {
  knowledge: Pick<KnowledgeService, 'recoverStranded'>;
  queue: Pick<JobQueue, 'onJobsLost'>;
  log: Logger;
  /** How often a consuming process sweeps (10 s). */
  intervalMs?: number;
  /** How long a processing document or an unfinished run must have been still (15 s). */
  quietForMs?: number;
}

/**
 * The sweep of a consuming process: at start (everything unfinished), every `intervalMs`, and
 * when the queue says it forgot its jobs, it hands the queue again every document still
 * processing and every run still queued or running. The rows are the truth, so a lost
 * enqueue or a dead worker costs a delay, never a document.
 */
export function createKnowledgeRecovery(options: KnowledgeRecoveryOptions): Component {
  const quietForMs = options.quietForMs ?? 15_000;
  return createPeriodicSweep({
    name: 'Knowledge recovery',
    log: options.log,
    intervalMs: options.intervalMs ?? 10_000,
    failure: 'the knowledge sweep failed; it runs again shortly',
    atStart: true,
    alsoOn: (sweep) => options.queue.onJobsLost(sweep),
    // Urgent (start, jobs lost): everything unfinished; periodic: only what has been still a while.
    async work(reason) {
      const count = await options.knowledge.recoverStranded(reason === 'urgent' ? 0 : quietForMs);
      if (count > 0) options.log.info({ jobs: count }, 'handed unfinished knowledge work to the queue again');
      return count;
    },
  });
}
