import { Type } from 'typebox';
import {
  ChunkingSettingsSchema,
  DirectorySettingsSchema,
  DocumentStatusSchema,
  EmbeddingSettingsSchema,
  IndexScopeSchema,
  IndexStatusSchema,
  SourceKindSchema,
  UrlSettingsSchema,
} from '../../db/schema/knowledge.ts';
import { Page, PageQuery, Timestamp, Uuid } from '../../http/schemas.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** A source's indexing run and its progress. */
export const IndexingSchema = Type.Object({
  status: IndexStatusSchema,
  scope: Nullable(IndexScopeSchema),
  documents_total: Type.Integer({
    description: 'documents the run has to handle (known once a sync has listed its origin)',
  }),
  documents_done: Type.Integer(),
  documents_failed: Type.Integer(),
  started_at: Nullable(Timestamp()),
  finished_at: Nullable(Timestamp()),
  error: Nullable(Type.String({ description: 'why the run failed, or the last error while it retries' })),
});

export const SourceSchema = Type.Object(
  {
    id: Uuid(),
    workspace_id: Uuid(),
    name: Type.String(),
    kind: SourceKindSchema,
    is_default: Type.Boolean({ description: 'the upload source that uploads without source_id go to' }),
    directory: Nullable(DirectorySettingsSchema),
    url: Nullable(UrlSettingsSchema),
    chunking: ChunkingSettingsSchema,
    embedding: EmbeddingSettingsSchema,
    generation: Type.Integer({
      description: 'the generation of chunks searches read; a rebuild makes a new one',
    }),
    document_count: Type.Integer(),
    indexing: IndexingSchema,
    created_by: Nullable(Type.String()),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'Source' },
);

const DirectoryInput = Type.Object(
  {
    path: DirectorySettingsSchema.properties.path,
    include: Type.Optional(DirectorySettingsSchema.properties.include),
    exclude: Type.Optional(DirectorySettingsSchema.properties.exclude),
  },
  { additionalProperties: false },
);

const UrlInput = Type.Object(
  {
    urls: UrlSettingsSchema.properties.urls,
    allow_hosts: Type.Optional(UrlSettingsSchema.properties.allow_hosts),
  },
  { additionalProperties: false },
);

export const CreateSourceBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    kind: SourceKindSchema,
    directory: Type.Optional(DirectoryInput),
    url: Type.Optional(UrlInput),
    chunking: Type.Optional(ChunkingSettingsSchema),
    embedding: Type.Optional(EmbeddingSettingsSchema),
  },
  { additionalProperties: false },
);

export const UpdateSourceBody = Type.Object(
  {
    name: Type.Optional(CreateSourceBody.properties.name),
    directory: Type.Optional(DirectoryInput),
    url: Type.Optional(UrlInput),
    chunking: Type.Optional(ChunkingSettingsSchema),
    embedding: Type.Optional(EmbeddingSettingsSchema),
  },
  { additionalProperties: false },
);

export const ListSourcesQuery = Type.Object({
  kind: Type.Optional(SourceKindSchema),
  q: Type.Optional(Type.String({ maxLength: 255, description: 'case-insensitive match on the name' })),
  ...PageQuery,
});

export const SourcePage = Page(SourceSchema);

export const DocumentSchema = Type.Object(
  {
    id: Uuid(),
    workspace_id: Uuid(),
    source_id: Uuid(),
    title: Type.String(),
    filename: Type.String(),
    origin: Nullable(
      Type.String({ description: 'where a directory or URL source found it: its path or URL' }),
    ),
    media_type: Nullable(Type.String()),
    format: Nullable(Type.String({ description: 'pdf, markdown, html, text, json, csv or code' })),
    size_bytes: Type.Integer(),
    content_hash: Nullable(
      Type.String({ description: 'SHA-256 of the bytes, hex; unique within the source' }),
    ),
    status: DocumentStatusSchema,
    failure_reason: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    chunk_count: Type.Integer(),
    indexed_at: Nullable(Timestamp()),
    created_by: Nullable(Type.String()),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'Document' },
);

export const ListDocumentsQuery = Type.Object({
  source_id: Type.Optional(Uuid()),
  q: Type.Optional(
    Type.String({ maxLength: 255, description: 'case-insensitive match on the title and the filename' }),
  ),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  status: Type.Optional(DocumentStatusSchema),
  ...PageQuery,
});

export const DocumentPage = Page(DocumentSchema);

/** The multipart form of an upload; documented here, read part by part by the route. */
export const UploadForm = Type.Object(
  {
    file: Type.String({ format: 'binary', description: 'the document; its file name and type come with it' }),
    source_id: Type.Optional(
      Uuid({ description: 'an upload source; the workspace’s default upload source when absent' }),
    ),
    tags: Type.Optional(
      Type.String({
        description: 'comma-separated, or the field repeated once per tag (up to 50, 64 characters each)',
      }),
    ),
    metadata: Type.Optional(
      Type.String({
        contentMediaType: 'application/json',
        description: 'a JSON object kept with the document (up to 64 KiB)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ReindexBody = Type.Object(
  {
    source_id: Type.Optional(
      Uuid({ description: 'reindex this source (all its documents, or document_ids among them)' }),
    ),
    document_ids: Type.Optional(
      Type.Array(Uuid(), {
        minItems: 1,
        maxItems: 1000,
        uniqueItems: true,
        description: 'reindex only these documents',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ReindexAnswer = Type.Object({
  sources: Type.Array(SourceSchema, { description: 'the sources whose run started, with their progress' }),
});
