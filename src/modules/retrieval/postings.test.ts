import { describe, expect, it } from 'vitest';
import { forEachLexeme, PostingsBuilder } from './postings.ts';
import { BM25_DEFAULTS, bm25, type CorpusStats, weighTerms } from './ranking.ts';

const lexemes = (text: string) => {
  const found: Array<[string, number]> = [];
  forEachLexeme(text, (lexeme, frequency) => found.push([lexeme, frequency]));
  return found;
};

/** A tsvector's text output for lexeme -> positions count (PostgreSQL's quoting). */
const tsvectorText = (frequencies: Map<string, number>) =>
  [...frequencies]
    .map(([lexeme, tf]) => {
      const quoted = lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''");
      return `'${quoted}':${Array.from({ length: tf }, (_, i) => i + 1).join(',')}`;
    })
    .join(' ');

describe('reading tsvector text', () => {
  it('reads lexemes and counts their positions', () => {
    expect(lexemes("'appl':1,5,9 'pear':3")).toEqual([
      ['appl', 3],
      ['pear', 1],
    ]);
  });

  it('undoes the doubled quotes and backslashes, and reads weights and lexemes without positions', () => {
    expect(lexemes("'it''s':2A,4 'back\\\\slash':1 'odd'' '' one':7B 'bare' ''''")).toEqual([
      ["it's", 2],
      ['back\\slash', 1],
      ["odd' ' one", 1],
      ['bare', 1],
      ["'", 1],
    ]);
    expect(lexemes('')).toEqual([]);
  });

  it('refuses text that ends inside a lexeme', () => {
    expect(() => lexemes("'open")).toThrow(/unterminated/);
  });
});

/** A deterministic corpus: Zipf-like words, chunk lengths 3 to 40, 4 chunks per document. */
function corpus(chunks: number) {
  let state = 11;
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  const words = Array.from({ length: 120 }, (_, i) => `w${i}`);
  return Array.from({ length: chunks }, (_, index) => {
    const frequencies = new Map<string, number>();
    const length = 3 + Math.floor(random() * 38);
    for (let i = 0; i < length; i++) {
      const word =
        words[Math.min(words.length - 1, Math.floor(Math.exp(random() * Math.log(words.length))) - 1)];
      frequencies.set(word as string, (frequencies.get(word as string) ?? 0) + 1);
    }
    return { id: 10 + index * 3, documentId: `doc-${Math.floor(index / 4)}`, length, frequencies };
  });
}

describe('in-memory postings', async () => {
  const chunks = corpus(500);
  const builder = new PostingsBuilder();
  for (const chunk of chunks) {
    builder.add(chunk.id, chunk.documentId, chunk.length, tsvectorText(chunk.frequencies));
  }
  const index = await builder.finish();
  const stats: CorpusStats = { chunks: chunks.length, terms: chunks.reduce((sum, c) => sum + c.length, 0) };
  const avg = stats.terms / stats.chunks;
  const weigh = (query: string[]) =>
    weighTerms(
      [...new Set(query)].map((lexeme) => ({
        lexeme,
        queryFrequency: query.filter((word) => word === lexeme).length,
        documentFrequency: chunks.filter((chunk) => chunk.frequencies.has(lexeme)).length,
      })),
      stats,
    );
  const bruteForce = (query: string[], accept: (documentId: string) => boolean = () => true) => {
    const terms = weigh(query);
    return chunks
      .filter((chunk) => accept(chunk.documentId))
      .map((chunk) => ({
        chunkId: chunk.id,
        documentId: chunk.documentId,
        score: bm25(terms, chunk.frequencies, chunk.length, stats),
      }))
      .filter((chunk) => chunk.score > 0)
      .sort((a, b) => b.score - a.score || a.chunkId - b.chunkId);
  };

  it('holds every posting once', () => {
    expect(index.chunkCount).toBe(500);
    expect(index.postingCount).toBe(chunks.reduce((sum, chunk) => sum + chunk.frequencies.size, 0));
    expect(index.bytes).toBeGreaterThan(index.postingCount * 6);
  });

  it('ranks the top chunks exactly as brute-force BM25 does, ties by chunk id', () => {
    for (const query of [
      ['w0'],
      ['w0', 'w1', 'w50'],
      ['w3', 'w3', 'w90', 'w119'],
      ['w2', 'w4', 'w8', 'w16', 'w32', 'w64'],
      ['w77', 'absent'],
    ]) {
      const expected = bruteForce(query);
      for (const depth of [1, 10, 30, 1000]) {
        const found = index.top(weigh(query), avg, BM25_DEFAULTS, depth);
        expect(found.map((chunk) => chunk.chunkId)).toEqual(
          expected.slice(0, depth).map((chunk) => chunk.chunkId),
        );
        for (const [at, chunk] of found.entries()) {
          expect(chunk.score).toBeCloseTo(expected[at]?.score as number, 12);
          expect(chunk.documentId).toBe(expected[at]?.documentId);
        }
      }
    }
  });

  it('gives the same answer to the same search twice (its scratch space is reset)', () => {
    const terms = weigh(['w1', 'w5', 'w9']);
    expect(index.top(terms, avg, BM25_DEFAULTS, 20)).toEqual(index.top(terms, avg, BM25_DEFAULTS, 20));
  });

  it('admits only the chunks of the documents given (a tag filter)', () => {
    const admitted = new Set(['doc-3', 'doc-40', 'doc-77', 'not-in-the-index']);
    const found = index.top(weigh(['w0', 'w7']), avg, BM25_DEFAULTS, 10, admitted);
    const expected = bruteForce(['w0', 'w7'], (documentId) => admitted.has(documentId)).slice(0, 10);
    expect(found.map((chunk) => chunk.chunkId)).toEqual(expected.map((chunk) => chunk.chunkId));
    expect(found.every((chunk) => admitted.has(chunk.documentId))).toBe(true);
    expect(index.top(weigh(['w0']), avg, BM25_DEFAULTS, 10, new Set())).toEqual([]);
  });

  it('finds nothing for terms it does not hold, and refuses chunks out of id order', () => {
    expect(index.top([{ lexeme: 'absent', weight: 1 }], avg, BM25_DEFAULTS, 10)).toEqual([]);
    const unordered = new PostingsBuilder();
    unordered.add(5, 'd', 1, "'a':1");
    expect(() => unordered.add(5, 'd', 1, "'b':1")).toThrow(/ascending/);
  });
});
