/**
 * The few distribution functions the experiment statistics need, written out so the module has
 * no dependency: the log-gamma function (Lanczos), the regularized incomplete gamma functions
 * P(a, x) and Q(a, x) (series below a + 1, Lentz's continued fraction above, as in Numerical
 * Recipes), and from them the chi-squared survival function and the standard normal CDF
 * (Φ(z) = ½·Q(½, z²/2) for z < 0). Accurate to about 1e-14 relative in the ranges used here;
 * `distributions.test.ts` checks them against table values.
 */

/** Lanczos approximation, g = 7, nine coefficients: about 15 significant digits for x > 0. */
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0. */
export function logGamma(x: number): number {
  if (!(x > 0)) throw new RangeError('logGamma needs x > 0');
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x); // reflection
  const z = x - 1;
  let sum = LANCZOS[0] as number;
  for (let i = 1; i < LANCZOS.length; i++) sum += (LANCZOS[i] as number) / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

const EPSILON = 1e-16;
const TINY = 1e-300;
const MAX_ITERATIONS = 10_000;

/** P(a, x) by its series; converges fast for x < a + 1. */
function gammaPSeries(a: number, x: number): number {
  let term = 1 / a;
  let sum = term;
  for (let n = 1; n < MAX_ITERATIONS; n++) {
    term *= x / (a + n);
    sum += term;
    if (Math.abs(term) < Math.abs(sum) * EPSILON) break;
  }
  return sum * Math.exp(-x + a * Math.log(x) - logGamma(a));
}

/** Q(a, x) by its continued fraction (modified Lentz); converges fast for x ≥ a + 1. */
function gammaQFraction(a: number, x: number): number {
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < MAX_ITERATIONS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) break;
  }
  return Math.exp(-x + a * Math.log(x) - logGamma(a)) * h;
}

/** The regularized lower incomplete gamma function P(a, x) = γ(a, x) / Γ(a), a > 0, x ≥ 0. */
export function gammaP(a: number, x: number): number {
  if (!(a > 0) || !(x >= 0)) throw new RangeError('gammaP needs a > 0 and x >= 0');
  if (x === 0) return 0;
  if (x === Number.POSITIVE_INFINITY) return 1;
  return x < a + 1 ? gammaPSeries(a, x) : 1 - gammaQFraction(a, x);
}

/** The regularized upper incomplete gamma function Q(a, x) = 1 − P(a, x), a > 0, x ≥ 0. */
export function gammaQ(a: number, x: number): number {
  if (!(a > 0) || !(x >= 0)) throw new RangeError('gammaQ needs a > 0 and x >= 0');
  if (x === 0) return 1;
  if (x === Number.POSITIVE_INFINITY) return 0;
  return x < a + 1 ? 1 - gammaPSeries(a, x) : gammaQFraction(a, x);
}

/** P(X ≥ x) for X chi-squared with `df` degrees of freedom (the p-value of a chi-squared test). */
export function chiSquaredSurvival(x: number, df: number): number {
  if (!(df > 0)) throw new RangeError('chiSquaredSurvival needs df > 0');
  if (!(x > 0)) return 1;
  return gammaQ(df / 2, x / 2);
}

/** The standard normal density φ(z). */
export function normalPdf(z: number): number {
  return Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
}

/** The standard normal CDF Φ(z), accurate in both tails (no 1 − tiny cancellation below 0). */
export function normalCdf(z: number): number {
  if (Number.isNaN(z)) return Number.NaN;
  if (z === Number.NEGATIVE_INFINITY) return 0;
  if (z === Number.POSITIVE_INFINITY) return 1;
  if (z === 0) return 0.5;
  const half = 0.5 * gammaQ(0.5, (z * z) / 2);
  return z < 0 ? half : 1 - half;
}

/** z such that Φ(z) = 0.975: the half-width of a 95 % normal interval in standard errors. */
export const Z_975 = 1.959963984540054;
