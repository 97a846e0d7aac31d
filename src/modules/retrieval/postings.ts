/**
 * An in-memory inverted index of one partition of the search index (a source's active
 * generation), built from the chunks' tsvectors, and exact BM25 over it. Pure: the cache that
 * fills and validates it lives in `postings-cache.ts` (docs/retrieval.md, "Postings in memory").
 *
 * Postings are stored term-major in flat typed arrays (a chunk number and a term frequency
 * per posting, 6 bytes), so a search adds up a term's contributions in one tight loop over
 * contiguous memory: a few nanoseconds per posting where the SQL path pays microseconds per
 * candidate row.
 */

import type { Bm25Parameters, RankedChunk, WeightedTerm } from './ranking.ts';

/** A typed array that doubles when full. */
class Growable<T extends Int32Array | Uint16Array | Float64Array> {
  length = 0;
  data: T;
  private readonly make: (size: number) => T;

  constructor(data: T, make: (size: number) => T) {
    this.data = data;
    this.make = make;
  }

  push(value: number) {
    if (this.length === this.data.length) {
      const bigger = this.make(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = value;
  }

  /** The filled part, as a copy of exactly its size. */
  trimmed(): T {
    return this.data.slice(0, this.length) as T;
  }
}

/** Chunks inverted between two returns to the event loop (about 10 ms of work). */
const FINISH_SLICE = 8_000;

const QUOTE = 39; // '
const BACKSLASH = 92; // \
const COLON = 58; // :
const COMMA = 44; // ,

/**
 * Calls `visit(lexeme, frequency)` for each lexeme of a tsvector in PostgreSQL's text output
 * (`'lexeme':1,5A 'other':3`): lexemes are quoted with `'` and `\` doubled, the frequency is
 * the number of positions (1 for a lexeme stored without positions).
 */
export function forEachLexeme(text: string, visit: (lexeme: string, frequency: number) => void): void {
  const end = text.length;
  let at = 0;
  while (at < end) {
    while (at < end && text.charCodeAt(at) !== QUOTE) at++;
    if (at >= end) return;
    const start = ++at;
    let escaped = false;
    for (;;) {
      if (at >= end) throw new Error('unterminated lexeme in tsvector text');
      const code = text.charCodeAt(at);
      if (code === BACKSLASH) {
        escaped = true;
        at += 2;
      } else if (code === QUOTE) {
        if (text.charCodeAt(at + 1) !== QUOTE) break;
        escaped = true;
        at += 2;
      } else at++;
    }
    const raw = text.slice(start, at);
    const lexeme = escaped ? raw.replace(/''|\\(.)/g, (_pair, char: string | undefined) => char ?? "'") : raw;
    at++;
    let frequency = 1;
    if (text.charCodeAt(at) === COLON) {
      at++;
      while (at < end && text.charCodeAt(at) !== 32) {
        if (text.charCodeAt(at) === COMMA) frequency++;
        at++;
      }
    }
    visit(lexeme, frequency);
  }
}

/** Collects chunks (in ascending id order) and turns them into a `PostingsIndex`. */
export class PostingsBuilder {
  private readonly termIds = new Map<string, number>();
  private readonly termPostings = new Growable(new Int32Array(1024), (n) => new Int32Array(n));
  private readonly forwardTerms = new Growable(new Int32Array(1 << 16), (n) => new Int32Array(n));
  private readonly forwardFrequencies = new Growable(new Uint16Array(1 << 16), (n) => new Uint16Array(n));
  private readonly chunkIds = new Growable(new Float64Array(1024), (n) => new Float64Array(n));
  private readonly chunkLengths = new Growable(new Int32Array(1024), (n) => new Int32Array(n));
  private readonly chunkDocuments = new Growable(new Int32Array(1024), (n) => new Int32Array(n));
  private readonly chunkStarts = new Growable(new Int32Array(1024), (n) => new Int32Array(n));
  private readonly documentIndex = new Map<string, number>();
  private readonly documentIds: string[] = [];
  private lastId = Number.NEGATIVE_INFINITY;

  /** Adds a chunk: its id (greater than the last one added), document, BM25 length and tsvector text. */
  add(chunkId: number, documentId: string, length: number, tsvector: string): void {
    if (!(chunkId > this.lastId)) throw new Error('chunks must be added in ascending id order');
    this.lastId = chunkId;
    let document = this.documentIndex.get(documentId);
    if (document === undefined) {
      document = this.documentIds.length;
      this.documentIndex.set(documentId, document);
      this.documentIds.push(documentId);
    }
    this.chunkIds.push(chunkId);
    this.chunkLengths.push(length);
    this.chunkDocuments.push(document);
    this.chunkStarts.push(this.forwardTerms.length);
    forEachLexeme(tsvector, (lexeme, frequency) => {
      let term = this.termIds.get(lexeme);
      if (term === undefined) {
        term = this.termIds.size;
        this.termIds.set(lexeme, term);
        this.termPostings.push(0);
      }
      this.termPostings.data[term] = (this.termPostings.data[term] as number) + 1;
      this.forwardTerms.push(term);
      this.forwardFrequencies.push(Math.min(frequency, 0xffff));
    });
  }

  /**
   * Inverts the chunks into term-major postings, each term's in chunk order, giving the event
   * loop back every `FINISH_SLICE` chunks (a large partition's inversion takes some 200 ms).
   */
  async finish(): Promise<PostingsIndex> {
    const terms = this.termIds.size;
    const starts = new Int32Array(terms + 1);
    for (let term = 0; term < terms; term++) {
      starts[term + 1] = (starts[term] as number) + (this.termPostings.data[term] as number);
    }
    const total = starts[terms] as number;
    const postingChunks = new Int32Array(total);
    const postingFrequencies = new Uint16Array(total);
    const next = starts.slice(0, terms);
    const chunkCount = this.chunkIds.length;
    const forwardTerms = this.forwardTerms.data;
    const forwardFrequencies = this.forwardFrequencies.data;
    const chunkStarts = this.chunkStarts.data;
    for (let chunk = 0; chunk < chunkCount; chunk++) {
      if (chunk > 0 && chunk % FINISH_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
      const from = chunkStarts[chunk] as number;
      const to = chunk + 1 < chunkCount ? (chunkStarts[chunk + 1] as number) : this.forwardTerms.length;
      for (let at = from; at < to; at++) {
        const term = forwardTerms[at] as number;
        const slot = next[term] as number;
        next[term] = slot + 1;
        postingChunks[slot] = chunk;
        postingFrequencies[slot] = forwardFrequencies[at] as number;
      }
    }
    return new PostingsIndex({
      termIds: this.termIds,
      starts,
      postingChunks,
      postingFrequencies,
      chunkIds: this.chunkIds.trimmed(),
      chunkLengths: this.chunkLengths.trimmed(),
      chunkDocuments: this.chunkDocuments.trimmed(),
      documentIds: this.documentIds,
      documentIndex: this.documentIndex,
    });
  }
}

interface IndexParts {
  termIds: Map<string, number>;
  starts: Int32Array;
  postingChunks: Int32Array;
  postingFrequencies: Uint16Array;
  chunkIds: Float64Array;
  chunkLengths: Int32Array;
  chunkDocuments: Int32Array;
  documentIds: string[];
  documentIndex: Map<string, number>;
}

/** A bounded min-heap of (score, chunk) keeping the `capacity` best: higher score, then lower id. */
class TopChunks {
  private readonly scores: Float64Array;
  private readonly chunks: Int32Array;
  private readonly capacity: number;
  private readonly ids: Float64Array;
  size = 0;

  constructor(capacity: number, ids: Float64Array) {
    this.capacity = capacity;
    this.ids = ids;
    this.scores = new Float64Array(capacity);
    this.chunks = new Int32Array(capacity);
  }

  /** True when (score, chunk) ranks below (s, c): a lower score, or the same with a higher id. */
  private below(score: number, chunk: number, s: number, c: number) {
    return score < s || (score === s && (this.ids[chunk] as number) > (this.ids[c] as number));
  }

  offer(score: number, chunk: number) {
    if (this.size < this.capacity) {
      let at = this.size++;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (!this.below(score, chunk, this.scores[parent] as number, this.chunks[parent] as number)) break;
        this.scores[at] = this.scores[parent] as number;
        this.chunks[at] = this.chunks[parent] as number;
        at = parent;
      }
      this.scores[at] = score;
      this.chunks[at] = chunk;
      return;
    }
    if (this.below(score, chunk, this.scores[0] as number, this.chunks[0] as number)) return;
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= this.size) break;
      const right = left + 1;
      let child = left;
      if (
        right < this.size &&
        this.below(
          this.scores[right] as number,
          this.chunks[right] as number,
          this.scores[left] as number,
          this.chunks[left] as number,
        )
      ) {
        child = right;
      }
      if (!this.below(this.scores[child] as number, this.chunks[child] as number, score, chunk)) break;
      this.scores[at] = this.scores[child] as number;
      this.chunks[at] = this.chunks[child] as number;
      at = child;
    }
    this.scores[at] = score;
    this.chunks[at] = chunk;
  }

