import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUCKETS, bucketOf, bucketValue, GROWTH, type Histogram, mergeInto, quantile } from './histogram.ts';

/** How far a bucket's value is from any duration in it, relative. */
const BOUND = Math.sqrt(GROWTH) - 1;
/** Durations below the last (open-ended) bucket. */
const MAX_MS = 2e8;

/** `percentile_cont` over sorted values. */
function exact(sorted: number[], q: number): number {
  const rank = q * (sorted.length - 1);
  const low = Math.floor(rank);
  const a = sorted[low] as number;
  const b = sorted[Math.min(low + 1, sorted.length - 1)] as number;
  return a + (b - a) * (rank - low);
}

const histogramOf = (values: number[]): Histogram =>
  values.reduce((h, v) => h.set(bucketOf(v), (h.get(bucketOf(v)) ?? 0) + 1), new Map() as Histogram);

describe('latency histogram', () => {
  it('reads a duration back within about 2.5 %', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MS }), (ms) => {
        expect(Math.abs(bucketValue(bucketOf(ms)) - ms)).toBeLessThanOrEqual(ms * BOUND + 1e-9);
      }),
    );
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(1e12)).toBe(BUCKETS - 1);
  });

  it('gives percentiles within the bound of percentile_cont, merged or not', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 0, max: MAX_MS }), { maxLength: 50 }), {
          minLength: 1,
          maxLength: 5,
        }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (days, q) => {
          const all = days.flat().sort((a, b) => a - b);
          const merged = days.map(histogramOf).reduce(mergeInto, new Map());
          const approx = quantile(merged, q);
          if (all.length === 0) {
            expect(approx).toBeNull();
          } else {
            const want = exact(all, q);
            expect(Math.abs((approx as number) - want)).toBeLessThanOrEqual(want * BOUND + 1e-6);
          }
        },
      ),
    );
  });
});
