import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Caller } from '../../caller.ts';
import { afterCommit, type Db, inTransaction, isTransaction } from '../../db/transaction.ts';
import { AppError, invalidFields } from '../../errors.ts';
import { LruCache } from '../../lib/lru-cache.ts';
import {
  createEmbeddings,
  DEFAULT_EMBEDDING,
  type EmbeddingDependencies,
  type EmbeddingSettings,
  type Embeddings,
} from './embeddings.ts';
import { PostingsBuilder, type PostingsIndex } from './postings.ts';
import { type BuiltPartition, createPostingsCache, type PostingsCacheOptions } from './postings-cache.ts';
import {
  averageLength,
  BM25_DEFAULTS,
  type Bm25Parameters,
  bestScoreByDocument,
  type CollapsedDocument,
  type CorpusStats,
  collapseByDocument,
  essentialTerms,
  firstPassTerms,
  fuseRanks,
  type RankedChunk,
  type ScoreParts,
  type WeightedTerm,
  weighTerms,
} from './ranking.ts';
import {
  type ChunkDetail,
  createRetrievalRepository,
  HNSW_DIMENSIONS,
  HNSW_HALFVEC_DIMENSIONS,
  type PartitionState,
  type ScopeModel,
  type SearchMode,
  type SearchScope,
} from './retrieval.repository.ts';
import { createSearchHealth } from './search-health.ts';
import { createSearchStats, type HitRate } from './search-stats.ts';

export type { EmbeddingSettings } from './embeddings.ts';
export { DEFAULT_EMBEDDING, NO_EMBEDDING } from './embeddings.ts';
export type { HitRate } from './search-stats.ts';

/** One chunk of a document as the chunker made it. */
export interface IndexedChunk {
  position: number;
  text: string;
  headingPath: string[];
  tokenCount: number;
}

/** A document's chunks ready to store: with their vectors when the source has an embedding model. */
export interface PreparedChunks {
  chunks: IndexedChunk[];
  /** `provider/model` of the vectors; null for keyword-only sources. */
  model: string | null;
  /** One vector per chunk, in order; null for keyword-only sources. */
  vectors: number[][] | null;
}

/** Where a document's chunks go. */
export interface IndexTarget {
  workspaceId: string;
  sourceId: string;
  documentId: string;
  /** The source's generation being written; the first one indexed becomes active by itself. */
  generation: number;
}

/** Per-arm weights of a hybrid search (reciprocal rank fusion). */
export interface ArmWeights {
  keyword: number;
  vector: number;
}

/** Both arms count the same unless a request says otherwise. */
export const DEFAULT_WEIGHTS: ArmWeights = { keyword: 1, vector: 1 };

/** Documents a search returns unless it asks for another number, and the most it may ask for. */
export const DEFAULT_TOP_K = 10;
export const MAX_TOP_K = 100;

/** Further chunks of a document shown with its best one. */
export const MAX_HIGHLIGHTS = 3;

/**
 * Postings per ranked chunk the first keyword pass may score before MaxScore decides which
 * terms matter: the rarest terms' chunks are cheap to score and give the threshold that rules
 * common terms out (at least `MIN_FIRST_PASS_POSTINGS`).
 */
export const FIRST_PASS_POSTINGS_PER_RESULT = 8;
export const MIN_FIRST_PASS_POSTINGS = 200;

/**
 * Postings the keyword arm's second pass may score when a search allows it (`exact: false`):
 * when the terms MaxScore cannot rule out hold more, only the chunks of the rarest of them (up
 * to this many postings) are ranked and the response says `exact: false`. Reading a candidate
 * costs microseconds, and the common words of a long query in a large scope can bring tens of
 * thousands; on a corpus of random word bags this is 7x faster but finds only 57 % of the exact
 * top 10 (bench/RESULTS.md), so exact ranking stays the default.
 */
export const KEYWORD_CANDIDATE_BUDGET = 6_000;

/**
 * Chunks written since the last `ANALYZE` that make the next one due (and at least this share
 * of the chunks counted then). PostgreSQL's autovacuum analyzes on its own; embedded PGlite
 * has no autovacuum, and without statistics its planner keeps the plans of an empty table.
 */
