import { createHash } from 'node:crypto';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { GlobError } from '../../lib/fs/glob.ts';
import { type FoundFile, readFoundFile, TooManyFilesError, walkFiles } from '../../lib/fs/walk-files.ts';
import { PathOutsideRootError, resolveWithinRoot } from '../../lib/fs/within-root.ts';
import type { FetchFunction } from '../../lib/net/guarded-fetch.ts';
import type { Logger } from '../../logger.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import type { IndexedChunk, PreparedChunks, RetrievalService } from '../retrieval/retrieval.service.ts';
import type { Chunk } from './chunking.ts';
import { chunkStoredDocument, type ExtractedDocument, ExtractionError, extractDocument } from './extract.ts';
import { documentFailed, documentProcessed, sourceIndexed, sourceIndexFailed } from './knowledge.events.ts';
import {
  createKnowledgeRepository,
  type DocumentChanges,
  type DocumentRow,
  type KnowledgeRepository,
  type NewDocument,
  type SourceRow,
  type StoredExtraction,
} from './knowledge.repository.ts';
import { fetchPage, PageFetchError } from './page-fetcher.ts';

/** Deliveries of a document's or a run's job before it fails for good (the jobs' attempts). */
export const MAX_DELIVERIES = 5;
/** Files a directory source may hold (matching its globs). */
export const MAX_DIRECTORY_FILES = 10_000;
/** How long one page of a URL source may take to arrive. */
const PAGE_TIMEOUT_MS = 30_000;
const PAGE_MAX_REDIRECTS = 5;
/** Documents read per query while a run walks its stored documents. */
const BATCH = 50;
const NO_TEXT = 'the document has no text to index';

export interface IndexerDependencies {
  db: Db;
  retrieval: Pick<
    RetrievalService,
    'prepare' | 'slices' | 'writeChunks' | 'activateGeneration' | 'removeDocument'
  >;
  activity: Pick<ActivityService, 'record'>;
  /** The tenant's subtree of `SOURCES_ROOT` a workspace's folders are under; none can be read when absent. */
  sourcesRootOf?: (workspaceId: string) => Promise<string>;
  /** The largest file a directory or URL source takes (`UPLOAD_MAX_BYTES`). */
  maxBytes: number;
  /**
   * Write an upload's chunks one slice per transaction (the embedded database, which serves
   * one transaction at a time in the service's thread), rather than all in one transaction
   * (PostgreSQL, whose other connections serve other requests meanwhile).
   */
  sliceTransactions?: boolean;
  /** The outbound address guard's fetch under the workspace's policy. */
  fetchFor(workspaceId: string): FetchFunction;
  log: Logger;
}

/** The run was replaced or its source deleted while it worked: it stops without a trace. */
class RunSuperseded extends Error {
  constructor() {
    super('the run is no longer the source’s current run');
    this.name = 'RunSuperseded';
  }
}

/** The source's generation changed while an upload's slices were written: the job starts it again. */
class GenerationMoved extends Error {
  constructor() {
    super('the source was rebuilt while the document was written; processing starts again');
    this.name = 'GenerationMoved';
  }
}

/** A failure retrying cannot cure (the folder is gone, too many files): the run fails at once. */
class RunFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunFailure';
  }
}

/** SHA-256 of the bytes, hex: a document's identity within its source. */
export const contentHash = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The extractor's answer as the `document_contents` column stores it. */
export const toStored = (extracted: ExtractedDocument): StoredExtraction => ({ ...extracted });

/**
 * What reading an item of the origin gave: its bytes (with the declared type, and the name of
 * where it really came from after redirects), or why there are none.
 */
type ItemBytes = { bytes: Buffer; mediaType?: string; filename?: string } | { failure: string };

/** One item a sync run met at the origin: a file of the folder or a page of the list. */
interface OriginItem {
  /** Where it was found: the path relative to the folder, or the URL. */
  origin: string;
  filename: string;
  read(signal: AbortSignal): Promise<ItemBytes>;
}

