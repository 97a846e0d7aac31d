/**
 * A/B test statistics, modelled on GrowthBook's default Bayesian engine: each arm's metric is
 * estimated with a delta-method variance, the relative lift gets a delta-method variance too,
 * and with a flat prior the posterior of the lift is Normal(lift, se). From it come the 95 %
 * interval, the chance to win and the expected loss (risk). A sample-ratio-mismatch check and
 * a verdict rule sit on top. Pure: no I/O, no clock, no randomness. See
 * docs/experiment-statistics.md for the formulas and their sources.
 *
 * Every number returned is finite: where a value cannot be computed (too few units, a zero
 * denominator or control value, non-finite input) it is `null`, so results are always valid JSON.
 */
import { chiSquaredSurvival, normalCdf, normalPdf, Z_975 } from './distributions.ts';

/** Per-arm sums over units; a metric's value is sum_x / sum_y. For a per-unit mean metric y = 1 per unit. */
export interface RatioArm {
  units: number;
  sum_x: number;
  sum_y: number;
  sum_xx: number;
  sum_yy: number;
  sum_xy: number;
}

/**
 * Sums per-unit (x, y) pairs into an arm: (successes, runs) for a success rate, (cost, runs) for
 * cost per run, (hits, searches) for a hit-rate, (value, 1) for a per-unit mean.
 */
export function ratioArmOf(units: Iterable<readonly [x: number, y: number]>): RatioArm {
  const arm: RatioArm = { units: 0, sum_x: 0, sum_y: 0, sum_xx: 0, sum_yy: 0, sum_xy: 0 };
  for (const [x, y] of units) {
    arm.units++;
    arm.sum_x += x;
    arm.sum_y += y;
    arm.sum_xx += x * x;
    arm.sum_yy += y * y;
    arm.sum_xy += x * y;
  }
  return arm;
}

/** One metric, control against treatment. Lifts and intervals are relative (0.05 = +5 %). */
export interface MetricComparison {
  control: number | null;
  treatment: number | null;
  relative_lift: number | null;
  ci95: [number, number] | null;
  chance_to_win: number | null;
  expected_loss: number | null;
}

export type Decision =
  | 'insufficient_data'
  | 'sample_ratio_mismatch'
  | 'treatment_wins'
  | 'control_wins'
  | 'inconclusive'
  | 'guardrail_regression';

/** Below this p-value the observed split is taken as broken and no verdict is given. */
export const SRM_P_THRESHOLD = 0.001;
/** The fewest units in every arm before a verdict is given. */
export const DEFAULT_MIN_UNITS_PER_ARM = 100;
/** A primary metric's chance to win at or above which the treatment wins (below 1 − this: control). */
export const WIN_THRESHOLD = 0.95;
/** A guardrail's chance to win below which it counts as a regression. */
export const GUARDRAIL_THRESHOLD = 0.05;

/** An estimate and its sampling variance. */
interface Estimate {
  value: number;
  variance: number;
}

const finite = (x: number): boolean => Number.isFinite(x);
/** A finite number (with −0 made 0, so JSON round-trips it unchanged) or null. */
const orNull = (x: number | null): number | null => (x !== null && Number.isFinite(x) ? x + 0 : null);

/**
 * The arm's ratio sum_x / sum_y with its delta-method variance:
 * Var(x̄/ȳ) ≈ (σx²/μy² − 2·μx·σxy/μy³ + μx²·σy²/μy⁴) / n, with sample (n − 1) variances.
 * Undefined (null) below 2 units, for a zero denominator or for non-finite sums.
 */
function ratioEstimate(arm: RatioArm): Estimate | null {
  const { units: n, sum_x, sum_y, sum_xx, sum_yy, sum_xy } = arm;
  if (![n, sum_x, sum_y, sum_xx, sum_yy, sum_xy].every(finite) || !(n >= 2) || sum_y === 0) return null;
  const mx = sum_x / n;
  const my = sum_y / n;
  // Sums of squares can come out a hair below n·mean² by rounding: clamp at zero.
  const vx = Math.max(0, (sum_xx - n * mx * mx) / (n - 1));
  const vy = Math.max(0, (sum_yy - n * my * my) / (n - 1));
  const cxy = (sum_xy - n * mx * my) / (n - 1);
  const variance = Math.max(
    0,
    (vx / (my * my) - (2 * mx * cxy) / (my * my * my) + (mx * mx * vy) / (my * my * my * my)) / n,
  );
  const value = mx / my;
  return finite(value) && finite(variance) ? { value, variance } : null;
}

