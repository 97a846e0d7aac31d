/**
 * Deterministic sticky bucketing, as GrowthBook, Unleash and Statsig do it: a unit (a user,
 * a session, a workspace: whatever `targeting_key` names) is hashed together with a salt into
 * one of 10,000 buckets, and a split of weights is laid over the buckets in order.
 *
 *   sha256("<salt>:<unit>") -> first 4 bytes as an unsigned integer -> mod 10,000 -> bucket
 *
 *   weights [10, 90]:   buckets 0 ...... 999 | 1000 .............. 9999
 *                       variant      0       |        variant 1
 *
 * The same salt and unit always land in the same bucket (sticky across processes and
 * restarts, with no stored assignment); a different salt reshuffles units independently, so
 * two flags (or two experiments) do not split the same people the same way. Growing one
 * weight from 10 to 20 keeps everyone who was in it: only buckets move, never units.
 * Pure: no I/O, no clock, no randomness.
 */
import { createHash } from 'node:crypto';

/** How many buckets the units are spread over (0.01 % each). */
export const BUCKETS = 10_000;

/** The unit's bucket under `salt`, in 0..BUCKETS-1. */
export function bucketOf(salt: string, unitId: string): number {
  const digest = createHash('sha256').update(`${salt}:${unitId}`).digest();
  // 2^32 mod 10,000 = 7,296: the first buckets are favoured by about 2 in a million.
  return digest.readUInt32BE(0) % BUCKETS;
}

/**
 * The index of the weight whose share of the buckets holds `bucket`. Weights are relative
 * (non-negative, not all zero): [1, 1] and [50, 50] split alike. Each weight gets
 * `round(cumulative share * BUCKETS)` buckets, so percentages with two decimals are exact.
 */
export function pickIndex(bucket: number, weights: readonly number[]): number {
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  if (!(total > 0)) throw new RangeError('weights must be non-negative and not all zero');
  let cumulative = 0;
  let last = 0;
  for (const [index, weight] of weights.entries()) {
    if (weight < 0) throw new RangeError('weights must be non-negative and not all zero');
    cumulative += weight;
    if (weight > 0) last = index;
    if (weight > 0 && bucket < Math.round((cumulative / total) * BUCKETS)) return index;
  }
  return last;
}

/** Which of `weights` the unit falls in under `salt` (sticky: the same inputs, the same answer). */
export function assign(salt: string, unitId: string, weights: readonly number[]): number {
  return pickIndex(bucketOf(salt, unitId), weights);
}
