import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chiSquaredSurvival,
  gammaP,
  gammaQ,
  logGamma,
  normalCdf,
  normalPdf,
  Z_975,
} from './distributions.ts';

const close = (actual: number, expected: number, relative = 1e-12) =>
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(relative * Math.abs(expected) + 1e-300);

describe('logGamma', () => {
  it('matches exact values', () => {
    expect(Math.abs(logGamma(1))).toBeLessThan(1e-14);
    expect(Math.abs(logGamma(2))).toBeLessThan(1e-14);
    close(logGamma(0.5), Math.log(Math.sqrt(Math.PI)));
    close(logGamma(5), Math.log(24));
    close(logGamma(10.5), Math.log(1133278.3889487856), 1e-13);
    close(logGamma(100), 359.1342053695754, 1e-13);
    close(logGamma(0.1), 2.252712651734206, 1e-13);
  });
});

describe('incomplete gamma', () => {
  it('P + Q = 1 and P(1, x) = 1 − e^−x', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.05, max: 200, noNaN: true }),
        fc.double({ min: 0, max: 400, noNaN: true }),
        (a, x) => {
          const p = gammaP(a, x);
          const q = gammaQ(a, x);
          expect(p).toBeGreaterThanOrEqual(0);
          expect(q).toBeGreaterThanOrEqual(0);
          expect(Math.abs(p + q - 1)).toBeLessThan(1e-12);
        },
      ),
    );
    for (const x of [0.01, 0.5, 1, 2, 5, 30]) close(gammaP(1, x), -Math.expm1(-x), 1e-13);
  });

  it('rejects bad arguments', () => {
    expect(() => gammaP(0, 1)).toThrow(RangeError);
    expect(() => gammaQ(1, -1)).toThrow(RangeError);
    expect(() => logGamma(0)).toThrow(RangeError);
  });
});

describe('chiSquaredSurvival', () => {
  it('matches chi-squared table critical values', () => {
    // [x, df, upper-tail p]
    const table: [number, number, number][] = [
      [3.841458820694124, 1, 0.05],
      [6.6348966010212145, 1, 0.01],
      [10.827566170662733, 1, 0.001],
      [5.991464547107979, 2, 0.05],
      [13.815510557964274, 2, 0.001],
      [7.814727903251178, 3, 0.05],
      [16.26623619623813, 3, 0.001],
      [18.307038053275146, 10, 0.05],
      [29.58829844507442, 10, 0.001],
      [124.34211340400407, 100, 0.05],
    ];
    for (const [x, df, p] of table) close(chiSquaredSurvival(x, df), p, 1e-9);
  });

  it('matches the closed forms for 2 and 4 degrees of freedom', () => {
    for (const x of [0.1, 1, 3, 10, 50]) {
      close(chiSquaredSurvival(x, 2), Math.exp(-x / 2));
      close(chiSquaredSurvival(x, 4), Math.exp(-x / 2) * (1 + x / 2));
    }
    expect(chiSquaredSurvival(0, 3)).toBe(1);
    expect(chiSquaredSurvival(1e6, 1)).toBe(0);
  });
});

describe('normal', () => {
  it('matches table values in the body and both tails', () => {
    close(normalCdf(0), 0.5);
    close(normalCdf(1), 0.8413447460685429);
    close(normalCdf(-1), 0.15865525393145707);
    close(normalCdf(Z_975), 0.975);
    close(normalCdf(-3), 0.0013498980316300933, 1e-11);
    close(normalCdf(-8), 6.22096057427178e-16, 1e-10);
    close(normalCdf(-20), 2.7536241186062337e-89, 1e-9);
    expect(normalCdf(40)).toBe(1);
    expect(normalCdf(Number.NEGATIVE_INFINITY)).toBe(0);
    close(normalPdf(0), 1 / Math.sqrt(2 * Math.PI));
  });

  it('is symmetric and monotone', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -30, max: 30, noNaN: true }),
        fc.double({ min: 0, max: 5, noNaN: true }),
        (z, d) => {
          expect(Math.abs(normalCdf(z) + normalCdf(-z) - 1)).toBeLessThan(1e-14);
          expect(normalCdf(z + d)).toBeGreaterThanOrEqual(normalCdf(z));
        },
      ),
    );
  });
});
