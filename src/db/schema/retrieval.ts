import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  customType,
  date,
  index,
  integer,
  pgTable,
  primaryKey,
  smallint,
  text,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import type { Static } from 'typebox';
import { StringEnum } from '../../lib/typebox.ts';
import { createdAt } from './columns.ts';
import { documents } from './knowledge.ts';
import { workspaces } from './workspaces.ts';

/** PostgreSQL's `tsvector`: the chunk's lexemes with their positions (docs/retrieval.md). */
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });

/**
 * pgvector's `vector` without a fixed dimension: each embedding model has its own, and one
 * table holds them all. Similarity search casts to `vector(n)` so that the per-dimension
 * partial HNSW indexes below apply (docs/retrieval.md, "Vectors").
 */
const vector = customType<{ data: number[]; driverData: string }>({
  dataType: () => 'vector',
  toDriver: (value) => `[${value.join(',')}]`,
  fromDriver: (value) => JSON.parse(value) as number[],
});

/** The search modes: BM25 over the full-text index, pgvector similarity, or both fused. */
export const SEARCH_MODES = ['keyword', 'vector', 'hybrid'] as const;
export const SearchModeSchema = StringEnum(SEARCH_MODES);
export type SearchMode = Static<typeof SearchModeSchema>;

/**
 * Dimensions that get an HNSW index (cosine distance), each a partial index over the
 * embeddings of that size. 3072 (OpenAI's text-embedding-3-large) is past the 2000 dimensions
 * HNSW takes for `vector`, so it is indexed as `halfvec`. Other sizes are searched exactly.
 */
export const HNSW_DIMENSIONS = [256, 384, 512, 768, 1024, 1536] as const;
export const HNSW_HALFVEC_DIMENSIONS = [3072] as const;

/**
 * One chunk of a document, as searches read it. `search` is
 * `to_tsvector('english', heading path + text)`, `term_count` its number of tokens (the
 * BM25 document length). Rows of a generation other than the source's active one are
 * invisible to searches (a reindex writes the next generation beside the current one).
 * `source_id` and `document_id` name the knowledge module's source and document, which own
 * them; `document_id` is a foreign key, so no chunk outlives its document.
 */
export const chunks = pgTable(
  'chunks',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    source_id: uuid('source_id').notNull(),
    // A document's chunks go with it (its statistics are the search index's to remove first).
    document_id: uuid('document_id')
      .notNull()
      .references(() => documents.id, { onDelete: 'cascade' }),
    generation: integer('generation').notNull(),
    position: integer('position').notNull(),
    text: text('text').notNull(),
    heading_path: text('heading_path').array().notNull().default(sql`'{}'::text[]`),
    token_count: integer('token_count').notNull(),
    term_count: integer('term_count').notNull(),
    search: tsvector('search').notNull(),
    created_at: createdAt(),
  },
  (t) => [
    // (workspace, lexeme) in one GIN index (btree_gin): a workspace's candidates come from
    // the intersection of posting lists, never from a scan of every tenant's matches.
    index('chunks_search_idx').using('gin', t.workspace_id, t.search),
    index('chunks_document_idx').on(t.document_id, t.generation),
    // With `id` last it also reads a generation's chunks in id order, a page at a time
    // (building the in-memory postings).
    index('chunks_source_idx').on(t.workspace_id, t.source_id, t.generation, t.id),
  ],
);

/**
 * A chunk's embedding, by the model that made it (`model` is `provider/model`). Kept out of
 * `chunks` so that keyword searches read narrow rows. `source_id` and `generation` repeat the
 * chunk's, so a similarity search filters without a join.
 */
export const chunkEmbeddings = pgTable(
  'chunk_embeddings',
  {
    chunk_id: bigint('chunk_id', { mode: 'number' })
      .primaryKey()
      .references(() => chunks.id, { onDelete: 'cascade' }),
    workspace_id: uuid('workspace_id').notNull(),
    source_id: uuid('source_id').notNull(),
    generation: integer('generation').notNull(),
    model: varchar('model', { length: 400 }).notNull(),
    dimensions: smallint('dimensions').notNull(),
    embedding: vector('embedding').notNull(),
  },
  (t) => [
    index('chunk_embeddings_scope_idx').on(t.workspace_id, t.source_id, t.generation),
    ...HNSW_DIMENSIONS.map((n) =>
      index(`chunk_embeddings_hnsw_${n}_idx`)
        .using('hnsw', sql`(${t.embedding}::vector(${sql.raw(String(n))})) vector_cosine_ops`)
        .where(sql`${t.dimensions} = ${sql.raw(String(n))}`),
    ),
    ...HNSW_HALFVEC_DIMENSIONS.map((n) =>
      index(`chunk_embeddings_hnsw_${n}_idx`)
        .using('hnsw', sql`(${t.embedding}::halfvec(${sql.raw(String(n))})) halfvec_cosine_ops`)
        .where(sql`${t.dimensions} = ${sql.raw(String(n))}`),
    ),
  ],
);

/**
 * Which generation of a source's chunks searches read. The first generation indexed becomes
 * active by itself; a reindex's generation becomes active through `activateGeneration`.
 */
export const indexSources = pgTable(
  'index_sources',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    source_id: uuid('source_id').notNull(),
    active_generation: integer('active_generation').notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.source_id] })],
);

/**
 * Chunk counts and token totals (BM25's N and average length) per source, generation and
 * embedding model. A key has up to one row per slot: a writing transaction owns a slot
 * (an advisory lock) and adds to that slot's rows only, so concurrent indexers of one source
 * never wait for each other and the sums stay exact (docs/retrieval.md, "Statistics").
 */
export const indexStats = pgTable(
  'index_stats',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    source_id: uuid('source_id').notNull(),
    generation: integer('generation').notNull(),
    /** `provider/model` of the chunks' embeddings; empty for chunks without one. */
    model: varchar('model', { length: 400 }).notNull(),
    dimensions: smallint('dimensions').notNull(),
    slot: smallint('slot').notNull(),
    chunks: bigint('chunks', { mode: 'number' }).notNull(),
    terms: bigint('terms', { mode: 'number' }).notNull(),
    /**
     * Statements that changed the slot's chunks: the sum over a generation's rows goes up with
     * every committed write, so it versions the in-memory postings built from those chunks.
     */
    writes: bigint('writes', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.source_id, t.generation, t.model, t.slot] })],
);

/** Document frequency: how many chunks of a source's generation hold a lexeme, by slot as above. */
export const termStats = pgTable(
  'term_stats',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    source_id: uuid('source_id').notNull(),
    generation: integer('generation').notNull(),
    lexeme: text('lexeme').notNull(),
    slot: smallint('slot').notNull(),
    chunks: integer('chunks').notNull(),
  },
  (t) => [
    // Searches look lexemes up per active (source, generation) through this key too.
    primaryKey({ columns: [t.workspace_id, t.source_id, t.generation, t.lexeme, t.slot] }),
  ],
);

/**
 * Searches per workspace, day and mode, and how many found a result at or above their
 * `min_score`: the retrieval hit-rate of the system metrics. Counted in memory and added here
 * in one statement per key every few seconds, so searches never write.
 */
export const searchStats = pgTable(
  'search_stats',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    day: date('day', { mode: 'string' }).notNull(),
    mode: varchar('mode', { length: 10 }).$type<SearchMode>().notNull(),
    searches: bigint('searches', { mode: 'number' }).notNull(),
    hits: bigint('hits', { mode: 'number' }).notNull(),
    results: bigint('results', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.day, t.mode] })],
);
