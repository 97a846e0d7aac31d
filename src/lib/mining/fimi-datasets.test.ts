import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseFimi } from './fimi.ts';
import { mineTransactionTable } from './fp-growth.ts';

/** A committed FIMI fixture (tests/fixtures/fim, gzipped; origin and licence in its SOURCES.md). */
const readDataset = (file: string): Buffer =>
  gunzipSync(readFileSync(new URL(`../../../tests/fixtures/fim/${file}.gz`, import.meta.url)));

/** Counts that three independent implementations agree on (tests/fixtures/fim/SOURCES.md). */
const cases = [
  { file: 'retail.dat', minSupport: 89, itemsets: 7_589 },
  { file: 'retail.dat', minSupport: 45, itemsets: 19_242 },
  { file: 'T10I4D100K.dat', minSupport: 100, itemsets: 27_532 },
  { file: 'T10I4D100K.dat', minSupport: 50, itemsets: 53_385 },
  { file: 'chess.dat', minSupport: 1_918, itemsets: 254_944 },
  { file: 'mushroom.dat', minSupport: 813, itemsets: 574_431 },
  { file: 'kosarak_prefix36k.dat', minSupport: 184, itemsets: 1_665 },
];

describe('FIMI benchmark datasets', () => {
  it.each(cases)('$file at $minSupport gives $itemsets itemsets', ({ file, minSupport, itemsets }) => {
    const table = parseFimi(readDataset(file));
    let streamed = 0;
    let maxSupport = 0;
    const summary = mineTransactionTable(table, { minSupport }, (_items, _length, support) => {
      streamed++;
      if (support < minSupport) throw new Error(`support ${support} below ${minSupport}`);
      if (support > maxSupport) maxSupport = support;
    });
    expect(summary.itemsetCount).toBe(itemsets);
    expect(streamed).toBe(itemsets);
    expect(maxSupport).toBeLessThanOrEqual(summary.transactionCount);
  });

  it('parses the FIMI statistics of SOURCES.md', () => {
    const stats = (file: string) => {
      const { items, offsets } = parseFimi(readDataset(file));
      return { transactions: offsets.length - 1, distinct: new Set(items).size };
    };
    expect(stats('retail.dat')).toEqual({ transactions: 88_162, distinct: 16_470 });
    expect(stats('T10I4D100K.dat')).toEqual({ transactions: 100_000, distinct: 870 });
    expect(stats('kosarak_prefix36k.dat')).toEqual({ transactions: 36_683, distinct: 17_034 });
  });
});