/** The value alone, shown even when there are too few units for a variance (one unit is a value). */
function ratioValue(arm: RatioArm): number | null {
  if (
    !finite(arm.units) ||
    !(arm.units >= 1) ||
    !finite(arm.sum_x) ||
    !finite(arm.sum_y) ||
    arm.sum_y === 0
  ) {
    return null;
  }
  return orNull(arm.sum_x / arm.sum_y);
}

/**
 * Relative lift (t − c)/|c| and its delta-method variance Var(t)/c² + t²·Var(c)/c⁴. Dividing by
 * |c| rather than c keeps the lift's sign that of t − c when a metric can be negative; for a
 * positive control it is exactly t/c − 1.
 */
function relativeLift(control: Estimate, treatment: Estimate): Estimate | null {
  const c = control.value;
  const t = treatment.value;
  if (c === 0) return null;
  const value = (t - c) / Math.abs(c);
  const variance = treatment.variance / (c * c) + (t * t * control.variance) / (c * c * c * c);
  return finite(value) && finite(variance) ? { value, variance } : null;
}

/**
 * The posterior summaries of a lift under a flat prior, Normal(mean, se):
 * the 95 % interval mean ± 1.96·se, the chance to win P(lift > 0) (or P(lift < 0) when lower is
 * better) and the expected loss E[max(0, −d)] where d is the lift signed so that positive is
 * good: σ·φ(m/σ) − m·Φ(−m/σ) with m the signed mean.
 */
function posterior(
  lift: Estimate,
  higherIsBetter: boolean,
): Pick<MetricComparison, 'relative_lift' | 'ci95' | 'chance_to_win' | 'expected_loss'> {
  const mean = lift.value;
  const se = Math.sqrt(lift.variance);
  const m = higherIsBetter ? mean : -mean;
  let chance: number;
  let loss: number;
  if (se === 0 || !finite(m / se)) {
    // A point mass: no uncertainty left (e.g. both arms all successes).
    chance = m > 0 ? 1 : m < 0 ? 0 : 0.5;
    loss = Math.max(0, -m);
  } else {
    chance = normalCdf(m / se);
    loss = Math.max(0, se * normalPdf(m / se) - m * normalCdf(-m / se));
  }
  const low = mean - Z_975 * se;
  const high = mean + Z_975 * se;
  if (![chance, loss, low, high].every(finite)) {
    return { relative_lift: orNull(mean), ci95: null, chance_to_win: null, expected_loss: null };
  }
  return { relative_lift: mean, ci95: [low, high], chance_to_win: chance, expected_loss: loss };
}

const EMPTY = { relative_lift: null, ci95: null, chance_to_win: null, expected_loss: null } as const;

function compareEstimates(
  controlValue: number | null,
  treatmentValue: number | null,
  control: Estimate | null,
  treatment: Estimate | null,
  higherIsBetter: boolean,
): MetricComparison {
  const values = { control: orNull(controlValue), treatment: orNull(treatmentValue) };
  if (!control || !treatment) return { ...values, ...EMPTY };
  const lift = relativeLift(control, treatment);
  if (!lift) return { ...values, ...EMPTY };
  const summary = posterior(lift, higherIsBetter);
  return {
    ...values,
    relative_lift: orNull(summary.relative_lift),
    ci95: summary.ci95 && [summary.ci95[0] + 0, summary.ci95[1] + 0],
    chance_to_win: orNull(summary.chance_to_win),
    expected_loss: orNull(summary.expected_loss),
  };
}

/**
 * Compares a ratio (or per-unit mean) metric between two arms: success rate (x = successes,
 * y = runs, or y = 1 per unit), cost per run (x = cost, y = runs), retrieval hit-rate.
 */
