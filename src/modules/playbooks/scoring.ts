/**
 * How good a mined pattern is, in parts a user can read (docs/playbooks.md). Pure.
 */

/** z for a two-sided 95 % interval. */
const Z95 = 1.959963984540054;

/** Lower bound of the Wilson score interval (95 %) of `successes` out of `trials`; 0 with no trials. */
export function wilsonLowerBound(successes: number, trials: number, z = Z95): number {
  if (trials <= 0) return 0;
  const p = successes / trials;
  const z2 = z * z;
  const centre = p + z2 / (2 * trials);
  const margin = z * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials));
  return Math.max(0, (centre - margin) / (1 + z2 / trials));
}

/** The workspace's figures in the mining window, against which a pattern is judged. */
export interface Baseline {
  /** Share of finished runs that succeeded. */
  successRate: number;
  /** Average cost and duration of successful runs (0 when unknown). */
  averageCost: number;
  averageDurationMs: number;
}

/** What a pattern did in the window. */
export interface PatternOutcome {
  /** Successful runs matching the pattern. */
  support: number;
  /** Finished runs matching it, successful or not. */
  matching: number;
  averageCost: number;
  averageDurationMs: number;
}

/** The parts of the quality score, each in [0, 1], and their weights. */
export interface QualityParts {
  /** Wilson lower bound of the success rate: reliable success, penalising small samples. */
  reliability: number;
  /** How much evidence: 1 - exp(-support / 25), so 5 runs give 0.18, 25 give 0.63, 100 give 0.98. */
  evidence: number;
  /** Success gained over the workspace: (rate - base) / (1 - base), 0 when no better. */
  lift: number;
  /** Cheaper than the workspace's average run: base / (base + pattern); 0.5 when equal. */
  cost: number;
  /** Faster than the workspace's average run, the same way. */
  speed: number;
}

export const QUALITY_WEIGHTS: Readonly<QualityParts> = {
  reliability: 0.45,
  evidence: 0.15,
  lift: 0.2,
  cost: 0.1,
  speed: 0.1,
};

/** A / (a + b) for "lower is better" figures, 0.5 when both are zero. */
function cheaperShare(base: number, value: number): number {
  if (base <= 0 && value <= 0) return 0.5;
  return base / (base + value);
}

export function qualityOf(
  outcome: PatternOutcome,
  baseline: Baseline,
): { score: number; parts: QualityParts } {
  const rate = outcome.matching > 0 ? outcome.support / outcome.matching : 0;
  const gain =
    baseline.successRate >= 1 ? 0 : Math.max(0, (rate - baseline.successRate) / (1 - baseline.successRate));
  const parts: QualityParts = {
    reliability: wilsonLowerBound(outcome.support, outcome.matching),
    evidence: 1 - Math.exp(-outcome.support / 25),
    lift: Math.min(1, gain),
    cost: cheaperShare(baseline.averageCost, outcome.averageCost),
    speed: cheaperShare(baseline.averageDurationMs, outcome.averageDurationMs),
  };
  let score = 0;
  for (const key of Object.keys(QUALITY_WEIGHTS) as (keyof QualityParts)[]) {
    score += QUALITY_WEIGHTS[key] * parts[key];
  }
  const round = (value: number) => Math.round(value * 10_000) / 10_000;
  return {
    score: round(score),
    parts: {
      reliability: round(parts.reliability),
      evidence: round(parts.evidence),
      lift: round(parts.lift),
      cost: round(parts.cost),
      speed: round(parts.speed),
    },
  };
}

/** The spec's confidence bands: high above 90 %, medium 70 to 90 %, low below 70 %. */
export type ConfidenceBand = 'high' | 'medium' | 'low';
export function confidenceBand(confidence: number): ConfidenceBand {
  if (confidence > 0.9) return 'high';
  return confidence >= 0.7 ? 'medium' : 'low';
}
