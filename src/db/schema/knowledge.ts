import { sql } from 'drizzle-orm';
import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { type Static, Type } from 'typebox';
import { StringEnum } from '../../lib/typebox.ts';
import { createdAt, updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/**
 * Where a source's documents come from: uploaded through the API, read from a folder under the
 * tenant's subtree of the operator's `SOURCES_ROOT`, or fetched from web addresses.
 */
export const SOURCE_KINDS = ['upload', 'directory', 'url'] as const;
export const SourceKindSchema = StringEnum(SOURCE_KINDS);
export type SourceKind = Static<typeof SourceKindSchema>;

/** A glob over paths relative to the source's folder (`**\/*.md`, `drafts/**`). */
const Glob = Type.String({ minLength: 1, maxLength: 255 });

/** A directory source's folder and which of its files are documents. */
export const DirectorySettingsSchema = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      maxLength: 1024,
      description:
        'a folder relative to the tenant’s folder on the server (SOURCES_ROOT/<tenant id>); `.` is that folder itself',
    }),
    include: Type.Array(Glob, {
      maxItems: 50,
      description: 'globs a file’s path (relative to the folder) must match one of; `**/*` when absent',
    }),
    exclude: Type.Array(Glob, {
      maxItems: 50,
      description: 'globs that leave a matching file out, even when included',
    }),
  },
  { additionalProperties: false },
);
export type DirectorySettings = Static<typeof DirectorySettingsSchema>;

/**
 * A host of `allow_hosts`: a name or IPv4 address (`*.` for subdomains), or an IPv6 literal in
 * brackets as a URL spells it (`[2001:db8::1]`), which is what the default allow-list copies
 * from a URL on an IPv6 address.
 */
export const HostPattern = Type.String({
  pattern: '^((\\*\\.)?[A-Za-z0-9.-]{1,253}|\\[[0-9A-Fa-f:.]{2,45}\\])$',
  maxLength: 255,
});

/** A URL source's pages and the hosts it may reach (redirects included). */
export const UrlSettingsSchema = Type.Object(
  {
    urls: Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description: 'absolute http or https URLs, each one document',
    }),
    allow_hosts: Type.Array(HostPattern, {
      maxItems: 50,
      description:
        'hosts the pages and their redirects may be fetched from (`*.example.com` matches subdomains); the hosts of `urls` when absent',
    }),
  },
  { additionalProperties: false },
);
export type UrlSettings = Static<typeof UrlSettingsSchema>;

/** How documents are cut into chunks (see docs/knowledge.md). */
export const ChunkingSettingsSchema = Type.Object(
  {
    target_tokens: Type.Integer({ minimum: 32, maximum: 4096, description: 'largest chunk, in tokens' }),
    overlap_tokens: Type.Integer({
      minimum: 0,
      maximum: 1024,
      description: 'tokens of the previous chunk repeated at the start of the next; below target_tokens',
    }),
  },
  { additionalProperties: false },
);
export type ChunkingSettings = Static<typeof ChunkingSettingsSchema>;

/** Which embedding model turns chunks into vectors; provider `none` indexes keywords only. */
export const EmbeddingSettingsSchema = Type.Object(
  {
    provider: Type.String({
      minLength: 1,
      maxLength: 100,
      description:
        '`none` for keyword search only, `local` for a model folder under the server’s EMBEDDING_MODELS_DIR, or the id of an `openai_compatible` provider of the workspace',
    }),
    model: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'the model name; for `local`, the model folder relative to EMBEDDING_MODELS_DIR',
    }),
  },
  { additionalProperties: false },
);
export type EmbeddingSettings = Static<typeof EmbeddingSettingsSchema>;

/**
 * A source's indexing run: `idle` (never run), `queued`, `running`, then `completed` or
 * `failed`. Uploads are processed one by one and do not start a run.
 */
export const INDEX_STATUSES = ['idle', 'queued', 'running', 'completed', 'failed'] as const;
export const IndexStatusSchema = StringEnum(INDEX_STATUSES);
export type IndexStatus = Static<typeof IndexStatusSchema>;

/**
 * What a run does: `sync` reads the folder or the pages again (new, changed and removed
 * documents), `rechunk` re-chunks and re-embeds every stored document into a new generation,
 * `documents` re-chunks and re-embeds the listed documents in place.
 */
export const INDEX_SCOPES = ['sync', 'rechunk', 'documents'] as const;
export const IndexScopeSchema = StringEnum(INDEX_SCOPES);
export type IndexScope = Static<typeof IndexScopeSchema>;

/** A document's processing state (spec 3.2): `processing` -> `processed` | `failed`. */
export const DOCUMENT_STATUSES = ['processing', 'processed', 'failed'] as const;
export const DocumentStatusSchema = StringEnum(DOCUMENT_STATUSES);
export type DocumentStatus = Static<typeof DocumentStatusSchema>;

/** Extra fields a client attaches to a document; kept as given, searchable by no one. */
export type DocumentMetadata = Record<string, unknown>;

/**
 * A document's text as the extractor returned it (`ExtractedDocument` of
 * modules/knowledge/extract.ts, which db/ may not import): what reindexing re-chunks.
 */
export interface StoredExtraction {
  format: string;
  title: string | null;
  blocks: Array<{ kind: string; text: string; level?: number; language?: string }>;
  metadata: Record<string, string | number | boolean>;
}