export const ANALYZE_AFTER_CHUNKS = 2_000;
export const ANALYZE_GROWTH = 0.2;

/**
 * In-memory postings (docs/retrieval.md, "Postings in memory"): the memory all partitions'
 * indexes may hold in one process, and the size from which a partition gets one (smaller ones
 * are searched in SQL, which is fast enough there).
 */
const DEFAULT_POSTINGS_MEMORY_BYTES = 256 * 1024 * 1024;
const DEFAULT_POSTINGS_MIN_CHUNKS = 2_000;

/**
 * The most chunk text one insert statement carries. Writing a chunk costs PostgreSQL its
 * tsvector and statistics, about 1.5 ms per 2 KB chunk in PGlite on a slow core, and PGlite runs
 * in the service's thread: a document's chunks in one statement held the event loop for
 * seconds (a 2 MB text, 1.5 s). Slices of this size take tens of milliseconds each.
 */
const INSERT_SLICE_CHARS = 16 * 1024;
/** The most chunks one insert statement carries, however short they are. */
const INSERT_SLICE_CHUNKS = 200;

/** A chunk's text with its heading path, in UTF-16 code units: what a statement carries. */
const textSize = (text: string, headingPath: string[]) =>
  headingPath.reduce((sum, heading) => sum + heading.length, text.length);

/** Splits a document's rows into statements of at most `INSERT_SLICE_CHARS` / `INSERT_SLICE_CHUNKS`. */
function insertSlices<T>(rows: T[], sizeOf: (row: T) => number): T[][] {
  const slices: T[][] = [];
  let slice: T[] = [];
  let chars = 0;
  for (const row of rows) {
    const size = sizeOf(row);
    if (slice.length > 0 && (chars + size > INSERT_SLICE_CHARS || slice.length >= INSERT_SLICE_CHUNKS)) {
      slices.push(slice);
      slice = [];
      chars = 0;
    }
    slice.push(row);
    chars += size;
  }
  if (slice.length > 0) slices.push(slice);
  return slices;
}

/** Chunks read per statement while building a partition's postings. */
const POSTINGS_PAGE = 1_000;

/** Chunks each arm ranks: enough for `topK` documents with highlights, and for the fusion. */
export const armDepth = (topK: number): number => Math.min(300, Math.max(30, topK * 3));

/** A search request (`POST /api/documents/search`). */
export interface SearchInput {
  query: string;
  top_k?: number;
  source_ids?: string[];
  tags?: string[];
  /** Default: `hybrid` when the searched sources have embeddings, else `keyword`. */
  mode?: SearchMode;
  /** Results scoring below it are left out (the scale depends on the mode: docs/retrieval.md). */
  min_score?: number;
  weights?: Partial<ArmWeights>;
  /** False allows the keyword candidate budget (`KEYWORD_CANDIDATE_BUDGET`); default true: exact. */
  exact?: boolean;
}

/** A chunk shown in a result. */
export interface ResultChunk {
  id: number;
  text: string;
  heading_path: string[];
  position: number;
}

/** One document found, with its best chunk and further matching chunks. */
export interface SearchResult {
  document: {
    id: string;
    title: string;
    filename: string;
    tags: string[];
    source: { id: string; name: string };
  };
  score: number;
  /** The document's keyword (BM25) and vector (cosine) scores before fusion; null where an arm did not find it or did not run. */
  scores: ScoreParts;
  chunk: ResultChunk;
  highlights: Array<{ chunk_id: number; text: string; heading_path: string[]; score: number }>;
}

export interface SearchResponse {
  results: SearchResult[];
  mode: SearchMode;
  /** False when the keyword arm ranked only the chunks of the rarest terms (the budget bound). */
  exact: boolean;
  took_ms: number;
}

/**
 * An optional second opinion on the order of the best results (a cross-encoder, a hosted
 * rerank API). Given the query and the best chunk of each of the first documents, it returns
 * one score per chunk, higher is better; results are reordered by it and carry its score.
 */