export function compareRatio(
  control: RatioArm,
  treatment: RatioArm,
  opts: { higher_is_better: boolean },
): MetricComparison {
  return compareEstimates(
    ratioValue(control),
    ratioValue(treatment),
    ratioEstimate(control),
    ratioEstimate(treatment),
    opts.higher_is_better,
  );
}

/** The sorted sample at fractional 0-based position `p`, interpolating linearly (clamped to the ends). */
function atPosition(sorted: readonly number[], p: number): number {
  const last = sorted.length - 1;
  const clamped = Math.min(last, Math.max(0, p));
  const lo = Math.floor(clamped);
  const hi = Math.min(last, lo + 1);
  const frac = clamped - lo;
  return (sorted[lo] as number) * (1 - frac) + (sorted[hi] as number) * frac;
}

function finiteSorted(values: readonly number[]): number[] {
  return values.filter(finite).sort((a, b) => a - b);
}

/** The sample q-quantile (linear interpolation between order statistics, R's type 7). */
function sampleQuantile(sorted: readonly number[], q: number): number | null {
  return sorted.length === 0 ? null : atPosition(sorted, (sorted.length - 1) * q);
}

/**
 * The sample q-quantile with a normal-approximation variance from the order statistics: the
 * rank of the true quantile in the sample is about Binomial(n, q), so the order statistics
 * n·q ± 1.96·√(n·q·(1 − q)) bracket it with 95 % probability and se ≈ (upper − lower) / (2·1.96).
 * Near the ends of a small sample the bracket is clamped, and the slope it spans is used instead
 * (se = Δvalue / Δrank · √(n·q·(1 − q))), which equals the formula above when nothing is clamped.
 */
function quantileEstimate(sorted: readonly number[], q: number): Estimate | null {
  const n = sorted.length;
  if (n < 2) return null;
  const centre = (n - 1) * q;
  const rankSd = Math.sqrt(n * q * (1 - q));
  const lowPos = Math.max(0, centre - Z_975 * rankSd);
  const highPos = Math.min(n - 1, centre + Z_975 * rankSd);
  if (!(highPos > lowPos)) return null;
  const se = ((atPosition(sorted, highPos) - atPosition(sorted, lowPos)) / (highPos - lowPos)) * rankSd;
  const value = atPosition(sorted, centre);
  return finite(value) && finite(se) ? { value, variance: se * se } : null;
}

/**
 * Compares the q-quantile (0 < q < 1; 0.95 for p95 latency) of per-unit values between two arms.
 * Non-finite values are ignored.
 */
export function compareQuantile(
  control: number[],
  treatment: number[],
  q: number,
  opts: { higher_is_better: boolean },
): MetricComparison {
  if (!(q > 0 && q < 1)) throw new RangeError('q must be strictly between 0 and 1');
  const c = finiteSorted(control);
  const t = finiteSorted(treatment);
  return compareEstimates(
    sampleQuantile(c, q),
    sampleQuantile(t, q),
    quantileEstimate(c, q),
    quantileEstimate(t, q),
    opts.higher_is_better,
  );
}

/**
 * Pearson's chi-squared test of the observed units per arm against the split the weights ask
 * for (relative weights: [50, 50] and [1, 1] alike), with k − 1 degrees of freedom over the arms
 * with a positive weight. A unit in an arm of weight zero is a mismatch outright (reported as the
 * largest finite chi-squared). `mismatch` is p < 0.001.
 */
export function sampleRatioMismatch(
  units: number[],
  weights: number[],
): { chi_squared: number; p_value: number; mismatch: boolean } {
  if (units.length !== weights.length) throw new RangeError('units and weights must have the same length');
  if (![...units, ...weights].every((x) => finite(x) && x >= 0)) {
    throw new RangeError('units and weights must be finite and non-negative');
  }
  const totalWeight = weights.reduce((sum, w) => sum + w, 0);
  if (!(totalWeight > 0)) throw new RangeError('weights must not all be zero');
  const totalUnits = units.reduce((sum, u) => sum + u, 0);
  const arms = weights.filter((w) => w > 0).length;
  if (totalUnits === 0 || arms < 2) return { chi_squared: 0, p_value: 1, mismatch: false };
  let chiSquared = 0;
  for (const [i, w] of weights.entries()) {
    const observed = units[i] as number;
    if (w === 0) {
      if (observed > 0) return { chi_squared: Number.MAX_VALUE, p_value: 0, mismatch: true };
      continue;
    }
    const expected = (totalUnits * w) / totalWeight;
    chiSquared += ((observed - expected) * (observed - expected)) / expected;
  }
  if (!finite(chiSquared)) return { chi_squared: Number.MAX_VALUE, p_value: 0, mismatch: true };
  const pValue = chiSquaredSurvival(chiSquared, arms - 1);
  return { chi_squared: chiSquared, p_value: pValue, mismatch: pValue < SRM_P_THRESHOLD };
}

