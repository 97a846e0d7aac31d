import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
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

/** `indexing` while a new graph is built (the previous one, if any, still answers searches). */
export const CodegraphStatusSchema = StringEnum(['indexing', 'ready', 'failed'] as const);
export type CodegraphStatus = Static<typeof CodegraphStatusSchema>;

export const SymbolKindSchema = StringEnum([
  'function',
  'class',
  'method',
  'interface',
  'type',
  'enum',
] as const);
export type SymbolKind = Static<typeof SymbolKindSchema>;
export const EdgeKindSchema = StringEnum(['defines', 'imports', 'calls', 'extends', 'implements'] as const);
/** How a call's or a base type's target was found (docs/codegraph.md). */
export const ResolutionSchema = StringEnum([
  'this',
  'scope',
  'import',
  'package',
  'unique_name',
  'receiver_name',
] as const);

/** Where a project's files came from at its last index request. */
export const ProjectSourceSchema = Type.Union([
  Type.Object({ kind: Type.Literal('directory'), directory: Type.String() }),
  Type.Object({
    kind: Type.Literal('archive'),
    filename: Type.Union([Type.String(), Type.Null()]),
    bytes: Type.Integer(),
  }),
]);
export type ProjectSource = Static<typeof ProjectSourceSchema>;

const count = () => Type.Integer({ minimum: 0 });

/** What an index read and built, and how long it took. */
export const IndexStatsSchema = Type.Object({
  files: count(),
  bytes: count(),
  symbols: count(),
  edges: Type.Object({
    defines: count(),
    imports: count(),
    calls: count(),
    extends: count(),
    implements: count(),
  }),
  calls: Type.Object({
    total: count(),
    resolved: count(),
    by_resolution: Type.Record(Type.String(), count(), {
      description: 'resolved calls by the rule that resolved them (this, scope, import, package, ...)',
    }),
  }),
  languages: Type.Record(Type.String(), count(), { description: 'files read per language' }),
  skipped: Type.Object(
    { too_large: count(), generated: count(), not_text: count() },
    { description: 'source files left out, by reason' },
  ),
  files_with_errors: Type.Integer({ minimum: 0, description: 'files tree-sitter read with syntax errors' }),
  duration_ms: count(),
});
export type IndexStats = Static<typeof IndexStatsSchema>;

/**
 * How far an index in progress has come: written when it starts and about once a second while
 * files are parsed, then once as the graph is written; null once it ends.
 */
export const IndexProgressSchema = Type.Object(
  {
    phase: StringEnum(['parsing', 'writing'] as const, {
      description: '`parsing` the files one by one, then `writing` the graph',
    }),
    files_done: count(),
    files_total: count(),
  },
  { description: 'an index in progress: files parsed of those found; null when no index runs' },
);
export type IndexProgress = Static<typeof IndexProgressSchema>;

/**
 * A code project of a workspace, named by the client. Its graph is the rows of
 * `codegraph_symbols`/`codegraph_edges` whose generation is `active_generation`: an index
 * writes a new generation beside the old one and makes it active in one statement, so a
 * search sees the old graph or the new one, never a mixture.
 */
export const codegraphProjects = pgTable(
  'codegraph_projects',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 100 }).notNull(),
    status: varchar('status', { length: 20 }).$type<CodegraphStatus>().notNull(),
    /** The generation searches read; 0 until a first index completes. */
    active_generation: integer('active_generation').notNull().default(0),
    /** The generation the latest index request writes. */
    last_generation: integer('last_generation').notNull().default(0),
    source: jsonb('source').$type<ProjectSource>().notNull(),
    /** The active graph's figures; null until a first index completes. */
    stats: jsonb('stats').$type<IndexStats>(),
    /** The latest index's progress while it runs; null otherwise. */
    progress: jsonb('progress').$type<IndexProgress>(),
    /** Why the latest index failed (safe to show); null otherwise. */
    error: text('error'),
    indexed_at: timestamp('indexed_at', { withTimezone: true, mode: 'date' }),
    created_by: varchar('created_by', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    uniqueIndex('codegraph_projects_workspace_name_idx').on(t.workspace_id, t.name),
    index('codegraph_projects_indexing_idx').on(t.status).where(sql`${t.status} = 'indexing'`),
  ],
);