export interface Reranker {
  /** How many of the first documents it reorders. */
  depth: number;
  rerank(query: string, texts: string[], signal?: AbortSignal): Promise<number[]>;
}

export interface RetrievalDependencies extends EmbeddingDependencies {
  db: Db;
  /** When absent there is no rerank step. */
  reranker?: Reranker;
  bm25?: Bm25Parameters;
  /** Postings of the first keyword pass (by default from `FIRST_PASS_POSTINGS_PER_RESULT`). */
  firstPassPostings?: number;
  /** Postings the second keyword pass may score when a search allows it (`KEYWORD_CANDIDATE_BUDGET`). */
  candidateBudget?: number;
  /**
   * The `search.keyword_only` feature flag for the caller: when it answers true, every search
   * ranks by keywords only, whatever mode was asked (no query is embedded). Absent: never.
   */
  keywordOnly?: (caller: Pick<Caller, 'workspaceId' | 'userId'>) => Promise<boolean>;
  /**
   * In-memory postings: memory budget (0: off), smallest partition (chunks) that gets them,
   * and how soon a stale partition may be rebuilt (`postings-cache.ts`).
   */
  postings?: Pick<PostingsCacheOptions, 'rebuildSpacing' | 'minRebuildIntervalMs'> & {
    maxBytes?: number;
    minChunks?: number;
  };
  /** Told when building a partition's in-memory postings fails (it is searched in SQL meanwhile). */
  onPostingsError?: (error: unknown) => void;
  /** Told when a background `ANALYZE` fails. */
  onAnalyzeError?: (error: unknown) => void;
  /** Told when the hit-rate counts cannot be written (they are kept and retried). */
  onStatsError?: (error: unknown) => void;
  now?: () => Date;
}

/** How long a query's embedding is reused, and how many are kept. */
const QUERY_EMBEDDING_TTL_MS = 10 * 60_000;
const QUERY_EMBEDDING_CACHE = 1_000;

