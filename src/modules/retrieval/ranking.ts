/**
 * The ranking arithmetic of search, free of SQL and HTTP: BM25's weights and bounds, the
 * choice of which query terms must fetch candidates (MaxScore), reciprocal rank fusion, and
 * the collapse of ranked chunks into documents. The repository evaluates the same BM25 in
 * SQL with the weights computed here (docs/retrieval.md).
 *
 *   score(chunk) = sum over query lexemes t of
 *                    qtf(t) * idf(t) * tf(t) * (k1 + 1) / (tf(t) + k1 * (1 - b + b * len / avglen))
 *   idf(t)       = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
 */

/** BM25's free parameters. */
export interface Bm25Parameters {
  /** Term-frequency saturation: how fast repeats of a term stop adding. */
  k1: number;
  /** Length normalisation: 0 ignores a chunk's length, 1 divides fully by it. */
  b: number;
}

/**
 * Anserini's BM25 defaults for BEIR (k1 0.9, b 0.4), which also measured best on a split of
 * SciFact's training claims among the settings tried (bench/RESULTS.md).
 */
export const BM25_DEFAULTS: Bm25Parameters = { k1: 0.9, b: 0.4 };

/** Statistics of the searched scope: the sources' active generations. */
export interface CorpusStats {
  /** Chunks in scope (BM25's N). */
  chunks: number;
  /** Tokens of all those chunks, for the average length. */
  terms: number;
}

/** One lexeme of the query with its statistics. */
export interface QueryTerm {
  lexeme: string;
  /** How often the query says it (BM25 sums repeated query terms). */
  queryFrequency: number;
  /** Chunks in scope that hold it. */
  documentFrequency: number;
}

/** A query term ready for scoring: its weight (qtf x idf) and the most it can add to a score. */
export interface WeightedTerm extends QueryTerm {
  weight: number;
  upperBound: number;
}

/** Lucene's BM25 idf: never negative, however common the term. */
export function idf(chunks: number, documentFrequency: number): number {
  return Math.log(1 + (chunks - documentFrequency + 0.5) / (documentFrequency + 0.5));
}

/** The average chunk length, 1 for an empty scope (any positive number would do: nothing scores). */
export function averageLength(stats: CorpusStats): number {
  return stats.chunks > 0 && stats.terms > 0 ? stats.terms / stats.chunks : 1;
}

/** One term's contribution to a chunk's score, as the SQL computes it. */
export function termScore(
  weight: number,
  termFrequency: number,
  length: number,
  averageLength: number,
  params: Bm25Parameters = BM25_DEFAULTS,
): number {
  if (termFrequency <= 0) return 0;
  const norm = params.k1 * (1 - params.b + (params.b * length) / averageLength);
  return (weight * termFrequency * (params.k1 + 1)) / (termFrequency + norm);
}

/** The BM25 score of a chunk from its term frequencies (lexeme -> tf) and length. */
export function bm25(
  terms: WeightedTerm[],
  frequencies: ReadonlyMap<string, number>,
  length: number,
  stats: CorpusStats,
  params: Bm25Parameters = BM25_DEFAULTS,
): number {
  const avg = averageLength(stats);
  return terms.reduce(
    (sum, term) => sum + termScore(term.weight, frequencies.get(term.lexeme) ?? 0, length, avg, params),
    0,
  );
}

/**
 * Weights the query's terms. A term no chunk holds weighs nothing and is dropped; a term's
 * upper bound is its weight times (k1 + 1), the limit of the saturation as tf grows.
 */
export function weighTerms(
  terms: QueryTerm[],
  stats: CorpusStats,
  params: Bm25Parameters = BM25_DEFAULTS,
): WeightedTerm[] {
  return terms
    .filter((term) => term.documentFrequency > 0)
    .map((term) => {
      const weight = term.queryFrequency * idf(stats.chunks, term.documentFrequency);
      return { ...term, weight, upperBound: weight * (params.k1 + 1) };
    });
}

/**
 * MaxScore's split of the query terms for a top-`depth` search: sorted from the least to
 * the most valuable, the longest prefix whose upper bounds add up to at most `threshold`
 * cannot, alone, lift a chunk to `threshold`. A chunk holding none of the other ("essential")
 * terms scores below `threshold`, so once `threshold` is a score `depth` chunks reach, only
 * chunks holding an essential term need scoring, and the top `depth` stays exact.
 */
