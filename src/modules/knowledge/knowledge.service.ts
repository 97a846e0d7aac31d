import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Caller } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, conflict, type FieldError, invalid, invalidFields, notFound } from '../../errors.ts';
import { compileGlob, GlobError } from '../../lib/fs/glob.ts';
import { PathOutsideRootError, resolveWithinRoot } from '../../lib/fs/within-root.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import type { RetrievalService } from '../retrieval/retrieval.service.ts';
import { DEFAULT_CHUNKING } from './chunking.ts';
import { contentHash, toStored } from './document-indexer.ts';
import {
  type ExtractedDocument,
  ExtractionError,
  type ExtractionFailure,
  extractDocument,
} from './extract.ts';
import { documentUploaded } from './knowledge.events.ts';
import {
  type ChunkingSettings,
  createKnowledgeRepository,
  type DirectorySettings,
  type DocumentCounts,
  type DocumentFilter,
  type DocumentRow,
  type EmbeddingSettings,
  type IndexScope,
  isUniqueViolation,
  type KnowledgeRepository,
  type SourceFilter,
  type SourceKind,
  type SourceRow,
  type SourceWithCount,
  type UrlSettings,
} from './knowledge.repository.ts';
import { hostAllowed } from './page-fetcher.ts';

export type { DocumentCounts, DocumentRow } from './knowledge.repository.ts';

/** Chunking of a new source when none is given (the chunker's documented default). */
export const DEFAULT_CHUNKING_SETTINGS: ChunkingSettings = {
  target_tokens: DEFAULT_CHUNKING.targetTokens,
  overlap_tokens: DEFAULT_CHUNKING.overlapTokens,
};

/** Names tried, in order, for the default upload source created on a workspace's first upload. */
const DEFAULT_SOURCE_NAMES = ['Uploads', 'Default uploads'];

/** How each extraction failure answers an upload: status and stable code. */
const EXTRACTION_ERRORS = {
  unsupported_type: [415, 'unsupported_document_type'],
  type_mismatch: [415, 'document_type_mismatch'],
  empty: [422, 'empty_document'],
  corrupt: [422, 'corrupt_document'],
  no_text: [422, 'document_without_text'],
  too_large: [422, 'document_too_large'],
} as const satisfies Record<ExtractionFailure, readonly [number, string]>;

type Who = Pick<Caller, 'userId' | 'workspaceId'>;

export interface KnowledgeDependencies {
  db: Db;
  /** The search index: chunks go with documents and sources; it judges and defaults embedding settings. */
  retrieval: Pick<
    RetrievalService,
    'removeDocument' | 'removeSource' | 'validateEmbedding' | 'defaultEmbedding'
  >;
  activity: Pick<ActivityService, 'record'>;
  /**
   * The folder a workspace's directory sources name paths under: its tenant's own subtree of
   * `SOURCES_ROOT`, so one tenant cannot read another's files. Absent (no `SOURCES_ROOT`), no
   * directory source can be created.
   */
  sourcesRootOf?: (workspaceId: string) => Promise<string>;
  /** Hands a processing document to the queue, after its row is committed. */
  enqueueDocument(documentId: string): Promise<void>;
  /** Hands a source's run to the queue, after its row is committed. */
  enqueueRun(sourceId: string, runId: string): Promise<void>;
  /** Told when the queue did not take a job; the recovery sweep hands it over later. */
  onEnqueueError(error: unknown, what: { document_id?: string; source_id?: string }): void;
}

/** Changes to a source; only the fields given change. */
export interface UpdateSourceInput {
  name?: string;
  directory?: CreateSourceInput['directory'];
  url?: CreateSourceInput['url'];
  chunking?: ChunkingSettings;
  embedding?: EmbeddingSettings;
}

/** A new source as a client describes it. */
export interface CreateSourceInput {
  name: string;
  kind: SourceKind;
  directory?: { path: string; include?: string[]; exclude?: string[] };
  url?: { urls: string[]; allow_hosts?: string[] };
  chunking?: ChunkingSettings;
  embedding?: EmbeddingSettings;
}