/** The search index: storing chunks (for the knowledge module), searching them, and the hit-rate. */
export function createRetrievalService(deps: RetrievalDependencies) {
  const params = deps.bm25 ?? BM25_DEFAULTS;
  const embeddings: Embeddings = createEmbeddings(deps);
  const queryVectors = new LruCache<string, Promise<number[]>>(QUERY_EMBEDDING_CACHE);
  const reader = createRetrievalRepository(deps.db);
  const stats = createSearchStats({
    write: (counts) => reader.addSearchCounts(counts),
    read: (workspaceId, since) => reader.searchCounts(workspaceId, since),
    ...(deps.now ? { now: deps.now } : {}),
    ...(deps.onStatsError ? { onError: deps.onStatsError } : {}),
  });

  /**
   * A partition's postings, read a page at a time; undefined when a write committed while it
   * was read (its version moved), since the pages may then mix two states.
   */
  async function loadPartition(partition: PartitionState): Promise<BuiltPartition | undefined> {
    const { workspaceId, sourceId, generation } = partition;
    const version = await reader.partitionVersion(workspaceId, sourceId, generation);
    const builder = new PostingsBuilder();
    for (let after = 0; ; ) {
      const rows = await reader.partitionChunks(workspaceId, sourceId, generation, after, POSTINGS_PAGE);
      for (const row of rows) builder.add(row.id, row.documentId, row.length, row.search);
      const last = rows.at(-1);
      if (!last || rows.length < POSTINGS_PAGE) break;
      after = last.id;
    }
    if ((await reader.partitionVersion(workspaceId, sourceId, generation)) !== version) return undefined;
    return { generation, version, index: await builder.finish() };
  }

  const postings = createPostingsCache({
    ...deps.postings,
    maxBytes: deps.postings?.maxBytes ?? DEFAULT_POSTINGS_MEMORY_BYTES,
    minChunks: deps.postings?.minChunks ?? DEFAULT_POSTINGS_MIN_CHUNKS,
    load: loadPartition,
    ...(deps.onPostingsError ? { onError: deps.onPostingsError } : {}),
  });

  let writtenSinceAnalyze = 0;
  let analyzedChunks = 0;
  let analyzing = false;

  /** Counts written chunks and, once enough were, refreshes the planner's statistics after commit. */
  function noteWritten(tx: Db, chunks: number) {
    writtenSinceAnalyze += chunks;
    if (analyzing || writtenSinceAnalyze < Math.max(ANALYZE_AFTER_CHUNKS, analyzedChunks * ANALYZE_GROWTH))
      return;
    analyzing = true;
    writtenSinceAnalyze = 0;
    afterCommit(tx, () => {
      reader
        .analyze()
        .then((chunks) => {
          analyzedChunks = chunks;
        })
        .catch((error: unknown) => deps.onAnalyzeError?.(error))
        .finally(() => {
          analyzing = false;
        });
    });
  }

  function requireTransaction(tx: Db, what: string) {
    // The statistics slot is a transaction-scoped advisory lock: outside a transaction it
    // would be released at once and two writers could share a slot's rows.
    if (!isTransaction(tx)) throw new Error(`${what} needs the caller's transaction (inTransaction)`);
  }

  /** The text embedded for a chunk: its heading path, then its text. */
  const embeddingText = (chunk: IndexedChunk) =>
    chunk.headingPath.length > 0 ? `${chunk.headingPath.join(' > ')}\n\n${chunk.text}` : chunk.text;

  /**
   * BM25 in SQL over the full-text index, the top `depth` with MaxScore pruning
   * (docs/retrieval.md): exact, unless the search allows a budget (`exact` false) and the terms
   * MaxScore cannot rule out hold more than its postings; then the chunks of the rarest of
   * those terms, up to the budget, are ranked (`exact: false`).
   */
  async function keywordInSql(
    scope: SearchScope,
    terms: WeightedTerm[],
    avg: number,
    depth: number,
    exact: boolean,
  ): Promise<{ ranked: RankedChunk[]; exact: boolean }> {
    const budget =
      deps.firstPassPostings ?? Math.max(MIN_FIRST_PASS_POSTINGS, depth * FIRST_PASS_POSTINGS_PER_RESULT);
    const first = firstPassTerms(terms, budget);
    const ranked = await reader.keywordSearch(scope, terms, first, avg, depth, params);
    if (first.length === terms.length) return { ranked, exact: true };
    const threshold = ranked.length >= depth ? (ranked[depth - 1] as RankedChunk).score : 0;
    // A hair below the threshold: the bound must not exclude a chunk that ties it.
    const essential = essentialTerms(terms, threshold * (1 - 1e-9));
    if (essential.every((term) => first.includes(term))) return { ranked, exact: true };
    const candidateBudget = deps.candidateBudget ?? KEYWORD_CANDIDATE_BUDGET;
    const postingCount = essential.reduce((sum, term) => sum + term.documentFrequency, 0);
    if (exact || postingCount <= candidateBudget) {
      return { ranked: await reader.keywordSearch(scope, terms, essential, avg, depth, params), exact: true };
    }
    const capped = firstPassTerms(essential, candidateBudget);
    return { ranked: await reader.keywordSearch(scope, terms, capped, avg, depth, params), exact: false };
  }

  /**
   * BM25 over the scope's partitions: those whose in-memory postings are current are scored
   * there (exact, a few nanoseconds per posting), the others in SQL; both with the scope's
   * statistics, merged into one ranking.
   */
  async function keywordArm(
    scope: SearchScope,
    query: string,
    totals: CorpusStats,
    partitions: PartitionState[],
    depth: number,
    exact: boolean,
  ): Promise<{ ranked: RankedChunk[]; exact: boolean }> {
    const terms = weighTerms(await reader.queryTerms(scope, query), totals, params);
    if (terms.length === 0) return { ranked: [], exact: true };
    const avg = averageLength(totals);
    const inMemory: PostingsIndex[] = [];
    const inSql: string[] = [];
    for (const partition of partitions) {
      const index = postings.lookup(partition);
      if (index) inMemory.push(index);
      else inSql.push(partition.sourceId);
    }
    if (inMemory.length === 0) return keywordInSql(scope, terms, avg, depth, exact);
    const [documents, fromSql] = await Promise.all([
      scope.tags && scope.tags.length > 0 ? reader.taggedDocuments(scope.workspaceId, scope.tags) : undefined,
      inSql.length > 0
        ? keywordInSql({ ...scope, sourceIds: inSql }, terms, avg, depth, exact)
        : { ranked: [], exact: true },
    ]);
    const ranked = [
      ...fromSql.ranked,
      ...inMemory.flatMap((index) => index.top(terms, avg, params, depth, documents)),
    ]
      .sort(byScore)
      .slice(0, depth);
    return { ranked, exact: fromSql.exact };
  }

  async function queryVector(
    caller: Pick<Caller, 'workspaceId' | 'userId'>,
    model: ScopeModel,
    query: string,
    signal?: AbortSignal,
  ): Promise<number[]> {
    const slash = model.model.indexOf('/');
    const settings = { provider: model.model.slice(0, slash), model: model.model.slice(slash + 1) };
    const key = `${caller.workspaceId}\u0000${model.model}\u0000${query}`;
    let vector = queryVectors.get(key);
    if (!vector) {
      const embedder = embeddings.embedder(caller.workspaceId, settings, caller.userId);
      if (!embedder) return [];
      vector = embedder.embed([query], signal).then((vectors) => vectors[0] ?? []);
      queryVectors.set(key, vector, Date.now() + QUERY_EMBEDDING_TTL_MS);
      vector.catch(() => queryVectors.delete(key));
    }
    const value = await vector;
    if (value.length !== model.dimensions) {
      throw new AppError(
        502,
        'provider_error',
        `${model.model} embedded the query in ${value.length} dimensions, its chunks have ${model.dimensions}`,
      );
    }
    return value;
  }

  /** pgvector similarity per embedding model in scope, merged by cosine similarity. */
  async function vectorArm(
    caller: Pick<Caller, 'workspaceId' | 'userId'>,
    scope: SearchScope,
    models: ScopeModel[],
    query: string,
    depth: number,
    signal?: AbortSignal,
  ): Promise<RankedChunk[]> {
    const probes = await Promise.all(models.map((model) => queryVector(caller, model, query, signal)));
    const lists = await inTransaction(deps.db, async (tx) => {
      const repository = createRetrievalRepository(tx);
      const found: RankedChunk[][] = [];
      for (const [index, model] of models.entries()) {
        const indexed = (HNSW_DIMENSIONS as readonly number[]).includes(model.dimensions)
          ? 'vector'
          : (HNSW_HALFVEC_DIMENSIONS as readonly number[]).includes(model.dimensions)
            ? 'halfvec'
            : null;
        found.push(await repository.vectorSearch(scope, model, probes[index] as number[], depth, indexed));
      }
      return found;
    });
    return lists.flat().sort(byScore).slice(0, depth);
  }

  async function rerank(
    query: string,
    documents: CollapsedDocument[],
    details: Map<number, ChunkDetail>,
    signal?: AbortSignal,
  ): Promise<CollapsedDocument[]> {
    const reranker = deps.reranker;
    if (!reranker || documents.length === 0) return documents;
    const head = documents.slice(0, reranker.depth);
    const scores = await reranker.rerank(
      query,
      head.map((document) => details.get(document.best.chunkId)?.text ?? ''),
      signal,
    );
    const rescored = head
      .map((document, index) => ({ ...document, score: scores[index] ?? Number.NEGATIVE_INFINITY }))
      .sort((a, b) => b.score - a.score);
    return [...rescored, ...documents.slice(reranker.depth)];
  }

  /** Ranks the scope's chunks for `input` (keyword, vector or fused), collapses them per document, reads their text, reranks. */
  async function rankAndRead(
    caller: Pick<Caller, 'workspaceId' | 'userId'>,
    input: SearchInput,
    signal?: AbortSignal,
  ): Promise<{
    mode: SearchMode;
    exact: boolean;
    documents: CollapsedDocument[];
    details: Map<number, ChunkDetail>;
    parts: Map<string, ScoreParts>;
  }> {
    const topK = input.top_k ?? DEFAULT_TOP_K;
    const scope: SearchScope = {
      workspaceId: caller.workspaceId,
      ...(input.source_ids ? { sourceIds: input.source_ids } : {}),
      ...(input.tags ? { tags: input.tags } : {}),
    };
    const { totals, models, partitions } = await reader.scopeStats(scope);
    const mode: SearchMode = input.mode ?? (models.length > 0 ? 'hybrid' : 'keyword');
    if (mode !== 'keyword' && models.length === 0 && totals.chunks > 0) {
      throw invalidFields([
        { field: 'body.mode', message: `${mode} needs embeddings, and the sources searched have none` },
      ]);
    }
    const weights = { ...DEFAULT_WEIGHTS, ...input.weights };
    const depth = armDepth(topK);
    // In hybrid mode an arm weighted 0 is not run at all.
    const runKeyword = mode === 'keyword' || (mode === 'hybrid' && weights.keyword > 0);
    const runVector = models.length > 0 && (mode === 'vector' || (mode === 'hybrid' && weights.vector > 0));
    const [{ ranked: keyword, exact }, vector] = await Promise.all([
      runKeyword
        ? keywordArm(scope, input.query, totals, partitions, depth, input.exact ?? true)
        : { ranked: [], exact: true },
      runVector ? vectorArm(caller, scope, models, input.query, depth, signal) : [],
    ]);
    const ranked =
      mode === 'keyword'
        ? keyword
        : mode === 'vector'
          ? vector
          : fuseRanks([
              { ranked: keyword, weight: weights.keyword },
              { ranked: vector, weight: weights.vector },
            ]);
    const collapsed = collapseByDocument(ranked, topK, MAX_HIGHLIGHTS);
    const ids = collapsed.flatMap((document) => [
      document.best.chunkId,
      ...document.highlights.map((chunk) => chunk.chunkId),
    ]);
    const details = await reader.chunkDetails(caller.workspaceId, ids);
    const documents = await rerank(input.query, collapsed, details, signal);
    return { mode, exact, documents, details, parts: scoreParts(collapsed, keyword, vector) };
  }

  /**
   * Each returned document's score in each arm, from the arms' rankings already in memory (at
   * most `depth` chunks each): an arm that was not run ranked nothing, so its part is null.
   */
  function scoreParts(
    documents: CollapsedDocument[],
    keyword: RankedChunk[],
    vector: RankedChunk[],
  ): Map<string, ScoreParts> {
    const ids = new Set(documents.map((document) => document.documentId));
    const keywordBest = bestScoreByDocument(keyword, ids);
    const vectorBest = bestScoreByDocument(vector, ids);
    return new Map(
      [...ids].map((id) => [
        id,
        { keyword: keywordBest.get(id) ?? null, vector: vectorBest.get(id) ?? null },
      ]),
    );
  }

  function toResult(
    document: CollapsedDocument,
    details: Map<number, ChunkDetail>,
    parts: Map<string, ScoreParts>,
  ): SearchResult | null {
    const best = details.get(document.best.chunkId);
    // A chunk deleted between ranking and reading (a concurrent reindex swap) is skipped.
    if (!best) return null;
    return {
      document: {
        id: best.document_id,
        title: best.title,
        filename: best.filename,
        tags: best.tags,
        source: { id: best.source_id, name: best.source_name },
      },
      score: document.score,
      scores: parts.get(document.documentId) ?? { keyword: null, vector: null },
      chunk: { id: best.id, text: best.text, heading_path: best.heading_path, position: best.position },
      highlights: document.highlights.flatMap((chunk) => {
        const detail = details.get(chunk.chunkId);
        return detail
          ? [
              {
                chunk_id: detail.id,
                text: detail.text,
                heading_path: detail.heading_path,
                score: chunk.score,
              },
            ]
          : [];
      }),
    };
  }

  /**
   * Adds `prepared` to the document's chunks in `target.generation`, in the caller's
   * transaction, in statements of bounded size with a turn of the event loop between them;
   * with `replace`, the document's earlier chunks of that generation go first. A generation
   * older than the source's active one is refused (409 `index_generation_stale`).
   */
  async function writeChunks(
    tx: Db,
    target: IndexTarget,
    prepared: PreparedChunks,
    options: { replace: boolean },
  ): Promise<void> {
    requireTransaction(tx, 'writeChunks');
    const positions = new Set(prepared.chunks.map((chunk) => chunk.position));
    if (positions.size !== prepared.chunks.length) throw new Error('chunk positions must be unique');
    if (prepared.vectors && prepared.vectors.length !== prepared.chunks.length) {
      throw new Error('prepared chunks need one vector each');
    }
    const repository = createRetrievalRepository(tx);
    const active = await repository.ensureActiveGeneration(
      target.workspaceId,
      target.sourceId,
      target.generation,
    );
    if (target.generation < active) throw staleGeneration(target.generation, active);
    const slot = await repository.takeSlot(target.workspaceId);
    if (
      options.replace &&
      (await repository.hasDocumentChunks(target.workspaceId, target.documentId, target.generation))
    ) {
      await repository.deleteDocumentChunks(target.workspaceId, target.documentId, slot, target.generation);
    }
    const rows = prepared.chunks.map((chunk, index) => ({
      position: chunk.position,
      text: chunk.text,
      heading_path: chunk.headingPath,
      token_count: chunk.tokenCount,
      embedding: prepared.vectors?.[index] ?? null,
    }));
    for (const [index, slice] of insertSlices(rows, (row) =>
      textSize(row.text, row.heading_path),
    ).entries()) {
      // Between statements the event loop turns: PGlite runs each statement in this thread.
      if (index > 0) await nextTurn();
      await repository.insertChunks(target, slice, prepared.model ?? '', slot);
    }
    noteWritten(tx, prepared.chunks.length);
  }

  return {
    /** Records hit-rate counts; `services.ts` starts and stops it with the process. */
    statsComponent: stats.component,
    /**
     * The local embedding models' row in the health report when EMBEDDING_MODELS_DIR is set
     * (down when their optional package is missing); stopping it ends their worker thread.
     */
    localModelsComponent: deps.localModels?.configured ? deps.localModels.component : undefined,

    /** The `Vector Search` row of the health report: what search can do here. */
    healthComponent: createSearchHealth({
      vectorExtensionVersion: () => reader.vectorExtensionVersion(),
      localModelsConfigured: deps.localModels?.configured ?? false,
    }),

    /**
     * Embeds a document's chunks (heading path and text) OUTSIDE any transaction: it calls the
     * embedding provider. Keyword-only settings return the chunks as they are.
     */
    async prepare(
      workspaceId: string,
      embedding: EmbeddingSettings,
      chunks: IndexedChunk[],
      signal?: AbortSignal,
    ): Promise<PreparedChunks> {
      const embedder = embeddings.embedder(workspaceId, embedding);
      if (!embedder || chunks.length === 0) return { chunks, model: null, vectors: null };
      const vectors = await embedder.embed(chunks.map(embeddingText), signal);
      return { chunks, model: embedder.model, vectors };
    },

    /**
     * Splits prepared chunks into the slices one statement writes (`INSERT_SLICE_CHARS`): a
     * caller that cannot hold the database for a whole document (the embedded database runs in
     * the service's thread, one transaction at a time) writes them with `writeChunks`, each in
     * a transaction of its own.
     */
    slices(prepared: PreparedChunks): PreparedChunks[] {
      const indexes = insertSlices(
        prepared.chunks.map((chunk, index) => ({ chunk, index })),
        ({ chunk }) => textSize(chunk.text, chunk.headingPath),
      );
      return indexes.map((slice) => ({
        chunks: slice.map(({ chunk }) => chunk),
        model: prepared.model,
        vectors: prepared.vectors ? slice.map(({ index }) => prepared.vectors?.[index] as number[]) : null,
      }));
    },

    writeChunks,

    /**
     * Makes `prepared` the document's chunks in `target.generation`, in the caller's
     * transaction: the document's earlier chunks of that generation are replaced, those of
     * other generations stay until `activateGeneration`. A generation older than the source's
     * active one is refused (409 `index_generation_stale`).
     */
    async indexDocument(tx: Db, target: IndexTarget, prepared: PreparedChunks): Promise<void> {
      await writeChunks(tx, target, prepared, { replace: true });
    },

    /**
     * In the caller's transaction: searches of the source read `generation` from now on, and
     * its older chunks and statistics are removed (the reindex swap).
     */
    async activateGeneration(tx: Db, workspaceId: string, sourceId: string, generation: number) {
      requireTransaction(tx, 'activateGeneration');
      const repository = createRetrievalRepository(tx);
      const active = await repository.activeGeneration(workspaceId, sourceId);
      if (active !== undefined && generation < active) throw staleGeneration(generation, active);
      await repository.setActiveGeneration(workspaceId, sourceId, generation);
      await repository.dropGenerations(workspaceId, sourceId, generation);
    },

    /** Removes a document's chunks of every generation, in the caller's transaction. */
    async removeDocument(tx: Db, workspaceId: string, documentId: string) {
      requireTransaction(tx, 'removeDocument');
      const repository = createRetrievalRepository(tx);
      const slot = await repository.takeSlot(workspaceId);
      await repository.deleteDocumentChunks(workspaceId, documentId, slot);
    },

    /** Removes a source's chunks, statistics and active generation, in the caller's transaction. */
    async removeSource(tx: Db, workspaceId: string, sourceId: string) {
      requireTransaction(tx, 'removeSource');
      const repository = createRetrievalRepository(tx);
      await repository.dropGenerations(workspaceId, sourceId);
      await repository.deleteSource(workspaceId, sourceId);
      afterCommit(tx, () => postings.forget(workspaceId, sourceId));
    },

    /** Throws 400 naming `body.embedding.provider`/`.model` when the settings cannot embed. */
    validateEmbedding: (workspaceId: string, embedding: EmbeddingSettings) =>
      embeddings.validate(workspaceId, embedding),

    /** The embedding settings a source gets when it names none. */
    defaultEmbedding: (): EmbeddingSettings => ({ ...DEFAULT_EMBEDDING }),

    /**
     * Searches the caller's workspace: keyword (BM25), vector (cosine similarity) or hybrid
     * (reciprocal rank fusion of both), collapsed per document, then the optional rerank.
     */
    async search(
      caller: Pick<Caller, 'workspaceId' | 'userId'>,
      input: SearchInput,
      signal?: AbortSignal,
    ): Promise<SearchResponse> {
      const started = performance.now();
      if (input.mode !== 'keyword' && (await deps.keywordOnly?.(caller)))
        input = { ...input, mode: 'keyword' };
      let found = await rankAndRead(caller, input, signal);
      // Ranking and reading the chunks are separate statements: a reindex swap committed
      // between them deletes the ranked chunks of the old generation. Searching once more
      // then reads the new generation whole, so a swap never answers with missing results.
      if (found.documents.some((document) => !found.details.has(document.best.chunkId))) {
        found = await rankAndRead(caller, input, signal);
      }
      const { mode, exact, documents, details, parts } = found;
      const minScore = input.min_score;
      const results = documents
        .filter((document) => minScore === undefined || document.score >= minScore)
        .flatMap((document) => toResult(document, details, parts) ?? []);
      stats.record(caller.workspaceId, mode, results.length, results.length > 0);
      return { results, mode, exact, took_ms: Math.round((performance.now() - started) * 10) / 10 };
    },

    /** The in-memory postings: what they hold, and a promise of the builds running now settling. */
    postings: { usage: postings.usage, settled: postings.settled },

    /** The workspace's retrieval hit-rate since `since` (whole UTC days; default the last 24 h). */
    hitRate: (workspaceId: string, since?: Date): Promise<HitRate> => stats.hitRate(workspaceId, since),
  };
}

export type RetrievalService = ReturnType<typeof createRetrievalService>;

/** Higher score first; ties in chunk id order (as the SQL orders them). */
const byScore = (a: RankedChunk, b: RankedChunk) => b.score - a.score || a.chunkId - b.chunkId;

function staleGeneration(generation: number, active: number) {
  return new AppError(
    409,
    'index_generation_stale',
    `generation ${generation} is older than the source's active generation ${active}`,
  );
}
