import { describe, expect, it } from 'vitest';
import {
  type MiningOptions,
  mineIntegerItemsets,
  mineItemsets,
  mineTransactionTable,
  resolveMinSupport,
} from './fp-growth.ts';

/** Deterministic PRNG so that a failing case can be replayed from its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function randomTransactions(seed: number): string[][] {
  const next = random(seed);
  const itemCount = 1 + Math.floor(next() * 8);
  const rows = Math.floor(next() * 14);
  const density = 0.2 + next() * 0.7;
  const out: string[][] = [];
  for (let t = 0; t < rows; t++) {
    const row: string[] = [];
    for (let i = 0; i < itemCount; i++) if (next() < density) row.push(`item:${i}`);
    if (next() < 0.15 && row.length > 0) row.push(row[0] as string);
    out.push(row);
  }
  return out;
}

const key = (items: readonly string[]): string => [...items].sort().join(' ');

/** Every non-empty itemset over the items present, with its support, by plain enumeration. */
function bruteForce(transactions: string[][], minCount: number): Map<string, number> {
  const items = [...new Set(transactions.flat())].sort();
  const sets = transactions.map((t) => new Set(t));
  const result = new Map<string, number>();
  for (let mask = 1; mask < 1 << items.length; mask++) {
    const chosen = items.filter((_, i) => mask & (1 << i));
    const support = sets.filter((s) => chosen.every((item) => s.has(item))).length;
    if (support >= minCount) result.set(key(chosen), support);
  }
  return result;
}

const isSuperset = (a: string, b: string): boolean => {
  const as = new Set(a.split(' '));
  const bs = b.split(' ');
  return as.size > bs.length && bs.every((item) => as.has(item));
};

function closedOf(all: Map<string, number>): Map<string, number> {
  return new Map(
    [...all].filter(([set, s]) => ![...all].some(([other, t]) => t === s && isSuperset(other, set))),
  );
}

function maximalOf(all: Map<string, number>): Map<string, number> {
  return new Map([...all].filter(([set]) => ![...all].some(([other]) => isSuperset(other, set))));
}

function mine(transactions: string[][], options: MiningOptions): Map<string, number> {
  const result = new Map<string, number>();
  mineItemsets(transactions, options, (items, support) => {
    const k = key(items);
    expect(result.has(k), `duplicate itemset ${k}`).toBe(false);
    result.set(k, support);
  });
  return result;
}

const byLength = (m: Map<string, number>, max: number) =>
  new Map([...m].filter(([k]) => k.split(' ').length <= max));

describe('mineItemsets against brute force', () => {
  const seeds = Array.from({ length: 300 }, (_, i) => i + 1);

  it('finds exactly the frequent itemsets and their supports', () => {
    for (const seed of seeds) {
      const tx = randomTransactions(seed);
      const minCount = 1 + (seed % 4);
      expect(mine(tx, { minSupport: minCount }), `seed ${seed}`).toEqual(bruteForce(tx, minCount));
    }
  });

  it('respects maxLength', () => {
    for (const seed of seeds) {
      const tx = randomTransactions(seed);
      const maxLength = 1 + (seed % 3);
      const expected = byLength(bruteForce(tx, 2), maxLength);
      expect(mine(tx, { minSupport: 2, maxLength }), `seed ${seed}`).toEqual(expected);
    }
  });

  it('finds exactly the closed itemsets', () => {
    for (const seed of seeds) {
      const tx = randomTransactions(seed);
      const minCount = 1 + (seed % 3);
      const expected = closedOf(bruteForce(tx, minCount));
      expect(mine(tx, { minSupport: minCount, mode: 'closed' }), `seed ${seed}`).toEqual(expected);
    }
  });

  it('finds exactly the maximal itemsets', () => {
    for (const seed of seeds) {
      const tx = randomTransactions(seed);
      const minCount = 1 + (seed % 3);
      const expected = maximalOf(bruteForce(tx, minCount));
      expect(mine(tx, { minSupport: minCount, mode: 'maximal' }), `seed ${seed}`).toEqual(expected);
    }
  });

  it('keeps closed and maximal itemsets up to maxLength', () => {
    for (const seed of seeds.slice(0, 100)) {
      const tx = randomTransactions(seed);
      const all = bruteForce(tx, 1);
      expect(mine(tx, { minSupport: 1, mode: 'closed', maxLength: 2 })).toEqual(byLength(closedOf(all), 2));
      expect(mine(tx, { minSupport: 1, mode: 'maximal', maxLength: 3 })).toEqual(byLength(maximalOf(all), 3));
    }
  });

  it('returns the top-k itemsets by support, highest first', () => {
    for (const seed of seeds) {
      const tx = randomTransactions(seed);
      const topK = 1 + (seed % 7);
      const all = bruteForce(tx, 1);
      const got: [string, number][] = [];
      mineItemsets(tx, { minSupport: 1, topK }, (items, support) => got.push([key(items), support]));
      const expectedSupports = [...all.values()].sort((a, b) => b - a).slice(0, topK);
      expect(
        got.map(([, s]) => s),
        `seed ${seed}`,
      ).toEqual(expectedSupports);
      for (const [set, s] of got) expect(all.get(set)).toBe(s);
    }
  });

  it('returns the top-k closed itemsets', () => {
    for (const seed of seeds.slice(0, 100)) {
      const tx = randomTransactions(seed);
      const closed = closedOf(bruteForce(tx, 1));
      const got: [string, number][] = [];
      mineItemsets(tx, { minSupport: 1, topK: 3, mode: 'closed' }, (items, support) =>
        got.push([key(items), support]),
      );
      expect(got.map(([, s]) => s)).toEqual([...closed.values()].sort((a, b) => b - a).slice(0, 3));
      for (const [set, s] of got) expect(closed.get(set)).toBe(s);
    }
  });
});

