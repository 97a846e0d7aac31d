import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import {
  and,
  asc,
  count,
  desc,
  eq,
  getTableColumns,
  ilike,
  inArray,
  isNull,
  lt,
  ne,
  or,
  sql,
} from 'drizzle-orm';
import { likePattern, paginate, totalCount } from '../../db/queries.ts';
import {
  type CompressedExtraction,
  type DocumentStatus,
  documentContents,
  documents,
  type IndexScope,
  type SourceKind,
  type StoredExtraction,
  sources,
} from '../../db/schema/knowledge.ts';
import type { Db } from '../../db/transaction.ts';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export type {
  ChunkingSettings,
  DirectorySettings,
  DocumentStatus,
  EmbeddingSettings,
  IndexScope,
  IndexStatus,
  SourceKind,
  StoredExtraction,
  UrlSettings,
} from '../../db/schema/knowledge.ts';

export type SourceRow = typeof sources.$inferSelect;
export type NewSource = Omit<typeof sources.$inferInsert, 'id' | 'created_at' | 'updated_at'>;
export type SourceChanges = Partial<Omit<NewSource, 'workspace_id' | 'kind' | 'created_by'>>;
export type DocumentRow = typeof documents.$inferSelect;
export type NewDocument = Omit<typeof documents.$inferInsert, 'id' | 'created_at' | 'updated_at'>;
export type DocumentChanges = Partial<Omit<NewDocument, 'workspace_id' | 'source_id' | 'created_by'>>;

/** Filters of the source list. */
export interface SourceFilter {
  kind?: SourceKind;
  q?: string;
  limit: number;
  offset: number;
}

/** Filters of the document list; every one is optional. */
export interface DocumentFilter {
  source_id?: string;
  q?: string;
  tag?: string;
  status?: DocumentStatus;
  limit: number;
  offset: number;
}

/** Documents of a workspace by processing state. */
export interface DocumentCounts {
  processed: number;
  processing: number;
  failed: number;
}

/** A source as the API shows it: the row with its number of documents. */
export type SourceWithCount = SourceRow & { document_count: number };

/** Runs that count as unfinished: the sweep hands their job to the queue again. */
const UNFINISHED_RUN = ['queued', 'running'] as const;

/** PostgreSQL's unique_violation: a concurrent write (or a rename) took the same key. */
export const isUniqueViolation = (error: unknown): boolean =>
  (error as { code?: string }).code === '23505' ||
  (error as { cause?: { code?: string } }).cause?.code === '23505';