/**
 * How `document_contents.content` holds a `StoredExtraction` since issue 23: its JSON,
 * gzip-compressed, in base64. PGlite parses a jsonb value in the service's thread, and a 2 MB
 * document's blocks as jsonb held it for 280 ms on the way in and 130 ms on the way out; one
 * string of a quarter of the size costs a fraction. Rows written before stay plain
 * `StoredExtraction`s, and both are read.
 */
export interface CompressedExtraction {
  gzip_json: string;
}

/**
 * A named collection of documents with its origin (`kind` and its settings), how its
 * documents are chunked and embedded, and its indexing run. `generation` is the generation
 * of chunks searches read; a run that rebuilds the index writes `index_target_generation`
 * and makes it current when it completes.
 */
export const sources = pgTable(
  'sources',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 255 }).notNull(),
    kind: varchar('kind', { length: 20 }).$type<SourceKind>().notNull(),
    /** The workspace's default upload source, which uploads without a source_id go to. */
    is_default: boolean('is_default').notNull().default(false),
    directory: jsonb('directory').$type<DirectorySettings>(),
    url: jsonb('url').$type<UrlSettings>(),
    chunking: jsonb('chunking').$type<ChunkingSettings>().notNull(),
    embedding: jsonb('embedding').$type<EmbeddingSettings>().notNull(),
    generation: integer('generation').notNull().default(1),
    index_status: varchar('index_status', { length: 20 }).$type<IndexStatus>().notNull().default('idle'),
    index_scope: varchar('index_scope', { length: 20 }).$type<IndexScope>(),
    /** The current run; documents handled by it carry the same id (re-delivery skips them). */
    index_run_id: uuid('index_run_id'),
    /** The generation the current run writes; equal to `generation` for a `documents` run. */
    index_target_generation: integer('index_target_generation').notNull().default(1),
    /** The documents a `documents` run re-chunks. */
    index_document_ids: uuid('index_document_ids').array(),
    documents_total: integer('documents_total').notNull().default(0),
    documents_done: integer('documents_done').notNull().default(0),
    documents_failed: integer('documents_failed').notNull().default(0),
    index_started_at: timestamp('index_started_at', { withTimezone: true, mode: 'date' }),
    index_finished_at: timestamp('index_finished_at', { withTimezone: true, mode: 'date' }),
    index_error: text('index_error'),
    /** Deliveries of the current run's job; past the limit the run fails instead of retrying forever. */
    index_attempts: integer('index_attempts').notNull().default(0),
    created_by: varchar('created_by', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    uniqueIndex('sources_workspace_name_key').on(t.workspace_id, t.name),
    uniqueIndex('sources_workspace_default_key').on(t.workspace_id).where(sql`${t.is_default}`),
    index('sources_workspace_created_idx').on(t.workspace_id, t.created_at.desc(), t.id.desc()),
    index('sources_unfinished_runs_idx')
      .on(t.updated_at)
      .where(sql`${t.index_status} in ('queued', 'running')`),
  ],
);

/**
 * One document of a source. `content_hash` (SHA-256 of the bytes) is unique per source, so the
 * same file twice is one document; `origin` is where a directory or URL source found it (its
 * path or URL), unique per source too. The extracted text lives in `document_contents`.
 */
export const documents = pgTable(
  'documents',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    source_id: uuid('source_id')
      .notNull()
      .references(() => sources.id, { onDelete: 'cascade' }),
    title: text('title').notNull(),
    filename: varchar('filename', { length: 1024 }).notNull(),
    origin: text('origin'),
    media_type: varchar('media_type', { length: 255 }),
    format: varchar('format', { length: 20 }),
    size_bytes: integer('size_bytes').notNull(),
    content_hash: varchar('content_hash', { length: 64 }),
    status: varchar('status', { length: 20 }).$type<DocumentStatus>().notNull().default('processing'),
    failure_reason: text('failure_reason'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    metadata: jsonb('metadata').$type<DocumentMetadata>().notNull().default({}),
    chunk_count: integer('chunk_count').notNull().default(0),
    /** The generation the document's chunks were written in. */
    indexed_generation: integer('indexed_generation'),
    /** The source run that last handled the document. */
    index_run_id: uuid('index_run_id'),
    indexed_at: timestamp('indexed_at', { withTimezone: true, mode: 'date' }),
    /** Deliveries of the processing job; past the limit the document fails instead of retrying forever. */
    processing_attempts: integer('processing_attempts').notNull().default(0),
    created_by: varchar('created_by', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    uniqueIndex('documents_source_hash_key').on(t.source_id, t.content_hash),
    uniqueIndex('documents_source_origin_key').on(t.source_id, t.origin),
    index('documents_workspace_created_idx').on(t.workspace_id, t.created_at.desc(), t.id.desc()),
    index('documents_workspace_status_idx').on(t.workspace_id, t.status),
    index('documents_tags_idx').using('gin', t.tags),
    index('documents_processing_idx').on(t.updated_at).where(sql`${t.status} = 'processing'`),
  ],
);

/**
 * A document's extracted text (title, blocks, format details), kept so that reindexing with
 * other chunking or embedding settings needs neither the original bytes nor their origin.
 */
export const documentContents = pgTable(
  'document_contents',
  {
    document_id: uuid('document_id')
      .primaryKey()
      .references(() => documents.id, { onDelete: 'cascade' }),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    content: jsonb('content').$type<StoredExtraction | CompressedExtraction>().notNull(),
  },
  (t) => [index('document_contents_workspace_idx').on(t.workspace_id)],
);