  /** Best first. */
  drain(): Array<{ score: number; chunk: number }> {
    return Array.from({ length: this.size }, (_, index) => ({
      score: this.scores[index] as number,
      chunk: this.chunks[index] as number,
    })).sort((a, b) => b.score - a.score || (this.ids[a.chunk] as number) - (this.ids[b.chunk] as number));
  }
}

/** One partition's postings: immutable once built. */
export class PostingsIndex {
  readonly chunkCount: number;
  readonly postingCount: number;
  /** Roughly what the index holds in memory. */
  readonly bytes: number;
  private readonly parts: IndexParts;
  /** Per-chunk score accumulator and seen marks, reused by every search (scoring is synchronous). */
  private readonly scores: Float64Array;
  private readonly seen: Uint8Array;
  private readonly touched: Int32Array;

  constructor(parts: IndexParts) {
    this.parts = parts;
    this.chunkCount = parts.chunkIds.length;
    this.postingCount = parts.postingChunks.length;
    this.scores = new Float64Array(this.chunkCount);
    this.seen = new Uint8Array(this.chunkCount);
    this.touched = new Int32Array(this.chunkCount);
    this.bytes =
      this.postingCount * 6 +
      this.chunkCount * (8 + 4 + 4 + 8 + 1 + 4) +
      parts.starts.byteLength +
      parts.termIds.size * 48 +
      parts.documentIds.length * 96;
  }