/** Which document a run's write is about: one that exists, or one to create. */
type Target = { id: string; changes?: DocumentChanges } | { create: NewDocument };

/**
 * The background half of knowledge: turns stored documents into searchable chunks and keeps
 * sources in step with their origin. Every entry point is idempotent, because the queue
 * delivers at least once: the rows say what is done (a document's status, the run a
 * document was last handled by), and a repeated delivery skips it.
 *
 * Slow work (reading files, fetching pages, extraction, embeddings) happens outside any
 * transaction; a document's chunks are written in one short transaction together with its
 * status, so a search sees its old chunks or its new ones, never none. Row locks are taken
 * source first, then document, everywhere.
 */
export function createDocumentIndexer(deps: IndexerDependencies) {
  const { db, retrieval, activity } = deps;
  const repo = createKnowledgeRepository(db);

  /**
   * A document's chunks, cut in the extraction pool (off the event loop) within the limit its
   * file's size sets (document-limits.ts), or why it has none to index: no text, too many
   * chunks, or chunking passed the pool's time or memory limit.
   */
  async function chunksOf(
    content: StoredExtraction | undefined,
    source: SourceRow,
    file: { size_bytes: number; filename: string },
    signal: AbortSignal,
  ): Promise<IndexedChunk[] | { failure: string }> {
    if (!content) return { failure: NO_TEXT };
    let chunks: Chunk[];
    try {
      chunks = await chunkStoredDocument({
        // The column holds what `extractDocument` returned.
        document: content as ExtractedDocument,
        options: {
          targetTokens: source.chunking.target_tokens,
          overlapTokens: source.chunking.overlap_tokens,
        },
        sizeBytes: file.size_bytes,
        filename: file.filename,
        signal,
      });
    } catch (error) {
      if (error instanceof ExtractionError) return { failure: error.message };
      throw error;
    }
    if (chunks.length === 0) return { failure: NO_TEXT };
    return chunks.map(({ position, text, headingPath, tokenCount }) => ({
      position,
      text,
      headingPath,
      tokenCount,
    }));
  }

  /** The generation a run writes: the current one for a `documents` run, else the new one. */
  const targetOf = (source: SourceRow) =>
    source.index_scope === 'documents' ? source.generation : source.index_target_generation;

  // ---- Uploads -------------------------------------------------------------------------------

  /**
   * Processes one uploaded document (status `processing`): chunks its stored text, embeds the
   * chunks, and writes them into the source's current generation with the status `processed`.
   * A document that is gone or no longer processing is left alone.
   */
  async function processDocument(documentId: string, signal: AbortSignal): Promise<void> {
    const document = await repo.claimProcessing(documentId);
    if (!document) return;
    if (document.processing_attempts > MAX_DELIVERIES) {
      const last = document.failure_reason ? `: ${document.failure_reason}` : '';
      return failProcessing(document, `processing gave up after ${MAX_DELIVERIES} attempts${last}`);
    }
    const source = await repo.findSourceById(document.source_id);
    if (!source) return;
    const chunks = await chunksOf(await repo.getContent(document.id), source, document, signal);
    if ('failure' in chunks) return failProcessing(document, chunks.failure);
    let prepared: PreparedChunks;
    try {
      prepared = await retrieval.prepare(document.workspace_id, source.embedding, chunks, signal);
    } catch (error) {
      signal.throwIfAborted();
      deps.log.warn({ err: error, document_id: document.id }, 'document processing failed; the job retries');
      // Shown while the document is still processing, and in the reason if it gives up.
      await repo.updateDocument(document.id, { failure_reason: describe(error) }).catch(() => {});
      throw error;
    }
    // On the embedded database a slice at a time, each in a transaction of its own, so that it
    // serves other requests between them (a document's chunks in one transaction held it for
    // seconds); on PostgreSQL one transaction (other connections serve meanwhile).
    const slices = deps.sliceTransactions ? retrieval.slices(prepared) : [prepared];
    let generation: number | undefined;
    for (const [index, slice] of slices.entries()) {
      const last = index === slices.length - 1;
      // PGlite answers within microtasks: without a turn of the event loop between slices, no
      // socket would be read nor timer fired until the last one (11 s for a 2 MB text).
      if (index > 0) await nextTurn();
      const written = await inTransaction(db, async (tx) => {
        const txRepo = createKnowledgeRepository(tx);
        const locked = await txRepo.lockSource(source.id, 'share');
        const current = await txRepo.lockDocument(document.id);
        if (!locked || current?.status !== 'processing') return false;
        // A rebuild swapped generations between slices (dropping the ones written): start again.
        if (generation !== undefined && locked.generation !== generation) throw new GenerationMoved();
        generation = locked.generation;
        const target = {
          workspaceId: locked.workspace_id,
          sourceId: locked.id,
          documentId: current.id,
          generation,
        };
        await retrieval.writeChunks(tx, target, slice, { replace: index === 0 });
        if (!last) return true;
        const processed = await markProcessed(txRepo, current.id, prepared.chunks.length, generation);
        await activity.record(tx, documentProcessed(processed));
        return true;
      });
      if (!written) return;
    }
  }

  async function failProcessing(document: DocumentRow, reason: string): Promise<void> {
    await inTransaction(db, async (tx) => {
      const txRepo = createKnowledgeRepository(tx);
      const current = await txRepo.lockDocument(document.id);
      if (current?.status !== 'processing') return;
      // Slices an earlier attempt wrote are searchable; a failed document has no chunks.
      await retrieval.removeDocument(tx, document.workspace_id, document.id);
      const failed = await txRepo.updateDocument(document.id, { status: 'failed', failure_reason: reason });
      if (failed) await activity.record(tx, documentFailed(failed));
    });
  }

  /** Writes a document's chunks into `generation` and marks it processed (in the caller's transaction). */
  async function writeIndexed(
    tx: Db,
    txRepo: KnowledgeRepository,
    source: SourceRow,
    documentId: string,
    prepared: PreparedChunks,
    generation: number,
    changes: DocumentChanges = {},
    earlier = 0,
  ): Promise<DocumentRow> {
    const target = { workspaceId: source.workspace_id, sourceId: source.id, documentId, generation };
    // `earlier` chunks were written by earlier transactions of this run: they stay.
    await retrieval.writeChunks(tx, target, prepared, { replace: earlier === 0 });
    return markProcessed(txRepo, documentId, earlier + prepared.chunks.length, generation, changes);
  }

  /** Marks a document processed with `chunks` chunks in `generation` (in the caller's transaction). */
  async function markProcessed(
    txRepo: KnowledgeRepository,
    documentId: string,
    chunks: number,
    generation: number,
    changes: DocumentChanges = {},
  ): Promise<DocumentRow> {
    const processed = await txRepo.updateDocument(documentId, {
      ...changes,
      status: 'processed',
      failure_reason: null,
      chunk_count: chunks,
      indexed_generation: generation,
      indexed_at: new Date(),
    });
    if (!processed) throw new Error(`document ${documentId} vanished under its lock`);
    return processed;
  }

  // ---- Runs ----------------------------------------------------------------------------------

  /**
   * Runs the source's current run (`runId`) to its end: reads the origin again (`sync`) or
   * re-chunks stored documents (`rechunk`, `documents`), then completes it. A re-delivery
   * continues where the last one stopped; a failure retrying cannot cure fails the run at
   * once, and past `MAX_DELIVERIES` the run fails with its last error.
   */
  async function runSource(sourceId: string, runId: string, signal: AbortSignal): Promise<void> {
    const source = await repo.claimRun(sourceId, runId);
    if (!source) return;
    if (source.index_attempts > MAX_DELIVERIES) {
      const last = source.index_error ? `: ${source.index_error}` : '';
      return failRun(source, runId, `indexing gave up after ${MAX_DELIVERIES} attempts${last}`);
    }
    await repo.recountProgress(sourceId, runId);
    try {
      if (source.index_scope === 'sync') await syncOrigin(source, runId, signal);
      else await rechunkStored(source, runId, signal, source.index_document_ids ?? undefined);
      await completeRun(source, runId, signal);
    } catch (error) {
      if (error instanceof RunSuperseded) return;
      if (error instanceof RunFailure) return failRun(source, runId, error.message);
      signal.throwIfAborted();
      deps.log.warn({ err: error, source_id: sourceId }, 'source indexing failed; the job retries');
      // Kept on the run so that its last error shows while the job retries.
      await repo.updateSource(sourceId, { index_error: describe(error) }).catch(() => {});
      throw error;
    }
  }

  /** Re-chunks the source's stored documents (all, or those among `ids`) the run has not handled. */
  async function rechunkStored(source: SourceRow, runId: string, signal: AbortSignal, ids?: string[]) {
    for (;;) {
      signal.throwIfAborted();
      const batch = await repo.documentsToHandle(source.id, runId, { ids, limit: BATCH });
      if (batch.length === 0) return;
      for (const document of batch) await rechunkOne(source, runId, document, signal);
    }
  }

  /** Re-chunks one stored document into the run's generation. */
  async function rechunkOne(
    source: SourceRow,
    runId: string,
    document: DocumentRow,
    signal: AbortSignal,
    changes?: DocumentChanges,
  ) {
    signal.throwIfAborted();
    const content = await repo.getContent(document.id);
    const chunks = await chunksOf(content, source, document, signal);
    if ('failure' in chunks) {
      const reason = content ? chunks.failure : (document.failure_reason ?? NO_TEXT);
      return markFailed(source, runId, { id: document.id, changes }, reason);
    }
    const prepared = await retrieval.prepare(source.workspace_id, source.embedding, chunks, signal);
    await markIndexed(source, runId, { id: document.id, changes }, prepared);
  }

  /**
   * In one transaction: checks the run is still current, finds (or creates) the document,
   * writes its chunks into the run's generation and marks it processed and handled by the
   * run. The feed hears of documents that are new or were failed. Counted after the commit.
   */
  async function markIndexed(
    source: SourceRow,
    runId: string,
    target: Target,
    prepared: PreparedChunks,
    content?: StoredExtraction,
  ): Promise<void> {
    const { last, earlier } = await writeAheadSlices(source, runId, target, prepared);
    const written = await inTransaction(db, async (tx) => {
      const txRepo = createKnowledgeRepository(tx);
      const locked = await lockRun(txRepo, source.id, runId);
      const found = await findTarget(txRepo, target);
      if (!found) return false;
      if (content) await txRepo.putContent(source.workspace_id, found.row.id, content);
      const changes = { ...found.changes, index_run_id: runId };
      const generation = targetOf(locked);
      const processed = await writeIndexed(
        tx,
        txRepo,
        locked,
        found.row.id,
        last,
        generation,
        changes,
        earlier,
      );
      if (found.created || found.row.status === 'failed' || content) {
        await activity.record(tx, documentProcessed(processed));
      }
      return true;
    });
    if (written) await repo.addProgress(source.id, runId, { done: 1 });
  }

  /**
   * On the embedded database, writes all but the last slice of an existing document's chunks
   * into the run's new generation, each in a transaction of its own, so that the database
   * serves other requests between them; the last slice goes with the document's status
   * (`markIndexed`). Only where no search reads them until the run completes: a new
   * generation, not a `documents` run's in-place rewrite, whose chunks must change at once.
   */
  async function writeAheadSlices(
    source: SourceRow,
    runId: string,
    target: Target,
    prepared: PreparedChunks,
  ): Promise<{ last: PreparedChunks; earlier: number }> {
    if (!deps.sliceTransactions || !('id' in target) || source.index_scope === 'documents') {
      return { last: prepared, earlier: 0 };
    }
    const slices = retrieval.slices(prepared);
    let earlier = 0;
    for (const slice of slices.slice(0, -1)) {
      await nextTurn();
      await inTransaction(db, async (tx) => {
        const locked = await lockRun(createKnowledgeRepository(tx), source.id, runId);
        const generation = targetOf(locked);
        const into = {
          workspaceId: source.workspace_id,
          sourceId: source.id,
          documentId: target.id,
          generation,
        };
        await retrieval.writeChunks(tx, into, slice, { replace: earlier === 0 });
      });
      earlier += slice.chunks.length;
    }
    await nextTurn();
    return { last: slices.at(-1) ?? prepared, earlier };
  }

  /**
   * Marks a document failed with `reason` and handled by the run; a synced document loses its
   * stored text (its chunks go at the generation swap). The feed hears of new failures only.
   */
  async function markFailed(source: SourceRow, runId: string, target: Target, reason: string): Promise<void> {
    const failed = await inTransaction(db, async (tx) => {
      const txRepo = createKnowledgeRepository(tx);
      await lockRun(txRepo, source.id, runId);
      const found = await findTarget(txRepo, target);
      if (!found) return false;
      const known = !found.created && found.row.status === 'failed' && found.row.failure_reason === reason;
      if (found.row.origin !== null) await txRepo.deleteContent(found.row.id);
      const updated = await txRepo.updateDocument(found.row.id, {
        ...found.changes,
        status: 'failed',
        failure_reason: reason,
        chunk_count: 0,
        index_run_id: runId,
      });
      if (updated && !known) await activity.record(tx, documentFailed(updated));
      return true;
    });
    if (failed) await repo.addProgress(source.id, runId, { failed: 1 });
  }

  /** Removes a synced document and its chunks at once (its place was taken by a moved one). */
  async function removeDocument(source: SourceRow, runId: string, documentId: string): Promise<void> {
    await inTransaction(db, async (tx) => {
      const txRepo = createKnowledgeRepository(tx);
      await lockRun(txRepo, source.id, runId);
      await retrieval.removeDocument(tx, source.workspace_id, documentId);
      await txRepo.deleteDocument(source.workspace_id, documentId);
    });
  }

  /** The source, share-locked, while `runId` is its run; a run that was replaced stops here. */
  async function lockRun(txRepo: KnowledgeRepository, sourceId: string, runId: string): Promise<SourceRow> {
    const locked = await txRepo.lockSource(sourceId, 'share');
    if (locked?.index_run_id !== runId) throw new RunSuperseded();
    return locked;
  }

  async function findTarget(
    txRepo: KnowledgeRepository,
    target: Target,
  ): Promise<{ row: DocumentRow; created: boolean; changes?: DocumentChanges } | undefined> {
    if ('create' in target) {
      const row = await txRepo.insertDocument(target.create);
      return row ? { row, created: true } : undefined;
    }
    const row = await txRepo.lockDocument(target.id);
    return row ? { row, created: false, changes: target.changes } : undefined;
  }

  /** Reads the folder or the pages again and handles each item; what is gone goes at completion. */
  async function syncOrigin(source: SourceRow, runId: string, signal: AbortSignal): Promise<void> {
    const items = source.kind === 'directory' ? await directoryItems(source, signal) : urlItems(source);
    await repo.addProgress(source.id, runId, { total: items.length });
    const origins = new Set(items.map((item) => item.origin));
    for (const item of items) {
      signal.throwIfAborted();
      await syncItem(source, runId, item, origins, signal);
    }
  }

  async function directoryItems(source: SourceRow, signal: AbortSignal): Promise<OriginItem[]> {
    const settings = source.directory;
    if (!settings) throw new RunFailure('the source has no folder');
    if (!deps.sourcesRootOf)
      throw new RunFailure('no server-side folder can be read: SOURCES_ROOT is not set');
    const root = await deps.sourcesRootOf(source.workspace_id);
    let files: FoundFile[];
    try {
      const folder = await resolveWithinRoot(root, settings.path, 'directory');
      files = await walkFiles(folder, {
        include: settings.include,
        exclude: settings.exclude,
        maxFiles: MAX_DIRECTORY_FILES,
        signal,
      });
    } catch (error) {
      if (
        error instanceof PathOutsideRootError ||
        error instanceof TooManyFilesError ||
        error instanceof GlobError
      ) {
        throw new RunFailure(error.message);
      }
      throw error;
    }
    return files.map((file) => ({
      origin: file.relativePath,
      filename: path.posix.basename(file.relativePath),
      read: async () => {
        if (file.sizeBytes > deps.maxBytes) return { failure: tooLarge(deps.maxBytes) };
        const bytes = await readFoundFile(file, deps.maxBytes).catch(() => undefined);
        return bytes ? { bytes } : { failure: 'the file changed or vanished while it was read' };
      },
    }));
  }

  function urlItems(source: SourceRow): OriginItem[] {
    const settings = source.url;
    if (!settings) throw new RunFailure('the source has no URLs');
    const fetch = deps.fetchFor(source.workspace_id);
    const allowHosts =
      settings.allow_hosts.length > 0
        ? settings.allow_hosts
        : settings.urls.flatMap((url) => URL.parse(url)?.hostname ?? []);
    return settings.urls.map((url) => ({
      origin: url,
      filename: pageName(url),
      read: async (signal) => {
        try {
          const page = await fetchPage(fetch, url, {
            allowHosts,
            maxBytes: deps.maxBytes,
            timeoutMs: PAGE_TIMEOUT_MS,
            maxRedirects: PAGE_MAX_REDIRECTS,
            signal,
          });
          return {
            bytes: page.bytes,
            filename: page.filename,
            ...(page.mediaType ? { mediaType: page.mediaType } : {}),
          };
        } catch (error) {
          if (error instanceof PageFetchError) return { failure: error.message };
          throw error;
        }
      },
    }));
  }

  /**
   * One file or page of a sync. Unchanged content is re-chunked from the stored text (no new
   * extraction); content another document of the source holds is that document, renamed when
   * its own origin is gone (a moved file), skipped otherwise (a copy); new or changed content
   * is extracted and indexed; what cannot be read or extracted becomes a failed document.
   */
  async function syncItem(
    source: SourceRow,
    runId: string,
    item: OriginItem,
    origins: Set<string>,
    signal: AbortSignal,
  ) {
    const existing = await repo.findByOrigin(source.id, item.origin);
    if (existing?.index_run_id === runId) return;
    const read = await item.read(signal);
    const fresh = (hash: string | null): NewDocument => originDocument(source, item, hash, read);
    const target = (hash: string | null, changes: DocumentChanges): Target =>
      existing ? { id: existing.id, changes } : { create: { ...fresh(hash), ...changes } };
    if ('failure' in read) {
      return markFailed(source, runId, target(null, { content_hash: null, size_bytes: 0 }), read.failure);
    }
    const hash = contentHash(read.bytes);
    if (existing?.content_hash === hash) {
      return existing.status === 'failed'
        ? markFailed(source, runId, { id: existing.id }, existing.failure_reason ?? 'failed')
        : rechunkOne(source, runId, existing, signal);
    }
    const twin = await repo.findByHash(source.id, hash);
    if (twin) {
      if (twin.origin !== null && origins.has(twin.origin)) {
        await repo.addProgress(source.id, runId, { done: 1 });
        return;
      }
      // A moved file: the document follows it (after the one that was at its new place).
      if (existing) await removeDocument(source, runId, existing.id);
      return rechunkOne(source, runId, twin, signal, { origin: item.origin, filename: item.filename });
    }
    const filename = read.filename ?? item.filename;
    const sized = {
      content_hash: hash,
      size_bytes: read.bytes.length,
      media_type: read.mediaType ?? null,
      filename,
    };
    let extracted: ExtractedDocument;
    try {
      extracted = await extractDocument({
        filename,
        ...(read.mediaType ? { mediaType: read.mediaType } : {}),
        bytes: read.bytes,
        signal,
      });
    } catch (error) {
      if (error instanceof ExtractionError)
        return markFailed(source, runId, target(hash, sized), error.message);
      throw error;
    }
    const content = toStored(extracted);
    const chunks = await chunksOf(content, source, { size_bytes: read.bytes.length, filename }, signal);
    if ('failure' in chunks) return markFailed(source, runId, target(hash, sized), chunks.failure);
    const prepared = await retrieval.prepare(source.workspace_id, source.embedding, chunks, signal);
    const described = { ...sized, title: extracted.title?.trim() || filename, format: extracted.format };
    await markIndexed(source, runId, target(hash, described), prepared, content);
  }

  /**
   * Completes the run in one transaction: the generation swap (none for a `documents` run),
   * for a sync the removal of documents the origin no longer has, the final counts and the
   * `source.indexed` event. Uploads processed into the old generation while a `rechunk` ran
   * are re-chunked first, under the source's lock, so none is lost at the swap.
   */
  async function completeRun(source: SourceRow, runId: string, signal: AbortSignal): Promise<void> {
    for (;;) {
      signal.throwIfAborted();
      const stale = await inTransaction(db, async (tx) => {
        const txRepo = createKnowledgeRepository(tx);
        const locked = await txRepo.lockSource(source.id, 'update');
        if (locked?.index_run_id !== runId) throw new RunSuperseded();
        const target = targetOf(locked);
        if (locked.index_scope === 'rechunk') {
          const left = await txRepo.documentsToHandle(source.id, runId, { staleBelow: target, limit: BATCH });
          if (left.length > 0) return left;
        }
        if (locked.index_scope !== 'documents') {
          await retrieval.activateGeneration(tx, source.workspace_id, source.id, target);
        }
        if (locked.index_scope === 'sync') await txRepo.deleteUnseen(source.id, runId);
        const done = await txRepo.finishRun(source.id, runId, { status: 'completed', generation: target });
        if (done) await activity.record(tx, sourceIndexed(done));
        return [];
      });
      if (stale.length === 0) return;
      for (const document of stale) await rechunkOne(source, runId, document, signal);
    }
  }

  /** Ends the run as failed with `error`; documents keep the chunks they had. */
  async function failRun(source: SourceRow, runId: string, error: string): Promise<void> {
    const failed = await inTransaction(db, async (tx) => {
      const row = await createKnowledgeRepository(tx).finishRun(source.id, runId, {
        status: 'failed',
        error,
      });
      if (row) await activity.record(tx, sourceIndexFailed(row));
      return row;
    });
    if (failed) deps.log.warn({ source_id: source.id, error }, 'source indexing failed');
  }

  return { processDocument, runSource };
}