describe('edge cases', () => {
  it('handles empty input', () => {
    const summary = mineItemsets([], { minSupport: 1 }, () => {
      throw new Error('no itemsets expected');
    });
    expect(summary).toEqual({
      transactionCount: 0,
      minSupportCount: 1,
      frequentItemCount: 0,
      itemsetCount: 0,
    });
    expect(mine([], { minSupport: 0.5, mode: 'closed' }).size).toBe(0);
  });

  it('counts empty transactions towards fractional support', () => {
    const tx = [['a', 'b'], ['a'], [], []];
    expect(mine(tx, { minSupport: 0.5 })).toEqual(new Map([['a', 2]]));
    expect(mine([[], []], { minSupport: 1 }).size).toBe(0);
  });

  it('counts an item listed twice in a transaction once', () => {
    expect(mine([['a', 'a', 'b'], ['a']], { minSupport: 1 })).toEqual(
      new Map([
        ['a', 2],
        ['b', 1],
        ['a b', 1],
      ]),
    );
  });

  it('reports an item present in every transaction, alone and combined', () => {
    const tx = [
      ['all', 'x'],
      ['all', 'x', 'y'],
      ['all', 'y'],
    ];
    expect(mine(tx, { minSupport: 1 })).toEqual(bruteForce(tx, 1));
    expect(mine(tx, { minSupport: 1 }).get('all')).toBe(3);
    expect(mine(tx, { minSupport: 1, mode: 'closed' }).get('all')).toBe(3);
    expect(mine([['all'], ['all']], { minSupport: 2, mode: 'maximal' })).toEqual(new Map([['all', 2]]));
  });

  it('reports nothing when the minimum support is above every count', () => {
    expect(mine([['a'], ['a', 'b']], { minSupport: 3 }).size).toBe(0);
  });

  it('rounds a fractional support up, without floating-point surprises', () => {
    expect(resolveMinSupport(0.001, 88162)).toBe(89);
    expect(resolveMinSupport(0.0005, 88162)).toBe(45);
    expect(resolveMinSupport(0.07, 100)).toBe(7);
    expect(resolveMinSupport(0.5, 3)).toBe(2);
    expect(resolveMinSupport(0.1, 0)).toBe(1);
    expect(resolveMinSupport(5, 3)).toBe(5);
  });

  it('rejects bad options', () => {
    for (const minSupport of [0, -1, 1.5, Number.NaN]) {
      expect(() => mineItemsets([['a']], { minSupport }, () => {})).toThrow(RangeError);
    }
    expect(() => mineItemsets([['a']], { minSupport: 1, maxLength: 0 }, () => {})).toThrow(RangeError);
    expect(() => mineItemsets([['a']], { minSupport: 1, topK: 0 }, () => {})).toThrow(RangeError);
    expect(() => mineItemsets([['a']], { minSupport: 1, topK: 2, mode: 'maximal' }, () => {})).toThrow(
      RangeError,
    );
    expect(() => mineIntegerItemsets([[-1]], { minSupport: 1 }, () => {})).toThrow(RangeError);
    // A table is checked while counting supports, also when a huge id sends it to dense renumbering first.
    for (const items of [Int32Array.of(3, -1), Int32Array.of(2 ** 31 - 1, -1)]) {
      const table = { items, offsets: Int32Array.of(0, 2) };
      expect(() => mineTransactionTable(table, { minSupport: 1 }, () => {})).toThrow(RangeError);
    }
  });

  it('maps large integer ids without allocating arrays indexed by id', () => {
    const big = 2 ** 31 - 1;
    const got: [number[], number][] = [];
    mineIntegerItemsets([[big, 7], [big]], { minSupport: 1 }, (items, length, support) =>
      got.push([Array.from(items.subarray(0, length)).sort((a, b) => a - b), support]),
    );
    expect(got).toContainEqual([[big], 2]);
    expect(got).toContainEqual([[7, big], 1]);
    expect(got).toHaveLength(3);
  });

  it('reports progress up to completion', () => {
    const calls: [number, number][] = [];
    mineItemsets(
      [
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'd'],
      ],
      { minSupport: 1, onProgress: (done, total) => calls.push([done, total]) },
      () => {},
    );
    expect(calls.at(-1)).toEqual([4, 4]);
  });
});