/** An uploaded file with what the form said about it. */
export interface UploadInput {
  sourceId?: string;
  filename: string;
  mediaType?: string;
  bytes: Buffer;
  tags: string[];
  metadata: Record<string, unknown>;
}

/** What `reindex` is asked to rebuild; neither field means every source of the workspace. */
export interface ReindexInput {
  source_id?: string;
  document_ids?: string[];
}

/** A source as the API shows it: its row with the run's state gathered under `indexing`. */
export function sourceView(source: SourceWithCount) {
  return {
    ...source,
    indexing: {
      status: source.index_status,
      scope: source.index_scope,
      documents_total: source.documents_total,
      documents_done: source.documents_done,
      documents_failed: source.documents_failed,
      started_at: source.index_started_at,
      finished_at: source.index_finished_at,
      error: source.index_error,
    },
  };
}

/**
 * Knowledge sources and their documents: create and list sources, upload documents (kept as
 * extracted text, processed in the background), list and delete them, and start indexing
 * runs (a sync with the origin, or a reindex of stored text). The background work itself is
 * the document indexer's (`document-indexer.ts`), reached through the queue.
 */
export function createKnowledgeService(deps: KnowledgeDependencies) {
  const { db } = deps;
  const repo = createKnowledgeRepository(db);

  async function getSource(caller: Who, id: string): Promise<SourceWithCount> {
    const source = await repo.findSource(caller.workspaceId, id);
    if (!source) throw notFound('source', id);
    return source;
  }

  async function getDocument(caller: Who, id: string): Promise<DocumentRow> {
    const document = await repo.findDocument(caller.workspaceId, id);
    if (!document) throw notFound('document', id);
    return document;
  }

  async function handDocumentToQueue(documentId: string): Promise<void> {
    try {
      await deps.enqueueDocument(documentId);
    } catch (error) {
      deps.onEnqueueError(error, { document_id: documentId });
    }
  }

  async function handRunToQueue(source: Pick<SourceRow, 'id' | 'index_run_id'>): Promise<void> {
    if (!source.index_run_id) return;
    try {
      await deps.enqueueRun(source.id, source.index_run_id);
    } catch (error) {
      deps.onEnqueueError(error, { source_id: source.id });
    }
  }

  /**
   * Starts a run on each source in one transaction (all or none), after `first` (a change the
   * runs follow from, in the same transaction), then hands them to the queue.
   */
  async function startRuns(
    caller: Who,
    runs: Array<{ source: SourceRow; scope: IndexScope; documentIds?: string[] }>,
    first?: (txRepo: KnowledgeRepository) => Promise<void>,
  ): Promise<SourceWithCount[]> {
    const started = await inTransaction(db, async (tx) => {
      const txRepo = createKnowledgeRepository(tx);
      await first?.(txRepo);
      const rows: SourceRow[] = [];
      for (const run of runs) {
        const row = await txRepo.startRun(caller.workspaceId, run.source.id, {
          runId: randomUUID(),
          scope: run.scope,
          generationStep: run.scope === 'documents' ? 0 : 1,
          documentIds: run.documentIds,
          total: run.documentIds?.length ?? run.source.documents_total,
        });
        if (!row) {
          throw conflict(
            'source_indexing',
            `source ${run.source.id} is being indexed; wait for its run to finish (GET /api/sources/${run.source.id})`,
          );
        }
        rows.push(row);
      }
      return rows;
    });
    for (const row of started) await handRunToQueue(row);
    return Promise.all(started.map((row) => getSource(caller, row.id)));
  }

  /** The scope that reindexes a whole source: every stored document into a new generation. */
  const rebuild = async (source: SourceRow) => ({
    source: { ...source, documents_total: await repo.countStored(source.id) },
    scope: 'rechunk' as const,
  });

  /** The workspace's default upload source, created on its first use. */
  async function defaultUploadSource(caller: Who): Promise<SourceRow> {
    const names = [...DEFAULT_SOURCE_NAMES, `Uploads ${randomUUID().slice(0, 8)}`];
    for (const name of names) {
      const existing = await repo.findDefaultSource(caller.workspaceId);
      if (existing) return existing;
      const created = await repo.insertSource({
        workspace_id: caller.workspaceId,
        name,
        kind: 'upload',
        is_default: true,
        chunking: DEFAULT_CHUNKING_SETTINGS,
        embedding: deps.retrieval.defaultEmbedding(),
        created_by: caller.userId,
      });
      if (created) return created;
    }
    const existing = await repo.findDefaultSource(caller.workspaceId);
    if (!existing) throw new Error('the default upload source could neither be found nor created');
    return existing;
  }

  /**
   * Extracts an upload's text, turning every refusal into its 415 or 422. The extractor bounds
   * each file's time and memory itself (a file past them is `corrupt`); `signal` aborts it
   * when the client has gone.
   */
  async function extractUpload(input: UploadInput, signal?: AbortSignal): Promise<ExtractedDocument> {
    try {
      return await extractDocument({
        filename: input.filename,
        ...(input.mediaType ? { mediaType: input.mediaType } : {}),
        bytes: input.bytes,
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (!(error instanceof ExtractionError)) throw error;
      const [status, code] = EXTRACTION_ERRORS[error.reason];
      throw new AppError(status, code, error.message, [{ field: 'body.file', message: error.message }]);
    }
  }

  return {
    getSource,

    /**
     * Creates a source after checking its kind's settings (a directory must exist under
     * the tenant's SOURCES_ROOT subtree; URLs must be http(s) and allowed) and its embedding settings. A directory
     * or URL source starts its first sync at once.
     */
    async createSource(caller: Who, input: CreateSourceInput): Promise<SourceWithCount> {
      const settings = await checkKindSettings(input, await deps.sourcesRootOf?.(caller.workspaceId));
      const chunking = input.chunking ?? DEFAULT_CHUNKING_SETTINGS;
      checkChunking(chunking);
      const embedding = input.embedding ?? deps.retrieval.defaultEmbedding();
      await deps.retrieval.validateEmbedding(caller.workspaceId, embedding);
      const created = await repo.insertSource({
        workspace_id: caller.workspaceId,
        name: input.name,
        kind: input.kind,
        directory: settings.directory ?? null,
        url: settings.url ?? null,
        chunking,
        embedding,
        created_by: caller.userId,
      });
      if (!created)
        throw conflict('duplicate_source', `a source named “${input.name}” exists in this workspace`);
      if (created.kind === 'upload') return getSource(caller, created.id);
      const [started] = await startRuns(caller, [{ source: created, scope: 'sync' }]);
      return started ?? getSource(caller, created.id);
    },

    listSources: (caller: Who, filter: SourceFilter) => repo.listSources(caller.workspaceId, filter),

    /**
     * Changes a source's name or settings (only the fields sent). New folder or URL settings
     * start a sync, new chunking or embedding settings a rebuild of every document (a sync,
     * for a directory or URL source), in the same transaction: while a run is under way the
     * change is refused (409 `source_indexing`) rather than mixing settings in one index.
     */
    async updateSource(caller: Who, id: string, changes: UpdateSourceInput): Promise<SourceWithCount> {
      const source = await getSource(caller, id);
      const settings = await checkKindChanges(
        source,
        changes,
        await deps.sourcesRootOf?.(caller.workspaceId),
      );
      const chunking = changes.chunking ?? source.chunking;
      checkChunking(chunking);
      const embedding = changes.embedding ?? source.embedding;
      const embeddingChanged = !isDeepStrictEqual(embedding, source.embedding);
      if (embeddingChanged) await deps.retrieval.validateEmbedding(caller.workspaceId, embedding);
      const resync =
        (settings.directory !== undefined && !isDeepStrictEqual(settings.directory, source.directory)) ||
        (settings.url !== undefined && !isDeepStrictEqual(settings.url, source.url));
      const rebuilt = embeddingChanged || !isDeepStrictEqual(chunking, source.chunking);
      const write = async (txRepo: KnowledgeRepository) => {
        try {
          await txRepo.updateSource(source.id, {
            ...(changes.name === undefined ? {} : { name: changes.name }),
            ...settings,
            chunking,
            embedding,
          });
        } catch (error) {
          if (isUniqueViolation(error)) {
            throw conflict('duplicate_source', `a source named “${changes.name}” exists in this workspace`);
          }
          throw error;
        }
      };
      if (!resync && !rebuilt) {
        await inTransaction(db, async (tx) => write(createKnowledgeRepository(tx)));
        return getSource(caller, id);
      }
      const run = source.kind === 'upload' ? await rebuild(source) : { source, scope: 'sync' as const };
      const [started] = await startRuns(caller, [run], write);
      return started ?? getSource(caller, id);
    },

    /**
     * Starts indexing the source in the background: a directory or URL source reads its origin
     * again (new, changed and removed documents); an upload source re-chunks and re-embeds its
     * documents. Searches keep answering from the current generation until the run completes.
     */
    async indexSource(caller: Who, id: string): Promise<SourceWithCount> {
      const source = await getSource(caller, id);
      const run = source.kind === 'upload' ? await rebuild(source) : { source, scope: 'sync' as const };
      const [started] = await startRuns(caller, [run]);
      return started ?? source;
    },

    /** Deletes the source with its documents, their stored text and their chunks, in one transaction. */
    async deleteSource(caller: Who, id: string): Promise<void> {
      await inTransaction(db, async (tx) => {
        const txRepo = createKnowledgeRepository(tx);
        const source = await txRepo.findSource(caller.workspaceId, id);
        if (!source) throw notFound('source', id);
        // First the source's lock: a document being indexed finishes (or waits) before its chunks go.
        await txRepo.lockSource(id, 'update');
        await deps.retrieval.removeSource(tx, caller.workspaceId, id);
        await txRepo.deleteSource(caller.workspaceId, id);
      });
    },

    /**
     * Accepts an uploaded file into an upload source: the same bytes already there answer
     * that document (`created: false`); otherwise the text is extracted now (an unreadable
     * file is refused with 415 or 422 and nothing is stored), the document is recorded as
     * `processing` with its `document.uploaded` event, and chunking and embedding follow in
     * the background.
     */
    async upload(
      caller: Who,
      input: UploadInput,
      signal?: AbortSignal,
    ): Promise<{ document: DocumentRow; created: boolean }> {
      const source = input.sourceId
        ? await getSource(caller, input.sourceId)
        : await defaultUploadSource(caller);
      if (source.kind !== 'upload') {
        throw invalid(
          'body.source_id',
          `must name an upload source; source ${source.id} is a ${source.kind} source`,
        );
      }
      const hash = contentHash(input.bytes);
      const known = await repo.findByHash(source.id, hash);
      if (known) return { document: known, created: false };
      const extracted = await extractUpload(input, signal);
      const document = await inTransaction(db, async (tx) => {
        const txRepo = createKnowledgeRepository(tx);
        const row = await txRepo.insertDocument({
          workspace_id: caller.workspaceId,
          source_id: source.id,
          title: extracted.title?.trim() || input.filename,
          filename: input.filename,
          media_type: input.mediaType ?? null,
          format: extracted.format,
          size_bytes: input.bytes.length,
          content_hash: hash,
          status: 'processing',
          tags: input.tags,
          metadata: input.metadata,
          created_by: caller.userId,
        });
        if (!row) return undefined;
        await txRepo.putContent(caller.workspaceId, row.id, toStored(extracted));
        await deps.activity.record(tx, documentUploaded(row));
        return row;
      });
      if (!document) {
        // The same bytes won a concurrent upload.
        const winner = await repo.findByHash(source.id, hash);
        if (!winner) throw new Error('a duplicate upload found no document');
        return { document: winner, created: false };
      }
      await handDocumentToQueue(document.id);
      return { document, created: true };
    },

    getDocument,

    listDocuments: (caller: Who, filter: DocumentFilter) => repo.listDocuments(caller.workspaceId, filter),

    /** Deletes the document with its stored text and chunks, in one transaction. */
    async deleteDocument(caller: Who, id: string): Promise<void> {
      await inTransaction(db, async (tx) => {
        const txRepo = createKnowledgeRepository(tx);
        const document = await txRepo.findDocument(caller.workspaceId, id);
        if (!document) throw notFound('document', id);
        await deps.retrieval.removeDocument(tx, caller.workspaceId, id);
        await txRepo.deleteDocument(caller.workspaceId, id);
      });
    },

    /**
     * Re-chunks and re-embeds in the background, with progress on each source: listed
     * documents in place (each swapped in its own transaction), a whole source (or, with
     * neither field, every source of the workspace) into a new generation that replaces the
     * current one only once complete. All the runs start, or none (409 when one is under way).
     */
    async reindex(caller: Who, input: ReindexInput): Promise<SourceWithCount[]> {
      const scoped = input.source_id ? await getSource(caller, input.source_id) : undefined;
      if (input.document_ids) {
        const bySource = await documentsBySource(repo, caller, input.document_ids, scoped?.id);
        const sources = await Promise.all([...bySource.keys()].map((id) => getSource(caller, id)));
        return startRuns(
          caller,
          sources.map((source) => ({ source, scope: 'documents', documentIds: bySource.get(source.id) })),
        );
      }
      const sources = scoped ? [scoped] : await repo.allSources(caller.workspaceId);
      return startRuns(caller, await Promise.all(sources.map(rebuild)));
    },

    /** Documents of the workspace by state, for the system metrics (documents indexed). */
    documentCounts: (workspaceId: string): Promise<DocumentCounts> => repo.countDocuments(workspaceId),

    /**
     * Hands the queue what it may have lost: documents still processing and runs still queued
     * or running whose rows have not moved for `quietForMs` (a crash between commit and
     * enqueue, a lost worker, Redis restarted empty). A job that is still alive is not
     * duplicated (its job id is the same). Returns how many were handed over.
     */
    async recoverStranded(quietForMs = 10_000, limit = 500): Promise<number> {
      const documents = await repo.findStrandedDocuments(quietForMs, limit);
      for (const document of documents) await handDocumentToQueue(document.id);
      const runs = await repo.findUnfinishedRuns(quietForMs, limit);
      for (const run of runs) await handRunToQueue(run);
      return documents.length + runs.length;
    },
  };
}

export type KnowledgeService = ReturnType<typeof createKnowledgeService>;

/** The kind's settings, checked and completed with their defaults; 400 naming each field at fault. */
async function checkKindSettings(
  input: CreateSourceInput,
  sourcesRoot: string | undefined,
): Promise<{ directory?: DirectorySettings; url?: UrlSettings }> {
  const errors: FieldError[] = [];
  const forbid = (field: 'directory' | 'url') => {
    if (input[field] !== undefined)
      errors.push({ field: `body.${field}`, message: `is not allowed for a ${input.kind} source` });
  };
  if (input.kind === 'upload') {
    forbid('directory');
    forbid('url');
    if (errors.length > 0) throw invalidFields(errors);
    return {};
  }
  if (input.kind === 'directory') {
    forbid('url');
    if (!input.directory)
      errors.push({ field: 'body.directory', message: 'is required for a directory source' });
    if (errors.length > 0) throw invalidFields(errors);
    const directory = input.directory as NonNullable<CreateSourceInput['directory']>;
    checkGlobs(directory);
    await checkFolder(directory.path, sourcesRoot);
    return {
      directory: {
        path: directory.path,
        include: directory.include ?? ['**/*'],
        exclude: directory.exclude ?? [],
      },
    };
  }
  forbid('directory');
  if (!input.url) errors.push({ field: 'body.url', message: 'is required for a url source' });
  if (errors.length > 0) throw invalidFields(errors);
  return { url: checkUrls(input.url as NonNullable<CreateSourceInput['url']>) };
}

/** New settings of the source's own kind, checked and completed; another kind's are a 400. */
async function checkKindChanges(
  source: SourceRow,
  changes: UpdateSourceInput,
  sourcesRoot: string | undefined,
): Promise<{ directory?: DirectorySettings; url?: UrlSettings }> {
  const foreign = (['directory', 'url'] as const).filter(
    (field) => changes[field] !== undefined && field !== source.kind,
  );
  if (foreign.length > 0) {
    throw invalidFields(
      foreign.map((field) => ({
        field: `body.${field}`,
        message: `is not allowed for a ${source.kind} source`,
      })),
    );
  }
  const own =
    source.kind === 'directory' ? changes.directory : source.kind === 'url' ? changes.url : undefined;
  if (own === undefined) return {};
  return checkKindSettings({ name: source.name, kind: source.kind, [source.kind]: own }, sourcesRoot);
}

/** Every glob must compile (glob.ts: no brace bombs, no unclosed classes). */
function checkGlobs(directory: NonNullable<CreateSourceInput['directory']>): void {
  const errors: FieldError[] = [];
  for (const list of ['include', 'exclude'] as const) {
    for (const [index, pattern] of (directory[list] ?? []).entries()) {
      try {
        compileGlob(pattern);
      } catch (error) {
        if (!(error instanceof GlobError)) throw error;
        errors.push({ field: `body.directory.${list}.${index}`, message: error.message });
      }
    }
  }
  if (errors.length > 0) throw invalidFields(errors);
}

/** The folder must exist under the tenant's SOURCES_ROOT subtree, reached without leaving it (`..`, absolute, links). */
async function checkFolder(requested: string, sourcesRoot: string | undefined): Promise<void> {
  if (!sourcesRoot) {
    throw invalid(
      'body.directory.path',
      'cannot be read: no server-side folder is configured (SOURCES_ROOT)',
    );
  }
  try {
    await resolveWithinRoot(sourcesRoot, requested, 'directory');
  } catch (error) {
    if (error instanceof PathOutsideRootError) throw invalid('body.directory.path', error.message);
    throw error;
  }
}

/** Every URL absolute http(s) without credentials, on an allowed host (its own host by default). */
function checkUrls(input: NonNullable<CreateSourceInput['url']>): UrlSettings {
  const errors: FieldError[] = [];
  const parsed = input.urls.map((text, index) => {
    const url = URL.parse(text);
    const field = `body.url.urls.${index}`;
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      errors.push({ field, message: 'must be an absolute http or https URL' });
    } else if (url.username || url.password) {
      errors.push({ field, message: 'must not carry credentials' });
    }
    return url;
  });
  const allowHosts = input.allow_hosts ?? [...new Set(parsed.flatMap((url) => (url ? [url.hostname] : [])))];
  parsed.forEach((url, index) => {
    if (
      url &&
      errors.every((e) => e.field !== `body.url.urls.${index}`) &&
      !hostAllowed(url.hostname, allowHosts)
    ) {
      errors.push({
        field: `body.url.urls.${index}`,
        message: `is on ${url.hostname}, which allow_hosts does not list`,
      });
    }
  });
  if (errors.length > 0) throw invalidFields(errors);
  return { urls: input.urls, allow_hosts: allowHosts };
}

function checkChunking(chunking: ChunkingSettings): void {
  if (chunking.overlap_tokens >= chunking.target_tokens) {
    throw invalid('body.chunking.overlap_tokens', 'must be smaller than target_tokens');
  }
}

/**
 * The listed documents grouped by source, each id checked: a document of another workspace,
 * or of another source than `sourceId`, is a 400 naming its position. Documents still
 * processing are left out: their first processing is under way.
 */
async function documentsBySource(
  repo: KnowledgeRepository,
  caller: Who,
  ids: string[],
  sourceId: string | undefined,
): Promise<Map<string, string[]>> {
  const found = new Map((await repo.findDocuments(caller.workspaceId, ids)).map((row) => [row.id, row]));
  const errors: FieldError[] = [];
  const bySource = new Map<string, string[]>();
  ids.forEach((id, index) => {
    const document = found.get(id);
    if (!document) {
      errors.push({ field: `body.document_ids.${index}`, message: `is not a document of this workspace` });
    } else if (sourceId && document.source_id !== sourceId) {
      errors.push({
        field: `body.document_ids.${index}`,
        message: `is not a document of source ${sourceId}`,
      });
    } else if (document.status !== 'processing') {
      bySource.set(document.source_id, [...(bySource.get(document.source_id) ?? []), id]);
    }
  });
  if (errors.length > 0) throw invalidFields(errors);
  return bySource;
}