export function essentialTerms(terms: WeightedTerm[], threshold: number): WeightedTerm[] {
  const ascending = [...terms].sort((a, b) => a.upperBound - b.upperBound);
  let bound = 0;
  let prefix = 0;
  while (prefix < ascending.length) {
    const next = bound + (ascending[prefix] as WeightedTerm).upperBound;
    if (next > threshold) break;
    bound = next;
    prefix += 1;
  }
  return ascending.slice(prefix);
}

/**
 * The terms a first, cheap pass fetches candidates for: the rarest ones (highest idf), as
 * many as fit `budget` postings, and at least one. Their candidates' `depth`-th score is
 * a safe threshold for `essentialTerms`.
 */
export function firstPassTerms(terms: WeightedTerm[], budget: number): WeightedTerm[] {
  const rarest = [...terms].sort((a, b) => a.documentFrequency - b.documentFrequency);
  const chosen: WeightedTerm[] = [];
  let postings = 0;
  for (const term of rarest) {
    if (chosen.length > 0 && postings + term.documentFrequency > budget) break;
    chosen.push(term);
    postings += term.documentFrequency;
  }
  return chosen;
}

/** A chunk an arm found, with the arm's score. */
export interface RankedChunk {
  chunkId: number;
  documentId: string;
  score: number;
}

/** One arm of a hybrid search: its ranked chunks (best first) and its weight in the fusion. */
export interface FusionArm {
  ranked: RankedChunk[];
  weight: number;
}

/** Reciprocal rank fusion's k: ranks past the first few differ little (Cormack et al. 2009). */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: a chunk's fused score is the sum over arms of
 * weight / (k + rank), rank counted from 1, divided by the best score possible (first in every
 * arm) so it reads from 0 to 1. Ties keep the order of the first arm that ranked them.
 * Arms weighted 0 are left out.
 */
export function fuseRanks(all: FusionArm[], k: number = RRF_K): RankedChunk[] {
  // An arm weighted 0 adds nothing: what only it found is not a result.
  const arms = all.filter((arm) => arm.weight > 0);
  const best = arms.reduce((sum, arm) => sum + arm.weight / (k + 1), 0);
  if (best <= 0) return [];
  const fused = new Map<number, RankedChunk & { order: number }>();
  let order = 0;
  for (const arm of arms) {
    arm.ranked.forEach((chunk, index) => {
      const add = arm.weight / (k + index + 1) / best;
      const seen = fused.get(chunk.chunkId);
      if (seen) seen.score += add;
      else fused.set(chunk.chunkId, { ...chunk, score: add, order: order++ });
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .map(({ order: _order, ...chunk }) => chunk);
}

/**
 * A document's score in each arm as that arm computed it, before fusion: keyword BM25 and
 * vector cosine similarity of its best chunk in the arm's ranking; null when the arm did not
 * rank any of its chunks (within its depth) or was not run.
 */
export interface ScoreParts {
  keyword: number | null;
  vector: number | null;
}

/**
 * The best score of each document in an arm's ranking, for the documents in `documentIds`
 * only: one pass over the arm's ranked chunks (at most its depth), no further query.
 */
export function bestScoreByDocument(
  ranked: RankedChunk[],
  documentIds: ReadonlySet<string>,
): Map<string, number> {
  const best = new Map<string, number>();
  for (const chunk of ranked) {
    if (!documentIds.has(chunk.documentId)) continue;
    const seen = best.get(chunk.documentId);
    if (seen === undefined || chunk.score > seen) best.set(chunk.documentId, chunk.score);
  }
  return best;
}

/** A document's place in the results: its best chunk and the next best as highlights. */
export interface CollapsedDocument {
  documentId: string;
  score: number;
  best: RankedChunk;
  highlights: RankedChunk[];
}

/**
 * Groups ranked chunks by document, in the order of each document's best chunk, and keeps
 * the first `limit` documents with at most `maxHighlights` further chunks each.
 */
export function collapseByDocument(
  ranked: RankedChunk[],
  limit: number,
  maxHighlights: number,
): CollapsedDocument[] {
  const documents = new Map<string, CollapsedDocument>();
  for (const chunk of ranked) {
    const seen = documents.get(chunk.documentId);
    if (seen) {
      if (seen.highlights.length < maxHighlights) seen.highlights.push(chunk);
    } else if (documents.size < limit) {
      documents.set(chunk.documentId, {
        documentId: chunk.documentId,
        score: chunk.score,
        best: chunk,
        highlights: [],
      });
    }
  }
  return [...documents.values()];
}
