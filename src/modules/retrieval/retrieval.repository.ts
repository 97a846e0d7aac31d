import { type SQL, sql } from 'drizzle-orm';
import { rowsOf } from '../../db/rows.ts';
import type { Db } from '../../db/transaction.ts';

export type { SearchMode } from '../../db/schema/retrieval.ts';
export { HNSW_DIMENSIONS, HNSW_HALFVEC_DIMENSIONS, SEARCH_MODES } from '../../db/schema/retrieval.ts';

/** Statistics slots per workspace: concurrent indexing transactions beyond this share one. */
export const STAT_SLOTS = 8;

/**
 * How many times the heading path enters a chunk's tsvector: a heading names what the whole
 * chunk is about, so its words count as if said twice (measured on SciFact's training claims,
 * where the title is the heading: bench/RESULTS.md).
 */
export const HEADING_REPEAT = 1;

/** A query lexeme with how often the query says it and how many chunks in scope hold it. */
export interface TermRow {
  lexeme: string;
  queryFrequency: number;
  documentFrequency: number;
}

/** A query lexeme with its BM25 weight (query frequency x idf), as the scoring SQL takes it. */
export interface WeightedLexeme {
  lexeme: string;
  weight: number;
}

/** A chunk an arm ranked, with the arm's score. */
export interface ScoredChunk {
  chunkId: number;
  documentId: string;
  score: number;
}

/** One chunk to store, with its embedding when its source has a model. */
export interface ChunkRow {
  position: number;
  text: string;
  heading_path: string[];
  token_count: number;
  embedding: number[] | null;
}

/** Where chunks go: a document of a source, in one generation. */
export interface ChunkTarget {
  workspaceId: string;
  sourceId: string;
  documentId: string;
  generation: number;
}

/** The searched scope: a workspace's sources (all, or those listed) and documents' tags. */
export interface SearchScope {
  workspaceId: string;
  sourceIds?: string[];
  tags?: string[];
}

/**
 * A partition of the search index: a source's active generation, with its chunk and token
 * counts and its version, which changes with every committed write to its chunks (so an
 * in-memory index built at the same version holds exactly the chunks a search would read).
 */
export interface PartitionState {
  workspaceId: string;
  sourceId: string;
  generation: number;
  chunks: number;
  terms: number;
  version: string;
}

/** An embedding model present in the scope. */
export interface ScopeModel {
  model: string;
  dimensions: number;
  chunks: number;
}

/** A chunk with what a result shows of it, its document and its source. */
export interface ChunkDetail {
  id: number;
  text: string;
  heading_path: string[];
  position: number;
  document_id: string;
  title: string;
  filename: string;
  tags: string[];
  source_id: string;
  source_name: string;
}

/** Search counts to add for one workspace, day and mode. */
export interface SearchCount {
  workspaceId: string;
  day: string;
  mode: string;
  searches: number;
  hits: number;
  results: number;
}

/**
 * A tsquery literal of one lexeme, quoted as tsquery input wants it (`'`, `\` escaped), so a
 * lexeme is matched as it is and never parsed as operators.
 */