/** A symbol (function, class, method, interface, type, enum) of one generation of a project. */
export const codegraphSymbols = pgTable(
  'codegraph_symbols',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    project_id: uuid('project_id')
      .notNull()
      .references(() => codegraphProjects.id, { onDelete: 'cascade' }),
    workspace_id: uuid('workspace_id').notNull(),
    generation: integer('generation').notNull(),
    kind: varchar('kind', { length: 20 }).notNull(),
    name: text('name').notNull(),
    qualified_name: text('qualified_name').notNull(),
    file: text('file').notNull(),
    language: varchar('language', { length: 20 }).notNull(),
    start_line: integer('start_line').notNull(),
    end_line: integer('end_line').notNull(),
    signature: text('signature').notNull(),
    doc: text('doc'),
    /** The enclosing symbol (a method's class); same generation. */
    parent_id: bigint('parent_id', { mode: 'number' }),
    /** Distinct callers whose calls resolve here; breaks ties between equally good matches. */
    caller_count: integer('caller_count').notNull().default(0),
  },
  (t) => [
    // Exact and prefix matches on the name, case-insensitive, within one generation.
    index('codegraph_symbols_name_idx').on(
      t.project_id,
      t.generation,
      sql`lower(${t.name}) text_pattern_ops`,
    ),
    // Fuzzy matches (pg_trgm similarity) and substrings of names.
    index('codegraph_symbols_name_trgm_idx').using('gin', sql`${t.name} gin_trgm_ops`),
  ],
);

/** An edge of one generation: defines, imports, calls, extends, implements. */
export const codegraphEdges = pgTable(
  'codegraph_edges',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    project_id: uuid('project_id')
      .notNull()
      .references(() => codegraphProjects.id, { onDelete: 'cascade' }),
    workspace_id: uuid('workspace_id').notNull(),
    generation: integer('generation').notNull(),
    kind: varchar('kind', { length: 20 }).notNull(),
    /** Null when the edge starts at the file itself (a top-level call, an import). */
    source_id: bigint('source_id', { mode: 'number' }).references(() => codegraphSymbols.id, {
      onDelete: 'cascade',
    }),
    /** Null when the target is not a symbol of the project (unresolved, external, a module). */
    target_id: bigint('target_id', { mode: 'number' }).references(() => codegraphSymbols.id, {
      onDelete: 'cascade',
    }),
    file: text('file').notNull(),
    line: integer('line').notNull(),
    /** The name as written: callee, imported name or module, base type. */
    target_name: text('target_name').notNull(),
    module: text('module'),
    target_file: text('target_file'),
    resolution: varchar('resolution', { length: 20 }),
    /** Call sites this edge stands for: one edge per caller, target and file. */
    occurrences: integer('occurrences').notNull().default(1),
  },
  (t) => [
    index('codegraph_edges_project_idx').on(t.project_id, t.generation, t.kind),
    index('codegraph_edges_source_idx').on(t.source_id),
    index('codegraph_edges_target_idx').on(t.target_id),
  ],
);

const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (value) => Buffer.from(value),
});

/**
 * An uploaded archive waiting for its background index: the job's truth (the queue only wakes
 * the worker, which may be another process). Removed when the index ends, either way.
 */
export const codegraphUploads = pgTable(
  'codegraph_uploads',
  {
    project_id: uuid('project_id')
      .notNull()
      .references(() => codegraphProjects.id, { onDelete: 'cascade' }),
    generation: integer('generation').notNull(),
    workspace_id: uuid('workspace_id').notNull(),
    archive: bytea('archive').notNull(),
    created_at: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.generation] })],
);
