/**
 * Latency histograms with fixed log-spaced buckets, so histograms of many days merge by adding
 * counts. Bucket 0 holds durations under 1 ms; bucket i (1..LAST) holds [GROWTH^(i-1),
 * GROWTH^i) ms; the last bucket also holds everything longer (from about 3.4 days). A bucket
 * stands for its geometric middle, GROWTH^(i-0.5): a duration read back from its bucket is off
 * by at most sqrt(GROWTH) - 1, about 2.5 %.
 */
export const GROWTH = 1.05;
export const BUCKETS = 400;
const LAST = BUCKETS - 1;

/** A sparse histogram: bucket index -> count. */
export type Histogram = Map<number, number>;

/** The bucket of a duration in ms (the SQL in analytics.repository.ts computes the same). */
export function bucketOf(ms: number): number {
  if (!(ms >= 1)) return 0;
  return Math.min(LAST, 1 + Math.floor(Math.log(ms) / Math.log(GROWTH)));
}

/** The duration a bucket stands for. */
export function bucketValue(index: number): number {
  return index <= 0 ? 0 : GROWTH ** (index - 0.5);
}

/** Adds `from` into `into`. */
export function mergeInto(into: Histogram, from: Histogram): Histogram {
  for (const [bucket, count] of from) into.set(bucket, (into.get(bucket) ?? 0) + count);
  return into;
}

/**
 * The q-quantile (0..1) like `percentile_cont`: the value at rank q·(n-1) among the sorted
 * durations, interpolated between the two neighbouring ranks, each read as its bucket's value.
 * Null for an empty histogram.
 */
export function quantile(histogram: Histogram, q: number): number | null {
  const entries = [...histogram.entries()].filter(([, count]) => count > 0).sort((a, b) => a[0] - b[0]);
  const total = entries.reduce((sum, [, count]) => sum + count, 0);
  if (total === 0) return null;
  const rank = q * (total - 1);
  const below = Math.floor(rank);
  const valueAt = (r: number): number => {
    let seen = 0;
    for (const [bucket, count] of entries) {
      seen += count;
      if (r < seen) return bucketValue(bucket);
    }
    return bucketValue((entries.at(-1) as [number, number])[0]);
  };
  const low = valueAt(below);
  const fraction = rank - below;
  return fraction === 0 ? low : low + (valueAt(below + 1) - low) * fraction;
}
