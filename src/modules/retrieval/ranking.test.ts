import { describe, expect, it } from 'vitest';
import {
  bestScoreByDocument,
  bm25,
  collapseByDocument,
  essentialTerms,
  firstPassTerms,
  fuseRanks,
  idf,
  type RankedChunk,
  termScore,
  weighTerms,
} from './ranking.ts';

const chunk = (chunkId: number, documentId: string, score = 0): RankedChunk => ({
  chunkId,
  documentId,
  score,
});

describe('BM25 arithmetic', () => {
  it('computes idf and a term score as Lucene does (k1 0.9, b 0.4)', () => {
    expect(idf(3, 2)).toBeCloseTo(Math.log(1.6), 12);
    // Never negative, even for a term in every chunk.
    expect(idf(10, 10)).toBeGreaterThan(0);
    // tf 2 in a chunk of average length: 2 * 1.9 / (2 + 0.9).
    expect(termScore(1, 2, 10, 10)).toBeCloseTo(3.8 / 2.9, 12);
    expect(termScore(1, 0, 10, 10)).toBe(0);
  });

  it('sums weighted terms and drops terms no chunk holds', () => {
    const terms = weighTerms(
      [
        { lexeme: 'a', queryFrequency: 2, documentFrequency: 1 },
        { lexeme: 'b', queryFrequency: 1, documentFrequency: 0 },
      ],
      { chunks: 4, terms: 40 },
    );
    expect(terms.map((term) => term.lexeme)).toEqual(['a']);
    expect(terms[0]?.weight).toBeCloseTo(2 * idf(4, 1), 12);
    expect(terms[0]?.upperBound).toBeCloseTo((terms[0]?.weight as number) * 1.9, 12);
    expect(bm25(terms, new Map([['a', 1]]), 10, { chunks: 4, terms: 40 })).toBeCloseTo(
      termScore(terms[0]?.weight as number, 1, 10, 10),
      12,
    );
  });
});

describe('MaxScore', () => {
  const terms = weighTerms(
    [
      { lexeme: 'rare', queryFrequency: 1, documentFrequency: 2 },
      { lexeme: 'mid', queryFrequency: 1, documentFrequency: 30 },
      { lexeme: 'common', queryFrequency: 1, documentFrequency: 90 },
    ],
    { chunks: 100, terms: 1000 },
  );

  it('keeps every term while the threshold is 0, and drops the weakest as it rises', () => {
    expect(
      essentialTerms(terms, 0)
        .map((t) => t.lexeme)
        .sort(),
    ).toEqual(['common', 'mid', 'rare']);
    const common = terms.find((t) => t.lexeme === 'common')?.upperBound as number;
    const mid = terms.find((t) => t.lexeme === 'mid')?.upperBound as number;
    expect(
      essentialTerms(terms, common)
        .map((t) => t.lexeme)
        .sort(),
    ).toEqual(['mid', 'rare']);
    expect(essentialTerms(terms, common + mid).map((t) => t.lexeme)).toEqual(['rare']);
    // Just below a bound the term stays: a chunk could reach the threshold with it alone.
    expect(essentialTerms(terms, common * 0.999).map((t) => t.lexeme)).toContain('common');
  });

  it('fetches the rarest terms first, within the posting budget but at least one', () => {
    expect(firstPassTerms(terms, 40).map((t) => t.lexeme)).toEqual(['rare', 'mid']);
    expect(firstPassTerms(terms, 1).map((t) => t.lexeme)).toEqual(['rare']);
  });
});

describe('reciprocal rank fusion', () => {
  it('scores 1 for first in every arm and weights the arms', () => {
    const fused = fuseRanks([
      { ranked: [chunk(1, 'a'), chunk(2, 'b')], weight: 1 },
      { ranked: [chunk(1, 'a'), chunk(3, 'c')], weight: 1 },
    ]);
    expect(fused.map((c) => c.chunkId)).toEqual([1, 2, 3]);
    expect(fused[0]?.score).toBeCloseTo(1, 12);
    expect(fused[1]?.score).toBeCloseTo(1 / 62 / (2 / 61), 12);
    const keywordHeavy = fuseRanks([
      { ranked: [chunk(2, 'b')], weight: 3 },
      { ranked: [chunk(3, 'c')], weight: 1 },
    ]);
    expect(keywordHeavy.map((c) => c.chunkId)).toEqual([2, 3]);
  });

  it('leaves out arms weighted 0', () => {
    expect(fuseRanks([{ ranked: [chunk(1, 'a')], weight: 0 }])).toEqual([]);
  });
});

describe('collapse by document', () => {
  it('keeps each document once at its best chunk, further chunks as highlights', () => {
    const ranked = [chunk(1, 'a', 9), chunk(2, 'b', 8), chunk(3, 'a', 7), chunk(4, 'c', 6), chunk(5, 'a', 5)];
    const documents = collapseByDocument(ranked, 2, 1);
    expect(documents.map((d) => [d.documentId, d.best.chunkId, d.highlights.map((h) => h.chunkId)])).toEqual([
      ['a', 1, [3]],
      ['b', 2, []],
    ]);
  });
});

describe('score parts', () => {
  it('gives each asked document its best chunk score in an arm, whatever the order', () => {
    const ranked = [chunk(1, 'a', 3), chunk(2, 'b', 8), chunk(3, 'a', 7), chunk(4, 'c', 6)];
    const best = bestScoreByDocument(ranked, new Set(['a', 'b', 'd']));
    expect([...best.entries()].sort()).toEqual([
      ['a', 7],
      ['b', 8],
    ]);
    expect(best.has('c')).toBe(false);
    expect(best.has('d')).toBe(false);
  });
});
