import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalCdf, Z_975 } from './distributions.ts';
import {
  compareQuantile,
  compareRatio,
  decide,
  type MetricComparison,
  type RatioArm,
  ratioArmOf,
  sampleRatioMismatch,
} from './experiment-stats.ts';
import { type Random, seededRandom } from './random.ts';

const armOf = ratioArmOf;

const perUnit = (values: readonly number[]) => armOf(values.map((x) => [x, 1] as const));
const repeat = <T>(n: number, f: () => T): T[] => Array.from({ length: n }, f);

/** Every number in the comparison is finite, and it survives a JSON round trip unchanged. */
function expectWellFormed(result: MetricComparison) {
  const numbers = [
    result.control,
    result.treatment,
    result.relative_lift,
    result.chance_to_win,
    result.expected_loss,
    ...(result.ci95 ?? []),
  ];
  for (const value of numbers) expect(value === null || Number.isFinite(value)).toBe(true);
  expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  if (result.chance_to_win !== null) {
    expect(result.chance_to_win).toBeGreaterThanOrEqual(0);
    expect(result.chance_to_win).toBeLessThanOrEqual(1);
  }
  if (result.expected_loss !== null) expect(result.expected_loss).toBeGreaterThanOrEqual(0);
}

describe('compareRatio: hand-computed values', () => {
  it('ratioArmOf sums per-unit pairs', () => {
    expect(
      ratioArmOf([
        [1, 2],
        [3, 4],
      ]),
    ).toEqual({ units: 2, sum_x: 4, sum_y: 6, sum_xx: 10, sum_yy: 20, sum_xy: 14 });
  });

  it('compares two success rates (30/100 against 36/100)', () => {
    const control = perUnit([...repeat(30, () => 1), ...repeat(70, () => 0)]);
    const treatment = perUnit([...repeat(36, () => 1), ...repeat(64, () => 0)]);
    const result = compareRatio(control, treatment, { higher_is_better: true });
    // Var(p̂) with the (n − 1) sample variance: c = 21/99/100, t = 23.04/99/100.
    const varC = 21 / 99 / 100;
    const varT = 23.04 / 99 / 100;
    const varLift = varT / 0.09 + (0.36 * 0.36 * varC) / 0.3 ** 4;
    const se = Math.sqrt(varLift);
    expect(result.control).toBeCloseTo(0.3, 12);
    expect(result.treatment).toBeCloseTo(0.36, 12);
    expect(result.relative_lift).toBeCloseTo(0.2, 12);
    expect(se).toBeCloseTo(0.244536, 5);
    expect(result.ci95?.[0]).toBeCloseTo(0.2 - Z_975 * se, 12);
    expect(result.ci95?.[1]).toBeCloseTo(0.2 + Z_975 * se, 12);
    expect(result.chance_to_win).toBeCloseTo(normalCdf(0.2 / se), 12);
    expect(result.chance_to_win).toBeCloseTo(0.79331, 4);
    // E[max(0, −L)] for L ~ N(0.2, se): se·φ(0.2/se) − 0.2·Φ(−0.2/se).
    const z = 0.2 / se;
    const loss = (se * Math.exp((-z * z) / 2)) / Math.sqrt(2 * Math.PI) - 0.2 * normalCdf(-z);
    expect(result.expected_loss).toBeCloseTo(loss, 12);

    const lower = compareRatio(control, treatment, { higher_is_better: false });
    expect(lower.chance_to_win).toBeCloseTo(1 - (result.chance_to_win as number), 12);
    // Lower is better: the loss is E[max(0, L)] = E[max(0, −L)] + E[L].
    expect(lower.expected_loss).toBeCloseTo(loss + 0.2, 12);
    expect(lower.ci95).toEqual(result.ci95);
  });

  it('uses the delta method for a ratio of sums (cost per run)', () => {
    // Four units: (cost, runs). Control and treatment hand-built.
    const control = armOf([
      [1, 1],
      [2, 2],
      [3, 1],
      [0, 2],
    ]);
    const treatment = armOf([
      [2, 1],
      [4, 2],
      [3, 1],
      [3, 2],
    ]);
    // Control: μx = 1.5, μy = 1.5, σx² = 5/3, σy² = 1/3, σxy = −1/3 → ratio 1,
    // Var = (5/3/2.25 + 2·1.5·(1/3)/3.375 + 2.25·(1/3)/5.0625) / 4 = (0.74074 + 0.29630 + 0.14815) / 4.
    const varC = (5 / 3 / 2.25 + (2 * 1.5 * (1 / 3)) / 3.375 + (2.25 * (1 / 3)) / 5.0625) / 4;
    // Treatment: μx = 3, μy = 1.5, σx² = 2/3, σy² = 1/3, σxy = 1/3 → ratio 2,
    // Var = (2/3/2.25 − 2·3·(1/3)/3.375 + 9·(1/3)/5.0625) / 4.
    const varT = (2 / 3 / 2.25 - (2 * 3 * (1 / 3)) / 3.375 + (9 * (1 / 3)) / 5.0625) / 4;
    const result = compareRatio(control, treatment, { higher_is_better: false });
    expect(result.control).toBeCloseTo(1, 12);
    expect(result.treatment).toBeCloseTo(2, 12);
    expect(result.relative_lift).toBeCloseTo(1, 12);
    const se = Math.sqrt(varT / 1 + 4 * varC);
    expect(result.ci95?.[1]).toBeCloseTo(1 + Z_975 * se, 12);
    expect(result.chance_to_win).toBeCloseTo(normalCdf(-1 / se), 12);
  });

  it('gives a point mass when neither arm varies, and zero expected loss at no lift', () => {
    const allOnes = perUnit(repeat(50, () => 1));
    const result = compareRatio(allOnes, allOnes, { higher_is_better: true });
    expect(result).toEqual({
      control: 1,
      treatment: 1,
      relative_lift: 0,
      ci95: [0, 0],
      chance_to_win: 0.5,
      expected_loss: 0,
    });
    const a = perUnit([0, 1, 0, 1]);
    const same = compareRatio(a, a, { higher_is_better: true });
    expect(same.relative_lift).toBe(0);
    expect(same.chance_to_win).toBe(0.5);
    // At a zero mean the loss is se·φ(0) = se / √(2π).
    const se = ((same.ci95?.[1] as number) - (same.ci95?.[0] as number)) / (2 * Z_975);
    expect(same.expected_loss).toBeCloseTo(se / Math.sqrt(2 * Math.PI), 12);
  });
});