export const tsqueryLiteral = (lexeme: string): string =>
  `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;

/** `vector` text input: `[0.1,0.2,...]`. */
const vectorLiteral = (values: number[]): string => `[${values.join(',')}]`;

/** The text a chunk's tsvector is made of: its heading path (HEADING_REPEAT times) and text. */
const searchText = (heading: SQL, text: SQL): SQL =>
  sql`repeat(array_to_string(${heading}, ' ') || E'\n', ${HEADING_REPEAT}) || ${text}`;

/** The sources' active generations in scope, as a relation `(source_id, generation)`. */
const activeGenerations = (scope: SearchScope): SQL => sql`(
  select s.source_id, s.active_generation as generation from index_sources s
  where s.workspace_id = ${scope.workspaceId}
  ${scope.sourceIds ? sql`and s.source_id = any(${sql.param(scope.sourceIds)}::uuid[])` : sql``})`;

/** Chunks of documents carrying any of the scope's tags (documents belong to the knowledge module). */
const tagFilter = (scope: SearchScope, documentId: SQL): SQL =>
  scope.tags && scope.tags.length > 0
    ? sql`and ${documentId} in (select d.id from documents d
        where d.workspace_id = ${scope.workspaceId} and d.tags && ${sql.param(scope.tags)}::text[])`
    : sql``;

/** An `index_stats` upsert's update: the row's counts plus the new ones, and one more write. */
const addedStats = sql`chunks = index_stats.chunks + excluded.chunks, terms = index_stats.terms + excluded.terms,
  writes = index_stats.writes + excluded.writes`;

/**
 * A partition's version: it changes with every committed write to the partition's chunks
 * (each adds to `writes`), so equal versions mean equal chunks (docs/retrieval.md).
 */
const partitionVersion = (row: { writes: number; chunks: number; terms: number }) =>
  `${Number(row.writes)}:${Number(row.chunks)}:${Number(row.terms)}`;

/**
 * The search index's tables: chunks with their tsvectors and embeddings, the active
 * generation of each source, and the statistics BM25 reads. Every statement is scoped by
 * workspace. The `documents` and `sources` tables of the knowledge module are read (titles,
 * tags, names), never written.
 */
export function createRetrievalRepository(db: Db) {
  return {
    /** The installed pgvector's version (the extension vector search runs on), or null without it. */
    async vectorExtensionVersion(): Promise<string | null> {
      const rows = rowsOf<{ version: string }>(
        await db.execute(sql`select extversion as version from pg_extension where extname = 'vector'`),
      );
      return rows[0]?.version ?? null;
    },

    /**
     * Takes a statistics slot for this transaction: the first of `STAT_SLOTS` advisory locks
     * of the workspace that is free or already ours (locks are re-entrant), else waits for one.
     * A transaction adds to its own slot's rows only, so indexers never queue on a hot lexeme.
     */
    async takeSlot(workspaceId: string): Promise<number> {
      const key = sql`hashtext(${`retrieval-stats:${workspaceId}`})`;
      const free = rowsOf<{ slot: number }>(
        await db.execute(sql`select s as slot from generate_series(0, ${STAT_SLOTS - 1}) s
          where pg_try_advisory_xact_lock(${key}, s) limit 1`),
      );
      if (free[0]) return Number(free[0].slot);
      const slot = Math.floor(Math.random() * STAT_SLOTS);
      await db.execute(sql`select pg_advisory_xact_lock(${key}, ${slot})`);
      return slot;
    },

    /** The source's active generation, made `generation` when it has none yet. */
    async ensureActiveGeneration(workspaceId: string, sourceId: string, generation: number) {
      const rows = rowsOf<{ active_generation: number }>(
        await db.execute(sql`with added as (
            insert into index_sources (workspace_id, source_id, active_generation)
            values (${workspaceId}, ${sourceId}, ${generation})
            on conflict (workspace_id, source_id) do nothing
            returning active_generation)
          select active_generation from added
          union all
          select active_generation from index_sources where workspace_id = ${workspaceId} and source_id = ${sourceId}
          limit 1`),
      );
      return Number(rows[0]?.active_generation ?? generation);
    },

    /** Makes `generation` the source's active one. */
    async setActiveGeneration(workspaceId: string, sourceId: string, generation: number) {
      await db.execute(sql`insert into index_sources (workspace_id, source_id, active_generation)
        values (${workspaceId}, ${sourceId}, ${generation})
        on conflict (workspace_id, source_id) do update set active_generation = excluded.active_generation`);
    },

    async activeGeneration(workspaceId: string, sourceId: string): Promise<number | undefined> {
      const rows = rowsOf<{ active_generation: number }>(
        await db.execute(sql`select active_generation from index_sources
          where workspace_id = ${workspaceId} and source_id = ${sourceId}`),
      );
      return rows[0] ? Number(rows[0].active_generation) : undefined;
    },

    /**
     * Inserts a document's chunks (tsvector and length computed here, in SQL), their
     * embeddings, and adds them to the statistics in `slot`, in one statement.
     */
    async insertChunks(target: ChunkTarget, rows: ChunkRow[], model: string, slot: number) {
      if (rows.length === 0) return;
      const dimensions = rows[0]?.embedding?.length ?? 0;
      const input = JSON.stringify(
        rows.map((row) => ({
          position: row.position,
          text: row.text,
          heading_path: row.heading_path,
          token_count: row.token_count,
          embedding: row.embedding ? vectorLiteral(row.embedding) : null,
        })),
      );
      const { workspaceId, sourceId, documentId, generation } = target;
      await db.execute(sql`with input as (
          select x.position, x.text, x.token_count, x.embedding,
            array(select jsonb_array_elements_text(x.heading_path)) as heading_path
          from jsonb_to_recordset(${input}::jsonb)
            as x(position int, text text, heading_path jsonb, token_count int, embedding text)
        ), analysed as (
          select input.*, to_tsvector('english', ${searchText(sql`input.heading_path`, sql`input.text`)}) as search
          from input
        ), inserted as (
          insert into chunks (workspace_id, source_id, document_id, generation, position, text,
            heading_path, token_count, term_count, search)
          select ${workspaceId}, ${sourceId}, ${documentId}, ${generation}, a.position, a.text,
            a.heading_path, a.token_count,
            (select coalesce(sum(cardinality(u.positions)), 0) from unnest(a.search) u), a.search
          from analysed a
          returning id, position, term_count, search
        ), embedded as (
          insert into chunk_embeddings (chunk_id, workspace_id, source_id, generation, model, dimensions, embedding)
          select i.id, ${workspaceId}, ${sourceId}, ${generation}, ${model}, ${dimensions}, input.embedding::vector
          from inserted i join input on input.position = i.position
          where input.embedding is not null
        ), terms as (
          insert into term_stats (workspace_id, source_id, generation, lexeme, slot, chunks)
          select ${workspaceId}, ${sourceId}, ${generation}, u.lexeme, ${slot}, count(*)
          from inserted i, unnest(i.search) u
          group by u.lexeme order by u.lexeme
          on conflict (workspace_id, source_id, generation, lexeme, slot)
            do update set chunks = term_stats.chunks + excluded.chunks
        )
        insert into index_stats (workspace_id, source_id, generation, model, dimensions, slot, chunks, terms, writes)
        select ${workspaceId}, ${sourceId}, ${generation}, ${model}, ${dimensions}, ${slot}, count(*),
          coalesce(sum(term_count), 0), 1
        from inserted
        on conflict (workspace_id, source_id, generation, model, slot)
          do update set ${addedStats}`);
    },

    /** Whether a document has chunks in a generation (a cheap probe before a replacing delete). */
    async hasDocumentChunks(workspaceId: string, documentId: string, generation: number): Promise<boolean> {
      const rows = rowsOf<{ found: boolean }>(
        await db.execute(sql`select exists (select 1 from chunks where document_id = ${documentId}
          and generation = ${generation} and workspace_id = ${workspaceId}) as found`),
      );
      return rows[0]?.found === true;
    },

    /**
     * Deletes a document's chunks (of one generation, or all), their embeddings with them,
     * and takes them out of the statistics in `slot`.
     */
    async deleteDocumentChunks(workspaceId: string, documentId: string, slot: number, generation?: number) {
      const which = generation === undefined ? sql`` : sql`and c.generation = ${generation}`;
      await db.execute(sql`with gone as (
          delete from chunks c where c.workspace_id = ${workspaceId} and c.document_id = ${documentId} ${which}
          returning c.id, c.source_id, c.generation, c.term_count, c.search
        ), models as (
          select g.id, coalesce(e.model, '') as model, coalesce(e.dimensions, 0) as dimensions
          from gone g left join chunk_embeddings e on e.chunk_id = g.id
        ), terms as (
          insert into term_stats (workspace_id, source_id, generation, lexeme, slot, chunks)
          select ${workspaceId}, g.source_id, g.generation, u.lexeme, ${slot}, -count(*)
          from gone g, unnest(g.search) u
          group by g.source_id, g.generation, u.lexeme order by g.source_id, g.generation, u.lexeme
          on conflict (workspace_id, source_id, generation, lexeme, slot)
            do update set chunks = term_stats.chunks + excluded.chunks
        )
        insert into index_stats (workspace_id, source_id, generation, model, dimensions, slot, chunks, terms, writes)
        select ${workspaceId}, g.source_id, g.generation, m.model, m.dimensions, ${slot}, -count(*),
          -coalesce(sum(g.term_count), 0), 1
        from gone g join models m on m.id = g.id
        group by g.source_id, g.generation, m.model, m.dimensions
        on conflict (workspace_id, source_id, generation, model, slot)
          do update set ${addedStats}`);
    },

    /** Drops a source's chunks and statistics of generations below `generation` (all when undefined). */
    async dropGenerations(workspaceId: string, sourceId: string, below?: number) {
      const older = below === undefined ? sql`` : sql`and generation < ${below}`;
      await db.execute(
        sql`delete from chunks where workspace_id = ${workspaceId} and source_id = ${sourceId} ${older}`,
      );
      await db.execute(
        sql`delete from term_stats where workspace_id = ${workspaceId} and source_id = ${sourceId} ${older}`,
      );
      await db.execute(
        sql`delete from index_stats where workspace_id = ${workspaceId} and source_id = ${sourceId} ${older}`,
      );
    },

    async deleteSource(workspaceId: string, sourceId: string) {
      await db.execute(
        sql`delete from index_sources where workspace_id = ${workspaceId} and source_id = ${sourceId}`,
      );
    },

    /**
     * The scope's chunk count and token total, its embedding models, and its partitions (each
     * source's active generation) with their counts and versions.
     */
    async scopeStats(scope: SearchScope) {
      const rows = rowsOf<{
        source_id: string;
        generation: number;
        model: string;
        dimensions: number;
        chunks: number;
        terms: number;
        writes: number;
      }>(
        await db.execute(sql`select st.source_id, st.generation, st.model, st.dimensions::int as dimensions,
            sum(st.chunks)::float8 as chunks, sum(st.terms)::float8 as terms, sum(st.writes)::float8 as writes
          from index_stats st join ${activeGenerations(scope)} a
            on a.source_id = st.source_id and a.generation = st.generation
          where st.workspace_id = ${scope.workspaceId}
          group by st.source_id, st.generation, st.model, st.dimensions`),
      );
      const totals = { chunks: 0, terms: 0 };
      const byModel = new Map<string, ScopeModel>();
      const bySource = new Map<string, PartitionState & { writes: number }>();
      for (const row of rows) {
        const chunks = Number(row.chunks);
        const terms = Number(row.terms);
        totals.chunks += chunks;
        totals.terms += terms;
        if (row.model !== '') {
          const key = `${row.model}\u0000${row.dimensions}`;
          const model = byModel.get(key) ?? {
            model: row.model,
            dimensions: Number(row.dimensions),
            chunks: 0,
          };
          model.chunks += chunks;
          byModel.set(key, model);
        }
        const partition = bySource.get(row.source_id) ?? {
          workspaceId: scope.workspaceId,
          sourceId: row.source_id,
          generation: Number(row.generation),
          chunks: 0,
          terms: 0,
          version: '',
          writes: 0,
        };
        partition.chunks += chunks;
        partition.terms += terms;
        partition.writes += Number(row.writes);
        bySource.set(row.source_id, partition);
      }
      const models = [...byModel.values()].filter((model) => model.chunks > 0);
      const partitions: PartitionState[] = [...bySource.values()].map(({ writes, ...partition }) => ({
        ...partition,
        version: partitionVersion({ writes, chunks: partition.chunks, terms: partition.terms }),
      }));
      return { totals, models, partitions };
    },

    /** A partition's version now (as `scopeStats` reports it). */
    async partitionVersion(workspaceId: string, sourceId: string, generation: number): Promise<string> {
      const rows = rowsOf<{ writes: number; chunks: number; terms: number }>(
        await db.execute(sql`select coalesce(sum(writes), 0)::float8 as writes,
            coalesce(sum(chunks), 0)::float8 as chunks, coalesce(sum(terms), 0)::float8 as terms
          from index_stats
          where workspace_id = ${workspaceId} and source_id = ${sourceId} and generation = ${generation}`),
      );
      return partitionVersion(rows[0] ?? { writes: 0, chunks: 0, terms: 0 });
    },

    /**
     * Up to `limit` chunks of a partition after chunk `afterId`, in id order, with what the
     * in-memory postings need: document, BM25 length and the tsvector as text.
     */
    async partitionChunks(
      workspaceId: string,
      sourceId: string,
      generation: number,
      afterId: number,
      limit: number,
    ) {
      const rows = rowsOf<{ id: number; document_id: string; term_count: number; search: string }>(
        await db.execute(sql`select id, document_id, term_count, search::text as search from chunks
          where workspace_id = ${workspaceId} and source_id = ${sourceId} and generation = ${generation}
            and id > ${afterId}
          order by id limit ${limit}`),
      );
      return rows.map((row) => ({
        id: Number(row.id),
        documentId: row.document_id,
        length: Number(row.term_count),
        search: row.search,
      }));
    },

    /** The workspace's documents carrying any of `tags` (a search's tag filter, applied in memory). */
    async taggedDocuments(workspaceId: string, tags: string[]): Promise<Set<string>> {
      const rows = rowsOf<{ id: string }>(
        await db.execute(sql`select d.id from documents d
          where d.workspace_id = ${workspaceId} and d.tags && ${sql.param(tags)}::text[]`),
      );
      return new Set(rows.map((row) => row.id));
    },

    /** The query's lexemes (English stemming, stop words dropped) with their frequency in the scope. */
    async queryTerms(scope: SearchScope, query: string): Promise<TermRow[]> {
      const rows = rowsOf<{ lexeme: string; qtf: number; df: number }>(
        await db.execute(sql`with q as (
            select u.lexeme, cardinality(u.positions) as qtf from unnest(to_tsvector('english', ${query})) u
          )
          select q.lexeme, q.qtf, coalesce((
            select sum(t.chunks)::float8 from term_stats t join ${activeGenerations(scope)} a
              on a.source_id = t.source_id and a.generation = t.generation
            where t.workspace_id = ${scope.workspaceId} and t.lexeme = q.lexeme), 0) as df
          from q order by q.lexeme`),
      );
      return rows.map((row) => ({
        lexeme: row.lexeme,
        queryFrequency: Number(row.qtf),
        documentFrequency: Number(row.df),
      }));
    },

    /**
     * The `depth` best chunks by BM25 among those holding any of `candidates`, every term of
     * `terms` scored: tf read from the tsvector (`bm25_term_frequency`), the weights and the
     * average length computed by the caller. The subquery fence (`offset 0`) makes each tf a
     * single call per chunk.
     */
    async keywordSearch(
      scope: SearchScope,
      terms: WeightedLexeme[],
      candidates: WeightedLexeme[],
      averageLength: number,
      depth: number,
      params: { k1: number; b: number },
    ): Promise<ScoredChunk[]> {
      if (terms.length === 0 || candidates.length === 0) return [];
      const match = candidates.map((term) => tsqueryLiteral(term.lexeme)).join(' | ');
      const frequencies = sql.join(
        terms.map(
          (term, index) =>
            sql`bm25_term_frequency(c.search, ${tsqueryLiteral(term.lexeme)}::tsquery) as ${sql.raw(`f${index}`)}`,
        ),
        sql`, `,
      );
      const score = sql.join(
        terms.map((term, index) => {
          const f = sql.raw(`f${index}`);
          return sql`${term.weight}::float8 * ${f} / (${f} + norm)`;
        }),
        sql` + `,
      );
      const rows = rowsOf<{ id: number; document_id: string; score: number }>(
        await db.execute(sql`select id, document_id, (${score}) * ${params.k1 + 1}::float8 as score
          from (
            select c.id, c.document_id,
              ${params.k1}::float8 * (1 - ${params.b}::float8 + ${params.b}::float8 * c.term_count / ${averageLength}::float8) as norm,
              ${frequencies}
            from chunks c join ${activeGenerations(scope)} a
              on a.source_id = c.source_id and a.generation = c.generation
            where c.workspace_id = ${scope.workspaceId} and c.search @@ ${match}::tsquery
              ${tagFilter(scope, sql`c.document_id`)}
            offset 0
          ) scored
          order by score desc, id
          limit ${depth}`),
      );
      return rows.map((row) => ({
        chunkId: Number(row.id),
        documentId: row.document_id,
        score: Number(row.score),
      }));
    },

    /**
     * The `depth` chunks nearest to `vector` (cosine) among those embedded by `model`.
     * Sizes with an HNSW index are searched through it (pgvector's iterative scan keeps going
     * until enough rows pass the filters, `ef_search` at least `depth`); others exactly.
     * Must run in a transaction: the index settings are `set local`.
     */
    async vectorSearch(
      scope: SearchScope,
      model: ScopeModel,
      vector: number[],
      depth: number,
      indexed: 'vector' | 'halfvec' | null,
    ): Promise<ScoredChunk[]> {
      const n = sql.raw(String(Math.trunc(model.dimensions)));
      const column = indexed ? sql`e.embedding::${sql.raw(indexed)}(${n})` : sql`e.embedding`;
      const probe = indexed
        ? sql`${vectorLiteral(vector)}::${sql.raw(indexed)}(${n})`
        : sql`${vectorLiteral(vector)}::vector`;
      if (indexed) {
        await db.execute(sql`select set_config('hnsw.iterative_scan', 'relaxed_order', true),
          set_config('hnsw.ef_search', ${String(Math.min(1000, Math.max(40, depth)))}, true)`);
      }
      const rows = rowsOf<{ id: number; document_id: string; distance: number }>(
        await db.execute(sql`select nearest.chunk_id as id, c.document_id, nearest.distance from (
            select e.chunk_id, ${column} <=> ${probe} as distance
            from chunk_embeddings e join ${activeGenerations(scope)} a
              on a.source_id = e.source_id and a.generation = e.generation
            where e.workspace_id = ${scope.workspaceId} and e.dimensions = ${n} and e.model = ${model.model}
            order by ${column} <=> ${probe}
            limit ${depth}
          ) nearest join chunks c on c.id = nearest.chunk_id
          where true ${tagFilter(scope, sql`c.document_id`)}
          order by nearest.distance, nearest.chunk_id`),
      );
      return rows.map((row) => ({
        chunkId: Number(row.id),
        documentId: row.document_id,
        score: 1 - Number(row.distance),
      }));
    },

    /** The chunks' text, heading path and position with their document's and source's names. */
    async chunkDetails(workspaceId: string, ids: number[]): Promise<Map<number, ChunkDetail>> {
      if (ids.length === 0) return new Map();
      const rows = rowsOf<ChunkDetail>(
        await db.execute(sql`select c.id, c.text, c.heading_path, c.position, c.document_id,
            d.title, d.filename, d.tags, c.source_id, s.name as source_name
          from chunks c
          join documents d on d.id = c.document_id and d.workspace_id = c.workspace_id
          join sources s on s.id = c.source_id and s.workspace_id = c.workspace_id
          where c.workspace_id = ${workspaceId} and c.id = any(${sql.param(ids)}::bigint[])`),
      );
      return new Map(rows.map((row) => [Number(row.id), { ...row, id: Number(row.id) }]));
    },

    /** Refreshes the planner's statistics of the index's tables; returns the chunk count it saw. */
    async analyze(): Promise<number> {
      await db.execute(sql`analyze chunks, chunk_embeddings, term_stats, index_stats`);
      const rows = rowsOf<{ estimate: number }>(
        await db.execute(sql`select reltuples::float8 as estimate from pg_class where relname = 'chunks'`),
      );
      return Math.max(0, Number(rows[0]?.estimate ?? 0));
    },

    /** Adds search counts, one statement for all keys. */
    async addSearchCounts(counts: SearchCount[]) {
      if (counts.length === 0) return;
      await db.execute(sql`insert into search_stats (workspace_id, day, mode, searches, hits, results)
        select x.workspace_id, x.day, x.mode, x.searches, x.hits, x.results
        from jsonb_to_recordset(${JSON.stringify(
          counts.map((c) => ({
            workspace_id: c.workspaceId,
            day: c.day,
            mode: c.mode,
            searches: c.searches,
            hits: c.hits,
            results: c.results,
          })),
        )}::jsonb) as x(workspace_id uuid, day date, mode text, searches bigint, hits bigint, results bigint)
        -- a workspace deleted since its searches leaves nothing to count them against
        where exists (select 1 from workspaces w where w.id = x.workspace_id)
        order by x.workspace_id, x.day, x.mode
        on conflict (workspace_id, day, mode) do update set
          searches = search_stats.searches + excluded.searches,
          hits = search_stats.hits + excluded.hits,
          results = search_stats.results + excluded.results`);
    },

    /** Searches and hits of a workspace on or after `sinceDay`. */
    async searchCounts(workspaceId: string, sinceDay: string) {
      const rows = rowsOf<{ searches: number; hits: number }>(
        await db.execute(sql`select coalesce(sum(searches), 0)::float8 as searches,
            coalesce(sum(hits), 0)::float8 as hits
          from search_stats where workspace_id = ${workspaceId} and day >= ${sinceDay}::date`),
      );
      return { searches: Number(rows[0]?.searches ?? 0), hits: Number(rows[0]?.hits ?? 0) };
    },
  };
}

export type RetrievalRepository = ReturnType<typeof createRetrievalRepository>;
