import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { categorise, wordsOf } from './categories.ts';
import { goalTemplate, playbookName } from './describe.ts';
import { minePatterns } from './mine-patterns.ts';
import { confidenceBand, qualityOf, wilsonLowerBound } from './scoring.ts';
import { coreOf, type MinedRun, transactionOf } from './transactions.ts';

const run = (overrides: Partial<MinedRun> = {}): MinedRun => ({
  id: 'r1',
  succeeded: true,
  agents_used: ['Planner', 'Coder', 'Coder', 'Reviewer'],
  tools_used: ['github'],
  context_fields: ['repo'],
  inputs: ['feature'],
  mode: 'sequential',
  error_handling: 'retry',
  timeout_seconds: 900,
  goal: 'Build it',
  duration_ms: 1000,
  cost: 0.01,
  ...overrides,
});

describe('transactionOf', () => {
  it('turns a run into the item vocabulary, order pairs included, values never', () => {
    expect(transactionOf(run())).toEqual([
      'agent:coder',
      'agent:planner',
      'agent:reviewer',
      'cfg:errors=retry',
      'cfg:mode=sequential',
      'cfg:timeout=standard',
      'ctx:repo',
      'in:feature',
      'seq:coder>reviewer',
      'seq:planner>coder',
      'tool:github',
    ]);
    expect(transactionOf(run({ timeout_seconds: 60 }))).toContain('cfg:timeout=short');
    expect(transactionOf(run({ timeout_seconds: 7200 }))).toContain('cfg:timeout=long');
  });

  it('gives the same core to the same team whatever its context', () => {
    const a = transactionOf(run());
    const b = transactionOf(run({ context_fields: ['other'], inputs: [] }));
    expect(coreOf(a)).toBe(coreOf(b));
    expect(coreOf(a)).not.toBe(coreOf(transactionOf(run({ tools_used: [] }))));
  });
});

describe('scoring', () => {
  it('computes the Wilson lower bound', () => {
    expect(wilsonLowerBound(0, 0)).toBe(0);
    expect(wilsonLowerBound(5, 5, 1)).toBeCloseTo(0.8333, 3);
    expect(wilsonLowerBound(81, 100)).toBeCloseTo(0.7222, 3);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 0, max: 500 }), (n, k) => {
        const s = Math.min(k, n);
        const bound = wilsonLowerBound(s, n);
        return bound >= 0 && bound <= s / n + 1e-12;
      }),
    );
  });

  it('keeps the quality score and every part in [0, 1], and rewards reliability', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 100, noNaN: true }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        (matching, extra, base, cost, duration) => {
          const support = Math.min(matching, extra);
          const { score, parts } = qualityOf(
            { support, matching, averageCost: cost, averageDurationMs: duration },
            { successRate: base, averageCost: 1, averageDurationMs: 1000 },
          );
          return [score, ...Object.values(parts)].every((value) => value >= 0 && value <= 1);
        },
      ),
    );
    const baseline = { successRate: 0.6, averageCost: 0.01, averageDurationMs: 1000 };
    const good = qualityOf(
      { support: 95, matching: 100, averageCost: 0.01, averageDurationMs: 1000 },
      baseline,
    );
    const lucky = qualityOf(
      { support: 5, matching: 5, averageCost: 0.01, averageDurationMs: 1000 },
      baseline,
    );
    expect(good.score).toBeGreaterThan(lucky.score);
  });

  it('bands confidence as the spec does', () => {
    expect([0.95, 0.9, 0.7, 0.69].map(confidenceBand)).toEqual(['high', 'medium', 'medium', 'low']);
  });
});

describe('categories', () => {
  it('splits names and votes by weight, saying why', () => {
    expect(wordsOf('runUnitTests snake_case kebab-case')).toEqual([
      'run',
      'unit',
      'tests',
      'snake',
      'case',
      'kebab',
      'case',
    ]);
    const { category, votes } = categorise({
      tools: ['terraform_plan'],
      agents: ['Deployer'],
      contextFields: ['cluster'],
      goals: ['Write the docs'],
    });
    expect(category).toBe('Infrastructure & DevOps');
    expect(votes[0]).toEqual({
      category: 'Infrastructure & DevOps',
      score: 4,
      because: ['context:cluster', 'tool:terraform'],
    });
    expect(votes.map((vote) => vote.category)).toContain('Documentation');
    expect(categorise({ tools: [], agents: ['Bob'], contextFields: [], goals: [] }).category).toBeNull();
  });
});

describe('describe', () => {
  it('names a pattern after its team and tools', () => {
    expect(playbookName(['planner', 'code reviewer'], ['github'])).toBe(
      'Planner → Code Reviewer with github',
    );
    expect(playbookName(['x'.repeat(200)], []).length).toBeLessThanOrEqual(120);
  });

  it('keeps what goals share and marks what varied', () => {
    expect(goalTemplate(['Fix the login bug', 'Fix the billing bug'])).toBe('Fix the {{subject}} bug');
    expect(goalTemplate(['Same goal', 'Same goal'])).toBe('Same goal');
    expect(goalTemplate(['alpha', 'beta'])).toBe('{{goal}}');
    expect(goalTemplate([])).toBe('{{goal}}');
  });
});

describe('minePatterns', () => {
  it('keeps memory bounded when every run has a context field of its own', async () => {
    const runs = Array.from({ length: 60_000 }, (_, index) =>
      run({ id: `r${index}`, context_fields: [`field_${index}`], succeeded: index % 10 !== 0 }),
    );
    const before = process.memoryUsage().arrayBuffers;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 5);
    const summary = await minePatterns(runs, { minSupport: 5, minConfidence: 0.8, topK: 5 });
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    // One bit set per distinct item would be 60,000 sets of 7.5 kB: 450 MB.
    expect(peak - before).toBeLessThan(64 * 1024 * 1024);
    expect(summary.patterns[0]).toMatchObject({ agents: ['planner', 'coder', 'reviewer'], support: 54_000 });
    expect(summary.patterns[0]?.contextFields).toEqual([]);
  });
});