describe('compareRatio and compareQuantile: degenerate input gives nulls, never NaN', () => {
  const empty = armOf([]);
  it('handles zero units, one unit, all zeros and a zero control', () => {
    const some = perUnit([1, 0, 1, 1]);
    const cases: [RatioArm, RatioArm][] = [
      [empty, empty],
      [empty, some],
      [some, empty],
      [perUnit([1]), some],
      [perUnit([0, 0, 0]), perUnit([0, 0, 0])],
      [perUnit([0, 0, 0]), some],
      [armOf([[1, 0]]), some],
    ];
    for (const [control, treatment] of cases) {
      const result = compareRatio(control, treatment, { higher_is_better: true });
      expectWellFormed(result);
      expect(result.relative_lift).toBeNull();
      expect(result.ci95).toBeNull();
      expect(result.chance_to_win).toBeNull();
      expect(result.expected_loss).toBeNull();
    }
    expect(compareRatio(perUnit([1]), some, { higher_is_better: true }).control).toBe(1);
    expect(compareRatio(empty, some, { higher_is_better: true }).control).toBeNull();
    expect(compareRatio(perUnit([0, 0, 0]), some, { higher_is_better: true }).control).toBe(0);
  });

  it('never returns NaN or Infinity for arbitrary sums, including non-finite ones', () => {
    const anyNumber = fc.oneof(fc.double(), fc.integer({ min: -5, max: 5 }));
    const anyArm = fc.record({
      units: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.double()),
      sum_x: anyNumber,
      sum_y: anyNumber,
      sum_xx: anyNumber,
      sum_yy: anyNumber,
      sum_xy: anyNumber,
    });
    fc.assert(
      fc.property(anyArm, anyArm, fc.boolean(), (control, treatment, higher_is_better) => {
        expectWellFormed(compareRatio(control, treatment, { higher_is_better }));
      }),
      { numRuns: 500 },
    );
  });

  it('quantiles: empty, one value, constant, non-finite values', () => {
    const cases: [number[], number[]][] = [
      [[], []],
      [[5], [1, 2, 3]],
      [
        [0, 0, 0],
        [1, 2, 3],
      ],
      [
        [2, 2, 2],
        [2, 2, 2],
      ],
      [
        [Number.NaN, Number.POSITIVE_INFINITY],
        [1, 2],
      ],
    ];
    for (const [control, treatment] of cases) {
      expectWellFormed(compareQuantile(control, treatment, 0.95, { higher_is_better: false }));
    }
    expect(compareQuantile([2, 2, 2], [2, 2, 2], 0.95, { higher_is_better: false }).chance_to_win).toBe(0.5);
    expect(compareQuantile([], [1], 0.5, { higher_is_better: false }).treatment).toBe(1);
    expect(() => compareQuantile([1], [1], 1, { higher_is_better: false })).toThrow(RangeError);
    fc.assert(
      fc.property(
        fc.array(fc.double(), { maxLength: 30 }),
        fc.array(fc.double(), { maxLength: 30 }),
        fc.double({ min: 0.01, max: 0.99, noNaN: true }),
        (control, treatment, q) => {
          expectWellFormed(compareQuantile(control, treatment, q, { higher_is_better: false }));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('computes the sample quantile by linear interpolation', () => {
    const values = Array.from({ length: 101 }, (_, i) => i); // 0..100: p95 = 95
    const result = compareQuantile(
      values,
      values.map((v) => v * 2),
      0.95,
      { higher_is_better: false },
    );
    expect(result.control).toBe(95);
    expect(result.treatment).toBe(190);
    expect(result.relative_lift).toBeCloseTo(1, 12);
    expect(result.chance_to_win).toBeLessThan(0.001);
  });
});

describe('symmetry', () => {
  const unit = fc.tuple(fc.double({ min: 0, max: 100, noNaN: true }), fc.integer({ min: 1, max: 4 }));
  it('swapping arms flips the sign of the lift and which side the chance to win is on', () => {
    fc.assert(
      fc.property(
        fc.array(unit, { minLength: 2, maxLength: 40 }),
        fc.array(unit, { minLength: 2, maxLength: 40 }),
        fc.boolean(),
        (a, b, higher_is_better) => {
          const forward = compareRatio(armOf(a), armOf(b), { higher_is_better });
          const backward = compareRatio(armOf(b), armOf(a), { higher_is_better });
          expectWellFormed(forward);
          expectWellFormed(backward);
          if (forward.relative_lift === null || backward.relative_lift === null) return;
          if (Math.abs(forward.relative_lift) < 1e-9) return;
          expect(Math.sign(forward.relative_lift)).toBe(-Math.sign(backward.relative_lift));
          const f = forward.chance_to_win as number;
          const g = backward.chance_to_win as number;
          if (f !== 0.5) expect(Math.sign(f - 0.5)).toBe(-Math.sign(g - 0.5));
          // Turning the direction around gives exactly the other side.
          const flipped = compareRatio(armOf(a), armOf(b), { higher_is_better: !higher_is_better });
          expect(flipped.chance_to_win as number).toBeCloseTo(1 - f, 12);
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** Runs `runs` simulated experiments and counts false positives and interval coverage. */
function simulate(
  runs: number,
  trueLift: number,
  experiment: (rng: Random) => MetricComparison,
  seed: number,
): { significant: number; covered: number; wins: number } {
  const rng = seededRandom(seed);
  let significant = 0;
  let covered = 0;
  let wins = 0;
  for (let i = 0; i < runs; i++) {
    const result = experiment(rng);
    const chance = result.chance_to_win as number;
    const [low, high] = result.ci95 as [number, number];
    if (chance >= 0.975 || chance <= 0.025) significant++;
    if (chance >= 0.95) wins++;
    if (low <= trueLift && trueLift <= high) covered++;
  }
  return { significant: significant / runs, covered: covered / runs, wins: wins / runs };
}

const RUNS = 400;
// With 400 runs the standard error of a 5 % rate is 1.1 points: the bands are about ±3 of them.
const FALSE_POSITIVE_BAND = [0.02, 0.085] as const;
const COVERAGE_BAND = [0.915, 0.98] as const;

function expectCalibrated(outcome: { significant: number; covered: number }) {
  expect(outcome.significant).toBeGreaterThanOrEqual(FALSE_POSITIVE_BAND[0]);
  expect(outcome.significant).toBeLessThanOrEqual(FALSE_POSITIVE_BAND[1]);
  expect(outcome.covered).toBeGreaterThanOrEqual(COVERAGE_BAND[0]);
  expect(outcome.covered).toBeLessThanOrEqual(COVERAGE_BAND[1]);
}

const bernoulliArm = (rng: Random, n: number, p: number) => perUnit(repeat(n, () => rng.bernoulli(p)));
const lognormalArm = (rng: Random, n: number, scale: number) =>
  perUnit(repeat(n, () => scale * rng.lognormal(0, 1)));
/** Units with 1 + Poisson(2) runs each; x sums a per-run value (a success, or a cost). */
const runsArm = (rng: Random, n: number, perRun: () => number) =>
  armOf(
    repeat(n, () => {
      const runs = 1 + rng.poisson(2);
      let x = 0;
      for (let r = 0; r < runs; r++) x += perRun();
      return [x, runs] as const;
    }),
  );

describe('A/A simulations: about 5 % false positives, about 95 % coverage', () => {
  it('Bernoulli per-unit success rate', () => {
    const outcome = simulate(
      RUNS,
      0,
      (rng) =>
        compareRatio(bernoulliArm(rng, 500, 0.3), bernoulliArm(rng, 500, 0.3), { higher_is_better: true }),
      1,
    );
    expectCalibrated(outcome);
  });

  it('lognormal per-unit mean (a skewed metric)', () => {
    const outcome = simulate(
      RUNS,
      0,
      (rng) =>
        compareRatio(lognormalArm(rng, 500, 1), lognormalArm(rng, 500, 1), { higher_is_better: false }),
      2,
    );
    expectCalibrated(outcome);
  });

  it('ratio metrics: success rate per run and cost per run', () => {
    const success = simulate(
      RUNS,
      0,
      (rng) => {
        const perRun = () => rng.bernoulli(0.6);
        return compareRatio(runsArm(rng, 400, perRun), runsArm(rng, 400, perRun), { higher_is_better: true });
      },
      3,
    );
    expectCalibrated(success);
    const cost = simulate(
      RUNS,
      0,
      (rng) => {
        const perRun = () => rng.lognormal(-3, 0.8);
        return compareRatio(runsArm(rng, 400, perRun), runsArm(rng, 400, perRun), {
          higher_is_better: false,
        });
      },
      4,
    );
    expectCalibrated(cost);
  });

  it('p95 of lognormal latencies', () => {
    const latencies = (rng: Random, n: number, scale: number) =>
      repeat(n, () => scale * rng.lognormal(6, 0.7));
    const outcome = simulate(
      RUNS,
      0,
      (rng) =>
        compareQuantile(latencies(rng, 1000, 1), latencies(rng, 1000, 1), 0.95, { higher_is_better: false }),
      5,
    );
    expectCalibrated(outcome);
  });
});

describe('A/B simulations with a known effect: intervals cover it, enough units find it', () => {
  it('Bernoulli 30 % against 33 % (lift +10 %)', () => {
    const outcome = simulate(
      RUNS,
      0.1,
      (rng) =>
        compareRatio(bernoulliArm(rng, 1000, 0.3), bernoulliArm(rng, 1000, 0.33), { higher_is_better: true }),
      6,
    );
    expect(outcome.covered).toBeGreaterThanOrEqual(COVERAGE_BAND[0]);
    expect(outcome.covered).toBeLessThanOrEqual(COVERAGE_BAND[1]);
    // Power at n = 1000 per arm: se(lift) ≈ 0.073, so P(chance ≥ 95 %) ≈ Φ(0.1/0.073 − 1.645) ≈ 39 %.
    expect(outcome.wins).toBeGreaterThan(0.28);
    expect(outcome.wins).toBeLessThan(0.5);
  });

  it('lognormal mean scaled by 0.95 (lift −5 %, lower is better)', () => {
    const outcome = simulate(
      RUNS,
      -0.05,
      (rng) =>
        compareRatio(lognormalArm(rng, 2000, 1), lognormalArm(rng, 2000, 0.95), { higher_is_better: false }),
      7,
    );
    expect(outcome.covered).toBeGreaterThanOrEqual(COVERAGE_BAND[0]);
    expect(outcome.covered).toBeLessThanOrEqual(COVERAGE_BAND[1]);
  });

  it('p95 latency scaled by 0.9 (lift −10 %)', () => {
    const latencies = (rng: Random, n: number, scale: number) =>
      repeat(n, () => scale * rng.lognormal(6, 0.7));
    const outcome = simulate(
      RUNS,
      -0.1,
      (rng) =>
        compareQuantile(latencies(rng, 1000, 1), latencies(rng, 1000, 0.9), 0.95, {
          higher_is_better: false,
        }),
      8,
    );
    expect(outcome.covered).toBeGreaterThanOrEqual(COVERAGE_BAND[0]);
    expect(outcome.covered).toBeLessThanOrEqual(COVERAGE_BAND[1]);
  });

  it('with 5,000 units per arm the verdict is treatment_wins and the interval covers +10 %', () => {
    const rng = seededRandom(9);
    const control = bernoulliArm(rng, 5000, 0.3);
    const treatment = bernoulliArm(rng, 5000, 0.33);
    const primary = compareRatio(control, treatment, { higher_is_better: true });
    const [low, high] = primary.ci95 as [number, number];
    expect(low).toBeLessThan(0.1);
    expect(high).toBeGreaterThan(0.1);
    const srm = sampleRatioMismatch([control.units, treatment.units], [50, 50]);
    const verdict = decide({ units: [control.units, treatment.units], srm, primary, guardrails: [] });
    expect(verdict.decision).toBe('treatment_wins');
    // And the same data read the other way round is a control win.
    const reversed = compareRatio(treatment, control, { higher_is_better: true });
    expect(decide({ units: [5000, 5000], srm, primary: reversed, guardrails: [] }).decision).toBe(
      'control_wins',
    );
  });
});

describe('sampleRatioMismatch', () => {
  it('matches hand-computed chi-squared values', () => {
    // 52/48 at 20,000 units: (400² / 10,000) · 2 = 32, p = P(χ²₁ ≥ 32) ≈ 1.54e-8.
    const split = sampleRatioMismatch([10_400, 9_600], [50, 50]);
    expect(split.chi_squared).toBeCloseTo(32, 10);
    expect(split.p_value).toBeCloseTo(1.5417257900280013e-8, 15);
    expect(split.mismatch).toBe(true);
    // Exactly on the weights: no mismatch.
    expect(sampleRatioMismatch([250, 250, 500], [1, 1, 2])).toEqual({
      chi_squared: 0,
      p_value: 1,
      mismatch: false,
    });
    // Two degrees of freedom: p = e^(−χ²/2). Expected 100 each; (110, 95, 95) → 1 + 0.25 + 0.25.
    const three = sampleRatioMismatch([110, 95, 95], [1, 1, 1]);
    expect(three.chi_squared).toBeCloseTo(1.5, 12);
    expect(three.p_value).toBeCloseTo(Math.exp(-0.75), 12);
  });

  it('handles no units, one arm, zero weights and bad input', () => {
    expect(sampleRatioMismatch([0, 0], [50, 50])).toEqual({ chi_squared: 0, p_value: 1, mismatch: false });
    expect(sampleRatioMismatch([10], [1])).toEqual({ chi_squared: 0, p_value: 1, mismatch: false });
    expect(sampleRatioMismatch([10, 0, 10], [1, 0, 1]).mismatch).toBe(false);
    const stray = sampleRatioMismatch([10, 1, 10], [1, 0, 1]);
    expect(stray.mismatch).toBe(true);
    expect(Number.isFinite(stray.chi_squared)).toBe(true);
    expect(() => sampleRatioMismatch([1, 2], [1])).toThrow(RangeError);
    expect(() => sampleRatioMismatch([1, -2], [1, 1])).toThrow(RangeError);
    expect(() => sampleRatioMismatch([1, 2], [0, 0])).toThrow(RangeError);
  });

  it('is uniform-ish under the null and rarely flags a true split', () => {
    const rng = seededRandom(10);
    const pValues = repeat(RUNS, () => {
      let [a, b, c] = [0, 0, 0];
      for (let i = 0; i < 2000; i++) {
        const u = rng.uniform();
        if (u < 0.25) a++;
        else if (u < 0.5) b++;
        else c++;
      }
      return sampleRatioMismatch([a, b, c], [25, 25, 50]).p_value;
    });
    const below = (x: number) => pValues.filter((p) => p < x).length / RUNS;
    expect(below(0.05)).toBeGreaterThanOrEqual(0.02);
    expect(below(0.05)).toBeLessThanOrEqual(0.085);
    expect(below(0.5)).toBeGreaterThanOrEqual(0.42);
    expect(below(0.5)).toBeLessThanOrEqual(0.58);
    expect(below(0.001)).toBeLessThanOrEqual(2 / RUNS);
  });

  it('detects a true 52/48 split at 20,000 units', () => {
    const rng = seededRandom(11);
    let flagged = 0;
    for (let run = 0; run < 50; run++) {
      let first = 0;
      for (let i = 0; i < 20_000; i++) first += rng.bernoulli(0.52);
      if (sampleRatioMismatch([first, 20_000 - first], [50, 50]).mismatch) flagged++;
    }
    expect(flagged).toBeGreaterThanOrEqual(45);
  });
});

describe('decide', () => {
  const metric = (chance: number | null): MetricComparison => ({
    control: 0.3,
    treatment: 0.33,
    relative_lift: chance === null ? null : 0.1,
    ci95: chance === null ? null : [-0.01, 0.21],
    chance_to_win: chance,
    expected_loss: chance === null ? null : 0.01,
  });
  const ok = { mismatch: false };

  it('puts a sample ratio mismatch first, then too few units', () => {
    const srm = decide({ units: [10, 10], srm: { mismatch: true }, primary: metric(0.99), guardrails: [] });
    expect(srm.decision).toBe('sample_ratio_mismatch');
    expect(srm.reason).toContain('10 / 10');
    const few = decide({ units: [99, 500], srm: ok, primary: metric(0.99), guardrails: [] });
    expect(few.decision).toBe('insufficient_data');
    expect(few.reason).toContain('100');
    expect(few.reason).toContain('99 / 500');
    expect(
      decide({ units: [20, 20], srm: ok, primary: metric(0.99), guardrails: [], min_units_per_arm: 20 })
        .decision,
    ).toBe('treatment_wins');
    expect(decide({ units: [], srm: ok, primary: metric(0.99), guardrails: [] }).decision).toBe(
      'insufficient_data',
    );
    expect(decide({ units: [500], srm: ok, primary: metric(0.99), guardrails: [] }).decision).toBe(
      'insufficient_data',
    );
  });

  it('blocks a win on a guardrail regression', () => {
    const result = decide({
      units: [500, 500],
      srm: ok,
      primary: metric(0.99),
      guardrails: [metric(0.5), metric(0.01)],
    });
    expect(result.decision).toBe('guardrail_regression');
    expect(result.reason).toContain('guardrail 2');
    expect(
      decide({ units: [500, 500], srm: ok, primary: metric(0.99), guardrails: [metric(null)] }).decision,
    ).toBe('treatment_wins');
  });

  it('calls the primary metric at 95 % either way, else inconclusive', () => {
    const at = (chance: number | null) =>
      decide({ units: [500, 500], srm: ok, primary: metric(chance), guardrails: [] });
    expect(at(0.95).decision).toBe('treatment_wins');
    expect(at(0.95).reason).toContain('95.0 %');
    expect(at(0.05).decision).toBe('control_wins');
    expect(at(0.9).decision).toBe('inconclusive');
    expect(at(0.9).reason).toContain('+10.0 %');
    expect(at(null).decision).toBe('inconclusive');
  });
});