export type DocumentIndexer = ReturnType<typeof createDocumentIndexer>;

/** The document row a sync item starts from. */
function originDocument(
  source: SourceRow,
  item: OriginItem,
  hash: string | null,
  read: ItemBytes,
): NewDocument {
  return {
    workspace_id: source.workspace_id,
    source_id: source.id,
    title: item.filename,
    filename: item.filename,
    origin: item.origin,
    media_type: 'bytes' in read ? (read.mediaType ?? null) : null,
    size_bytes: 'bytes' in read ? read.bytes.length : 0,
    content_hash: hash,
  };
}

/** A page's file name: its path's last segment, or the host for a site's root. */
function pageName(url: string): string {
  const parsed = URL.parse(url);
  return path.posix.basename(parsed?.pathname ?? '') || parsed?.hostname || url;
}

const tooLarge = (maxBytes: number) => `the file is larger than the upload limit of ${maxBytes} bytes`;

/**
 * An error as the run's `index_error` shows it to clients: the message of an error raised on
 * purpose (a provider's refusal, say), nothing of anything else (a database error's message
 * holds SQL); the log has the details.
 */
function describe(error: unknown): string {
  return error instanceof AppError
    ? error.message.slice(0, 500)
    : 'an unexpected error; the server log has the details';
}