/** Data access for sources, documents and their extracted text; scoped by workspace where a caller reads. */
export function createKnowledgeRepository(db: Db) {
  const sourceById = (workspaceId: string, id: string) =>
    and(eq(sources.workspace_id, workspaceId), eq(sources.id, id));
  const documentById = (workspaceId: string, id: string) =>
    and(eq(documents.workspace_id, workspaceId), eq(documents.id, id));
  // Written out: drizzle leaves the columns of a one-table select unqualified, and an
  // unqualified `id` inside the subquery would be the document's own.
  const documentCount = sql<number>`(select count(*) from "documents" d where d."source_id" = "sources"."id")`
    .mapWith(Number)
    .as('document_count');

  return {
    /** Inserts the source, or returns undefined when its name (or the default slot) is taken. */
    async insertSource(values: NewSource): Promise<SourceRow | undefined> {
      const [row] = await db.insert(sources).values(values).onConflictDoNothing().returning();
      return row;
    },

    async findSource(workspaceId: string, id: string): Promise<SourceWithCount | undefined> {
      const [row] = await db
        .select({ ...getTableColumns(sources), document_count: documentCount })
        .from(sources)
        .where(sourceById(workspaceId, id));
      return row;
    },

    /** For the background jobs, which are handed a source id and read the workspace from the row. */
    async findSourceById(id: string): Promise<SourceRow | undefined> {
      const [row] = await db.select().from(sources).where(eq(sources.id, id));
      return row;
    },

    /** The source row, locked until the transaction ends (`update`: exclusive; `share`: against changes). */
    async lockSource(id: string, mode: 'update' | 'share'): Promise<SourceRow | undefined> {
      const [row] = await db.select().from(sources).where(eq(sources.id, id)).for(mode);
      return row;
    },

    async findDefaultSource(workspaceId: string): Promise<SourceRow | undefined> {
      const [row] = await db
        .select()
        .from(sources)
        .where(and(eq(sources.workspace_id, workspaceId), eq(sources.is_default, true)));
      return row;
    },

    /** Newest first, then by id, so pages are stable while sources are added. */
    async listSources(workspaceId: string, filter: SourceFilter) {
      const where = and(
        eq(sources.workspace_id, workspaceId),
        filter.kind ? eq(sources.kind, filter.kind) : undefined,
        filter.q ? ilike(sources.name, likePattern(filter.q)) : undefined,
      );
      const rows = await db
        .select({ ...getTableColumns(sources), document_count: documentCount, total: totalCount() })
        .from(sources)
        .where(where)
        .orderBy(desc(sources.created_at), desc(sources.id))
        .limit(filter.limit)
        .offset(filter.offset);
      return paginate(filter, rows, async () => {
        const [result] = await db.select({ value: count() }).from(sources).where(where);
        return result?.value ?? 0;
      });
    },

    /** Every source of the workspace, oldest first (a reindex of them all). */
    async allSources(workspaceId: string): Promise<SourceRow[]> {
      return db
        .select()
        .from(sources)
        .where(eq(sources.workspace_id, workspaceId))
        .orderBy(asc(sources.created_at), asc(sources.id));
    },

    async updateSource(id: string, changes: SourceChanges): Promise<SourceRow | undefined> {
      const [row] = await db
        .update(sources)
        .set({ ...changes, updated_at: sql`now()` })
        .where(eq(sources.id, id))
        .returning();
      return row;
    },

    /**
     * Starts a run on the source unless one is queued or running: the run gets a new id and
     * its counters start at zero. `generationStep` 1 writes a new generation (past any an
     * abandoned run used) when the source has documents to keep searchable meanwhile, and the
     * current one when it has none (its first sync); 0 rewrites the current one. Undefined
     * when a run is under way.
     */
    async startRun(
      workspaceId: string,
      id: string,
      run: {
        runId: string;
        scope: IndexScope;
        generationStep: 0 | 1;
        documentIds?: string[];
        total?: number;
      },
    ): Promise<SourceRow | undefined> {
      const target =
        run.generationStep === 1
          ? sql`case when exists (select 1 from "documents" d where d."source_id" = ${id})
              then greatest(${sources.generation}, ${sources.index_target_generation}) + 1
              else ${sources.generation} end`
          : sql`${sources.generation}`;
      const [row] = await db
        .update(sources)
        .set({
          index_status: 'queued',
          index_scope: run.scope,
          index_run_id: run.runId,
          index_target_generation: target,
          index_document_ids: run.documentIds ?? null,
          documents_total: run.total ?? 0,
          documents_done: 0,
          documents_failed: 0,
          index_started_at: null,
          index_finished_at: null,
          index_error: null,
          index_attempts: 0,
          updated_at: sql`now()`,
        })
        .where(and(sourceById(workspaceId, id), sql`${sources.index_status} not in ('queued', 'running')`))
        .returning();
      return row;
    },

    /** Counts one more delivery of the run's job and marks it running; the row after the change. */
    async claimRun(id: string, runId: string): Promise<SourceRow | undefined> {
      const [row] = await db
        .update(sources)
        .set({
          index_status: 'running',
          index_attempts: sql`${sources.index_attempts} + 1`,
          index_started_at: sql`coalesce(${sources.index_started_at}, now())`,
          updated_at: sql`now()`,
        })
        .where(
          and(
            eq(sources.id, id),
            eq(sources.index_run_id, runId),
            inArray(sources.index_status, [...UNFINISHED_RUN]),
          ),
        )
        .returning();
      return row;
    },

    /** Adds to the run's progress (only while `runId` is the source's run). */
    async addProgress(
      id: string,
      runId: string,
      progress: { done?: number; failed?: number; total?: number },
    ) {
      await db
        .update(sources)
        .set({
          documents_done: sql`${sources.documents_done} + ${progress.done ?? 0}`,
          documents_failed: sql`${sources.documents_failed} + ${progress.failed ?? 0}`,
          ...(progress.total === undefined ? {} : { documents_total: progress.total }),
          updated_at: sql`now()`,
        })
        .where(and(eq(sources.id, id), eq(sources.index_run_id, runId)));
    },

    /**
     * Sets the run's counters from the documents it has handled, so a re-delivered job
     * continues from the truth rather than counting twice.
     */
    async recountProgress(id: string, runId: string): Promise<void> {
      const handled = (status: DocumentStatus) =>
        sql`(select count(*)::int from ${documents} where ${documents.source_id} = ${id} and ${documents.index_run_id} = ${runId} and ${documents.status} = ${status})`;
      await db
        .update(sources)
        .set({ documents_done: handled('processed'), documents_failed: handled('failed') })
        .where(and(eq(sources.id, id), eq(sources.index_run_id, runId)));
    },

    /** Ends the run (completed or failed); only while `runId` is the source's run. */
    async finishRun(
      id: string,
      runId: string,
      end: { status: 'completed' | 'failed'; error?: string; generation?: number },
    ): Promise<SourceRow | undefined> {
      const [row] = await db
        .update(sources)
        .set({
          index_status: end.status,
          index_error: end.error ?? null,
          index_finished_at: sql`now()`,
          index_document_ids: null,
          ...(end.generation === undefined ? {} : { generation: end.generation }),
          updated_at: sql`now()`,
        })
        .where(and(eq(sources.id, id), eq(sources.index_run_id, runId)))
        .returning();
      return row;
    },

    /** Runs queued or running whose row has not moved for `quietForMs`: their job may be lost. */
    async findUnfinishedRuns(quietForMs: number, limit: number) {
      return db
        .select({ id: sources.id, index_run_id: sources.index_run_id })
        .from(sources)
        .where(
          and(
            inArray(sources.index_status, [...UNFINISHED_RUN]),
            sql`${sources.updated_at} <= now() - ${quietForMs} * interval '1 millisecond'`,
          ),
        )
        .orderBy(asc(sources.updated_at))
        .limit(limit);
    },

    async deleteSource(workspaceId: string, id: string): Promise<boolean> {
      const deleted = await db
        .delete(sources)
        .where(sourceById(workspaceId, id))
        .returning({ id: sources.id });
      return deleted.length > 0;
    },

    /** Inserts the document, or returns undefined when the source already has its content (or origin). */
    async insertDocument(values: NewDocument): Promise<DocumentRow | undefined> {
      const [row] = await db.insert(documents).values(values).onConflictDoNothing().returning();
      return row;
    },

    async findDocument(workspaceId: string, id: string): Promise<DocumentRow | undefined> {
      const [row] = await db.select().from(documents).where(documentById(workspaceId, id));
      return row;
    },

    /** For the background jobs, which are handed a document id and read the workspace from the row. */
    async findDocumentById(id: string): Promise<DocumentRow | undefined> {
      const [row] = await db.select().from(documents).where(eq(documents.id, id));
      return row;
    },

    /** The document row, locked against other writers until the transaction ends. */
    async lockDocument(id: string): Promise<DocumentRow | undefined> {
      const [row] = await db.select().from(documents).where(eq(documents.id, id)).for('update');
      return row;
    },

    async findByHash(sourceId: string, contentHash: string): Promise<DocumentRow | undefined> {
      const [row] = await db
        .select()
        .from(documents)
        .where(and(eq(documents.source_id, sourceId), eq(documents.content_hash, contentHash)));
      return row;
    },

    async findByOrigin(sourceId: string, origin: string): Promise<DocumentRow | undefined> {
      const [row] = await db
        .select()
        .from(documents)
        .where(and(eq(documents.source_id, sourceId), eq(documents.origin, origin)));
      return row;
    },

    /** The workspace's documents among `ids`, with their source; unknown ids are absent. */
    async findDocuments(workspaceId: string, ids: string[]): Promise<DocumentRow[]> {
      if (ids.length === 0) return [];
      return db
        .select()
        .from(documents)
        .where(and(eq(documents.workspace_id, workspaceId), inArray(documents.id, [...new Set(ids)])));
    },

    /**
     * Newest first, then by id. `q` matches title or filename, case-insensitively; `tag`
     * one of the tags.
     */
    async listDocuments(workspaceId: string, filter: DocumentFilter) {
      const pattern = filter.q ? likePattern(filter.q) : undefined;
      const where = and(
        eq(documents.workspace_id, workspaceId),
        filter.source_id ? eq(documents.source_id, filter.source_id) : undefined,
        pattern ? or(ilike(documents.title, pattern), ilike(documents.filename, pattern)) : undefined,
        filter.tag ? sql`${documents.tags} @> ARRAY[${filter.tag}]::text[]` : undefined,
        filter.status ? eq(documents.status, filter.status) : undefined,
      );
      const rows = await db
        .select({ ...getTableColumns(documents), total: totalCount() })
        .from(documents)
        .where(where)
        .orderBy(desc(documents.created_at), desc(documents.id))
        .limit(filter.limit)
        .offset(filter.offset);
      return paginate(filter, rows, async () => {
        const [result] = await db.select({ value: count() }).from(documents).where(where);
        return result?.value ?? 0;
      });
    },

    /**
     * The next documents of a source that the run `runId` has not handled yet, oldest first:
     * all of them, or those among `ids`. With `staleBelow`, only processed documents whose
     * chunks are older than that generation (uploads processed while the run was under way).
     */
    async documentsToHandle(
      sourceId: string,
      runId: string,
      options: { ids?: string[]; staleBelow?: number; limit: number },
    ): Promise<DocumentRow[]> {
      return db
        .select()
        .from(documents)
        .where(
          and(
            eq(documents.source_id, sourceId),
            or(isNull(documents.index_run_id), ne(documents.index_run_id, runId)),
            options.ids ? inArray(documents.id, options.ids) : undefined,
            options.staleBelow === undefined
              ? ne(documents.status, 'processing')
              : and(eq(documents.status, 'processed'), lt(documents.indexed_generation, options.staleBelow)),
          ),
        )
        .orderBy(asc(documents.created_at), asc(documents.id))
        .limit(options.limit);
    },

    async updateDocument(id: string, changes: DocumentChanges): Promise<DocumentRow | undefined> {
      const [row] = await db
        .update(documents)
        .set({ ...changes, updated_at: sql`now()` })
        .where(eq(documents.id, id))
        .returning();
      return row;
    },

    /** Counts one more delivery of a processing document's job; the row after the change. */
    async claimProcessing(id: string): Promise<DocumentRow | undefined> {
      const [row] = await db
        .update(documents)
        .set({ processing_attempts: sql`${documents.processing_attempts} + 1`, updated_at: sql`now()` })
        .where(and(eq(documents.id, id), eq(documents.status, 'processing')))
        .returning();
      return row;
    },

    async deleteDocument(workspaceId: string, id: string): Promise<boolean> {
      const deleted = await db
        .delete(documents)
        .where(documentById(workspaceId, id))
        .returning({ id: documents.id });
      return deleted.length > 0;
    },

    /** Deletes a synced source's documents that the run did not meet (gone from the folder or list). */
    async deleteUnseen(sourceId: string, runId: string): Promise<string[]> {
      const deleted = await db
        .delete(documents)
        .where(
          and(
            eq(documents.source_id, sourceId),
            or(isNull(documents.index_run_id), ne(documents.index_run_id, runId)),
            ne(documents.status, 'processing'),
          ),
        )
        .returning({ id: documents.id });
      return deleted.map((row) => row.id);
    },

    /** Processing documents whose row has not moved for `quietForMs`: their job may be lost. */
    async findStrandedDocuments(quietForMs: number, limit: number) {
      return db
        .select({ id: documents.id, processing_attempts: documents.processing_attempts })
        .from(documents)
        .where(
          and(
            eq(documents.status, 'processing'),
            sql`${documents.updated_at} <= now() - ${quietForMs} * interval '1 millisecond'`,
          ),
        )
        .orderBy(asc(documents.updated_at))
        .limit(limit);
    },

    /** Documents of the source a rebuild re-chunks: all but those still on their first processing. */
    async countStored(sourceId: string): Promise<number> {
      const [row] = await db
        .select({ value: count() })
        .from(documents)
        .where(and(eq(documents.source_id, sourceId), ne(documents.status, 'processing')));
      return row?.value ?? 0;
    },

    async countDocuments(workspaceId: string): Promise<DocumentCounts> {
      const rows = await db
        .select({ status: documents.status, value: count() })
        .from(documents)
        .where(eq(documents.workspace_id, workspaceId))
        .groupBy(documents.status);
      const counts: DocumentCounts = { processed: 0, processing: 0, failed: 0 };
      for (const row of rows) counts[row.status] = row.value;
      return counts;
    },

    /**
     * Stores (or replaces) the document's extracted text, compressed (`CompressedExtraction`):
     * the compression runs on libuv's threads, and the embedded database then stores one string.
     */
    async putContent(workspaceId: string, documentId: string, content: StoredExtraction): Promise<void> {
      const packed: CompressedExtraction = {
        gzip_json: (await gzipAsync(JSON.stringify(content))).toString('base64'),
      };
      await db
        .insert(documentContents)
        .values({ document_id: documentId, workspace_id: workspaceId, content: packed })
        .onConflictDoUpdate({ target: documentContents.document_id, set: { content: packed } });
    },

    async deleteContent(documentId: string): Promise<void> {
      await db.delete(documentContents).where(eq(documentContents.document_id, documentId));
    },

    async getContent(documentId: string): Promise<StoredExtraction | undefined> {
      const [row] = await db
        .select({ content: documentContents.content })
        .from(documentContents)
        .where(eq(documentContents.document_id, documentId));
      const stored = row?.content;
      if (stored === undefined || !('gzip_json' in stored)) return stored;
      const json = await gunzipAsync(Buffer.from(stored.gzip_json, 'base64'));
      return JSON.parse(json.toString('utf8')) as StoredExtraction;
    },
  };
}

export type KnowledgeRepository = ReturnType<typeof createKnowledgeRepository>;