  /**
   * The `depth` best chunks by BM25 (higher score first, then lower id), summing each term's
   * `weight * tf / (tf + k1 * (1 - b + b * length / averageLength))` in the order of `terms`
   * and multiplying by `k1 + 1`: the same arithmetic, in the same order, as the SQL path.
   * `documents`, when given, admits only chunks of those documents (a tag filter).
   */
  top(
    terms: Array<Pick<WeightedTerm, 'lexeme' | 'weight'>>,
    averageLength: number,
    params: Bm25Parameters,
    depth: number,
    documents?: ReadonlySet<string>,
  ): RankedChunk[] {
    const { termIds, starts, postingChunks, postingFrequencies, chunkLengths, chunkDocuments } = this.parts;
    const { k1, b } = params;
    const scores = this.scores;
    const seen = this.seen;
    const touched = this.touched;
    let touchedCount = 0;
    for (const term of terms) {
      const id = termIds.get(term.lexeme);
      if (id === undefined) continue;
      const weight = term.weight;
      const end = starts[id + 1] as number;
      for (let at = starts[id] as number; at < end; at++) {
        const chunk = postingChunks[at] as number;
        const f = postingFrequencies[at] as number;
        const norm = k1 * (1 - b + (b * (chunkLengths[chunk] as number)) / averageLength);
        if (seen[chunk] === 0) {
          seen[chunk] = 1;
          touched[touchedCount++] = chunk;
        }
        scores[chunk] = (scores[chunk] as number) + (weight * f) / (f + norm);
      }
    }
    const admitted = documents ? this.admittedDocuments(documents) : undefined;
    const best = new TopChunks(Math.max(1, depth), this.parts.chunkIds);
    for (let index = 0; index < touchedCount; index++) {
      const chunk = touched[index] as number;
      const score = (scores[chunk] as number) * (k1 + 1);
      scores[chunk] = 0;
      seen[chunk] = 0;
      if (admitted && admitted[chunkDocuments[chunk] as number] !== 1) continue;
      best.offer(score, chunk);
    }
    if (depth <= 0) return [];
    return best.drain().map(({ score, chunk }) => ({
      chunkId: this.parts.chunkIds[chunk] as number,
      documentId: this.parts.documentIds[chunkDocuments[chunk] as number] as string,
      score,
    }));
  }

  private admittedDocuments(documents: ReadonlySet<string>): Uint8Array {
    const admitted = new Uint8Array(this.parts.documentIds.length);
    for (const id of documents) {
      const index = this.parts.documentIndex.get(id);
      if (index !== undefined) admitted[index] = 1;
    }
    return admitted;
  }
}
