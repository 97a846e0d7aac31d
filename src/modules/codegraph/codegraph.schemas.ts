import { Type } from 'typebox';
import {
  CodegraphStatusSchema,
  IndexProgressSchema,
  IndexStatsSchema,
  ProjectSourceSchema,
  SymbolKindSchema,
} from '../../db/schema/codegraph.ts';
import { Page, PageQuery, Timestamp, Uuid } from '../../http/schemas.ts';
import { StringEnum } from '../../lib/typebox.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** A project's name: letters, digits, `.`, `_`, `-`; unique in the workspace. */
export const ProjectName = (options: Record<string, unknown> = {}) =>
  Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$', maxLength: 100, ...options });

export const IndexBody = Type.Object(
  {
    project: ProjectName({ description: 'the project to (re)index; created when new' }),
    source: Type.Object(
      {
        directory: Type.String({
          minLength: 1,
          maxLength: 1024,
          description: 'a directory relative to the tenant’s folder on the server, SOURCES_ROOT/<tenant id>',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** The multipart form, as documented; the route reads and checks it while streaming. */
export const IndexForm = Type.Object({
  project: ProjectName(),
  archive: Type.String({
    format: 'binary',
    description: 'a .zip, .tar.gz or .tar of the sources, at most UPLOAD_MAX_BYTES',
  }),
});

export const ProjectSchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    status: CodegraphStatusSchema,
    source: ProjectSourceSchema,
    stats: Nullable(IndexStatsSchema),
    progress: Nullable(IndexProgressSchema),
    error: Nullable(Type.String({ description: 'why the latest index failed' })),
    indexed_at: Nullable(Timestamp({ description: 'when the graph searched was made' })),
    created_by: Nullable(Type.String()),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'CodeProject' },
);

export const ProjectPage = Page(ProjectSchema);
export const ListProjectsQuery = Type.Object({ ...PageQuery });
export const ProjectParams = Type.Object({ name: ProjectName() });

export const SearchQuerySchema = Type.Object({
  project: ProjectName(),
  q: Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: '\\S',
    description: 'a name (exact, prefix or approximate; `Class.method` works) or words of a signature or doc',
  }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 10 }),
  kind: Type.Optional(SymbolKindSchema),
});

const Neighbour = Type.Object({
  symbol_id: Nullable(Type.Integer({ description: 'null for a call at the top level of a file' })),
  qualified_name: Nullable(Type.String()),
  kind: Nullable(SymbolKindSchema),
  file: Type.String(),
  line: Type.Integer({ description: 'line of the (first) call' }),
  calls: Type.Integer({ description: 'calls between the two symbols' }),
});

export const SearchHitSchema = Type.Object({
  id: Type.Integer({ description: 'the symbol in this version of the graph (ids change on re-index)' }),
  kind: SymbolKindSchema,
  name: Type.String(),
  qualified_name: Type.String(),
  file: Type.String(),
  language: Type.String(),
  start_line: Type.Integer(),
  end_line: Type.Integer(),
  signature: Type.String(),
  doc: Nullable(Type.String()),
  match: StringEnum(['exact', 'prefix', 'fuzzy', 'text'] as const),
  score: Type.Number({
    description: 'the ranking, 0 to 1: exact 1, prefix 0.7-0.9, fuzzy 0.4-0.7, text 0.2',
  }),
  caller_count: Type.Integer({ description: 'distinct callers (all of them; `callers` lists up to 20)' }),
  callers: Type.Array(Neighbour),
  callees: Type.Array(Neighbour, { description: 'resolved calls made by this symbol, up to 20' }),
  unresolved_callees: Type.Array(Type.String(), {
    description: 'names called that resolve to no project symbol (libraries, dynamic calls), up to 20',
  }),
});

export const SearchResponse = Type.Object({
  project: Type.Object({
    name: Type.String(),
    status: CodegraphStatusSchema,
    indexed_at: Nullable(Timestamp()),
  }),
  results: Type.Array(SearchHitSchema),
  took_ms: Type.Integer(),
});
