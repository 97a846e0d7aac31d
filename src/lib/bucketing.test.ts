import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assign, BUCKETS, bucketOf, pickIndex } from './bucketing.ts';

describe('bucketOf', () => {
  it('is sticky: the same salt and unit always give the same bucket, in range', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (salt, unit) => {
        const bucket = bucketOf(salt, unit);
        expect(bucket).toBe(bucketOf(salt, unit));
        expect(Number.isInteger(bucket) && bucket >= 0 && bucket < BUCKETS).toBe(true);
      }),
    );
  });

  it('is pinned: these values never change (every stored split depends on them)', () => {
    expect([bucketOf('', ''), bucketOf('flag', 'user-1'), bucketOf('flag', 'user-2')]).toEqual([
      1014, 7346, 4884,
    ]);
  });
});

describe('pickIndex', () => {
  it('lays weights over the buckets in order, relative to their total', () => {
    expect(pickIndex(0, [10, 90])).toBe(0);
    expect(pickIndex(999, [10, 90])).toBe(0);
    expect(pickIndex(1000, [10, 90])).toBe(1);
    expect(pickIndex(9999, [10, 90])).toBe(1);
    expect(pickIndex(4999, [1, 1])).toBe(0);
    expect(pickIndex(5000, [1, 1])).toBe(1);
    expect(pickIndex(0, [0, 5, 0])).toBe(1);
    expect(pickIndex(9999, [3, 0])).toBe(0);
    expect(() => pickIndex(0, [0, 0])).toThrow(RangeError);
    expect(() => pickIndex(0, [-1, 2])).toThrow(RangeError);
  });

  it('never picks a zero weight, and growing a weight keeps the units it held', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: BUCKETS - 1 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 0, max: 100 }),
        (bucket, a, grow) => {
          fc.pre(a > 0 && a + grow <= 100);
          const before = pickIndex(bucket, [a, 100 - a]);
          const after = pickIndex(bucket, [a + grow, 100 - a - grow]);
          if (before === 0) expect(after).toBe(0);
          if (a + grow === 100) expect(after).toBe(0);
        },
      ),
    );
  });
});

describe('assign', () => {
  it('splits many units close to the weights (within 1.5 points on 20,000 units)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 5 }),
        fc.string({ maxLength: 12 }),
        (weights, salt) => {
          const units = 20_000;
          const counts = weights.map(() => 0);
          for (let i = 0; i < units; i += 1) {
            const index = assign(salt, `user-${i}`, weights);
            counts[index] = (counts[index] as number) + 1;
          }
          const total = weights.reduce((sum, w) => sum + w, 0);
          for (const [index, weight] of weights.entries()) {
            expect(Math.abs((counts[index] as number) / units - weight / total)).toBeLessThan(0.015);
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it('is sticky and salted: different salts split the same units independently', () => {
    const units = Array.from({ length: 10_000 }, (_, i) => `u${i}`);
    const a = units.map((unit) => assign('flag-a', unit, [50, 50]));
    expect(units.map((unit) => assign('flag-a', unit, [50, 50]))).toEqual(a);
    const b = units.map((unit) => assign('flag-b', unit, [50, 50]));
    const same = a.filter((value, i) => value === b[i]).length / units.length;
    expect(Math.abs(same - 0.5)).toBeLessThan(0.03);
  });
});