const pct = (x: number, digits = 1) => `${(x * 100).toFixed(digits)} %`;
const signedPct = (x: number) => `${x >= 0 ? '+' : '−'}${pct(Math.abs(x))}`;

function describe(metric: MetricComparison): string {
  if (metric.relative_lift === null || metric.ci95 === null || metric.chance_to_win === null) {
    return 'no lift could be computed';
  }
  return (
    `lift ${signedPct(metric.relative_lift)} (95 % interval ${signedPct(metric.ci95[0])} to ` +
    `${signedPct(metric.ci95[1])}), chance to win ${pct(metric.chance_to_win)}`
  );
}

/**
 * The verdict, in order: a sample ratio mismatch blocks everything; then every arm needs
 * `min_units_per_arm` (default 100) units; then a guardrail whose chance to win is below 5 % is a
 * regression; then the primary metric's chance to win decides (≥ 95 % treatment, ≤ 5 % control).
 */
export function decide(input: {
  units: number[];
  srm: { mismatch: boolean };
  primary: MetricComparison;
  guardrails: MetricComparison[];
  min_units_per_arm?: number;
}): { decision: Decision; reason: string } {
  const minUnits = input.min_units_per_arm ?? DEFAULT_MIN_UNITS_PER_ARM;
  const unitList = input.units.map((u) => String(u)).join(' / ');
  if (input.srm.mismatch) {
    return {
      decision: 'sample_ratio_mismatch',
      reason: `The units per arm (${unitList}) do not match the configured split (chi-squared p < ${SRM_P_THRESHOLD}): assignment or logging is broken, so no verdict is given.`,
    };
  }
  const smallest = input.units.length === 0 ? 0 : Math.min(...input.units);
  if (input.units.length < 2 || !(smallest >= minUnits)) {
    return {
      decision: 'insufficient_data',
      reason: `Every arm needs at least ${minUnits} units before a verdict; the arms have ${unitList || 'none'}.`,
    };
  }
  const regressions = input.guardrails
    .map((g, index) => ({ g, index }))
    .filter(({ g }) => g.chance_to_win !== null && g.chance_to_win < GUARDRAIL_THRESHOLD);
  if (regressions.length > 0) {
    const first = regressions[0] as { g: MetricComparison; index: number };
    return {
      decision: 'guardrail_regression',
      reason: `${regressions.length} guardrail metric(s) regressed; guardrail ${first.index + 1}: ${describe(first.g)} (below ${pct(GUARDRAIL_THRESHOLD, 0)}).`,
    };
  }
  const chance = input.primary.chance_to_win;
  if (chance === null) {
    return {
      decision: 'inconclusive',
      reason: `The primary metric could not be compared (${unitList} units; a zero or missing control value), so no winner is called.`,
    };
  }
  if (chance >= WIN_THRESHOLD) {
    return {
      decision: 'treatment_wins',
      reason: `Treatment wins on the primary metric: ${describe(input.primary)}.`,
    };
  }
  if (chance <= 1 - WIN_THRESHOLD) {
    return {
      decision: 'control_wins',
      reason: `Control wins on the primary metric: ${describe(input.primary)}.`,
    };
  }
  return {
    decision: 'inconclusive',
    reason: `No winner yet on the primary metric: ${describe(input.primary)}; a verdict needs a chance to win of at least ${pct(WIN_THRESHOLD, 0)} or at most ${pct(1 - WIN_THRESHOLD, 0)}.`,
  };
}
