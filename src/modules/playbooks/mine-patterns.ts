/**
 * From finished runs to scored, merged, described patterns: the whole of playbook mining that
 * needs no database (docs/playbooks.md). FP-Growth runs in a worker thread
 * (`src/lib/mining`), over the successful runs' transactions; each pattern is then measured
 * against every finished run of the window with bitsets.
 */
import { createHash } from 'node:crypto';
import { mineInWorker } from '../../lib/mining/mine-in-worker.ts';
import { type Category, type CategoryVote, categorise } from './categories.ts';
import { goalTemplate, playbookDescription, playbookName } from './describe.ts';
import { type Baseline, type QualityParts, qualityOf, wilsonLowerBound } from './scoring.ts';
import { coreOf, itemsByKind, type MinedRun, normaliseName, transactionOf } from './transactions.ts';

export interface MineOptions {
  /** Successful runs a pattern needs at least (3 to 20). */
  minSupport: number;
  /** P(success | pattern) a pattern needs at least (0.5 to 1). */
  minConfidence: number;
  /** Patterns kept, best quality first. */
  topK: number;
  /** Only patterns of these categories, when given. */
  categories?: readonly Category[];
  /** Agent roles by normalised agent name (they vote for categories). */
  roles?: ReadonlyMap<string, string>;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

export interface MinedPattern {
  /** Stable identity of the pattern (its agents and tools): re-mining updates, not duplicates. */
  key: string;
  items: string[];
  agents: string[];
  tools: string[];
  contextFields: string[];
  inputs: string[];
  configuration: Record<string, string>;
  support: number;
  matching: number;
  confidence: number;
  lift: number;
  averageDurationMs: number;
  averageCost: number;
  quality: number;
  qualityParts: QualityParts;
  exampleRunIds: string[];
  goalTemplate: string;
  name: string;
  description: string;
  category: Category | null;
  categoryVotes: CategoryVote[];
}

export interface MineSummary {
  runs: number;
  successfulRuns: number;
  baseline: Baseline;
  /** Closed itemsets FP-Growth found, before filters and merging. */
  itemsets: number;
  patterns: MinedPattern[];
  tookMs: { mining: number; scoring: number };
}

/** Itemsets held at most (the highest support first): bounds memory on wide, varied runs. */
const MAX_ITEMSETS = 20_000;
/** Longest pattern looked for. */
const MAX_PATTERN_LENGTH = 16;
const EXAMPLES = 5;
/**
 * A pattern passes `minConfidence` when the lower bound of its success rate's Wilson interval
 * at z = 1 (about 84 % one-sided) does: 5 of 5 gives 0.83, 27 of 30 gives 0.83, 5 of 6 0.64.
 */
export const CONFIDENCE_Z = 1;
const GOAL_SAMPLE = 50;

/** Bit sets over the runs, one bit a run. */
class Bits {
  readonly words: Uint32Array;
  constructor(size: number) {
    this.words = new Uint32Array((size + 31) >>> 5);
  }
  set(index: number): void {
    this.words[index >>> 5] = (this.words[index >>> 5] as number) | (1 << (index & 31));
  }
}

function intersect(sets: Bits[], size: number): Uint32Array {
  const result = new Uint32Array((size + 31) >>> 5);
  result.set((sets[0] as Bits).words);
  for (let s = 1; s < sets.length; s += 1) {
    const words = (sets[s] as Bits).words;
    for (let w = 0; w < result.length; w += 1) result[w] = (result[w] as number) & (words[w] as number);
  }
  return result;
}

function* indexesOf(words: Uint32Array): Generator<number> {
  for (let w = 0; w < words.length; w += 1) {
    let word = words[w] as number;
    while (word !== 0) {
      const low = word & -word;
      yield (w << 5) + (31 - Math.clz32(low));
      word ^= low;
    }
  }
}

const average = (total: number, count: number) => (count > 0 ? total / count : 0);

/**
 * Mines `runs` (finished runs of one scope, newest first: examples are taken from the start).
 * Rejects with the signal's reason when aborted.
 */
export async function minePatterns(runs: readonly MinedRun[], options: MineOptions): Promise<MineSummary> {
  const started = performance.now();
  const transactions = runs.map(transactionOf);
  const successful = runs.flatMap((run, index) => (run.succeeded ? [index] : []));
  let successCost = 0;
  let successDuration = 0;
  for (const index of successful) {
    successCost += (runs[index] as MinedRun).cost;
    successDuration += (runs[index] as MinedRun).duration_ms ?? 0;
  }
  const baseline: Baseline = {
    successRate: average(successful.length, runs.length),
    averageCost: average(successCost, successful.length),
    averageDurationMs: average(successDuration, successful.length),
  };

  const mined =
    successful.length >= options.minSupport
      ? await mineInWorker(
          successful.map((index) => transactions[index] as string[]),
          {
            minSupport: options.minSupport,
            mode: 'closed',
            maxLength: MAX_PATTERN_LENGTH,
            topK: MAX_ITEMSETS,
            ...(options.signal ? { signal: options.signal } : {}),
            ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          },
        )
      : { itemsets: [] as [string[], number][] };
  const miningMs = performance.now() - started;

  // Bit sets of every item over all runs, and of success.
  const itemBits = new Map<string, Bits>();
  const succeeded = new Bits(runs.length);
  transactions.forEach((items, index) => {
    if ((runs[index] as MinedRun).succeeded) succeeded.set(index);
    for (const item of items) {
      let bits = itemBits.get(item);
      if (!bits) {
        bits = new Bits(runs.length);
        itemBits.set(item, bits);
      }
      bits.set(index);
    }
  });

  // Measure, filter and keep the best of each core.
  const best = new Map<string, Omit<MinedPattern, 'name' | 'description' | 'category' | 'categoryVotes'>>();
  for (const [items] of mined.itemsets) {
    options.signal?.throwIfAborted();
    if (!items.some((item) => item.startsWith('agent:'))) continue;
    const sets = items.map((item) => itemBits.get(item) as Bits);
    const all = intersect(sets, runs.length);
    let matching = 0;
    let support = 0;
    let cost = 0;
    let duration = 0;
    const examples: string[] = [];
    for (const index of indexesOf(all)) {
      matching += 1;
      const run = runs[index] as MinedRun;
      if (!run.succeeded) continue;
      support += 1;
      cost += run.cost;
      duration += run.duration_ms ?? 0;
      if (examples.length < EXAMPLES) examples.push(run.id);
    }
    const confidence = average(support, matching);
    // The threshold must hold with some certainty, not by luck: among thousands of itemsets, a
    // small subgroup of a 30 % pattern reaches 5 of 6 by chance. 5 successes of 5 still pass 0.8.
    if (
      support < options.minSupport ||
      wilsonLowerBound(support, matching, CONFIDENCE_Z) < options.minConfidence
    ) {
      continue;
    }
    const outcome = {
      support,
      matching,
      averageCost: average(cost, support),
      averageDurationMs: average(duration, support),
    };
    const quality = qualityOf(outcome, baseline);
    const core = coreOf(items);
    const kept = best.get(core);
    if (
      kept &&
      (kept.quality > quality.score || (kept.quality === quality.score && kept.support >= support))
    ) {
      continue;
    }
    const grouped = itemsByKind(items);
    best.set(core, {
      key: createHash('sha256').update(core).digest('hex').slice(0, 32),
      items,
      agents: usualOrder(grouped.agent, all, succeeded, runs),
      tools: grouped.tool,
      contextFields: grouped.ctx,
      inputs: grouped.in,
      configuration: Object.fromEntries(
        grouped.cfg.map((setting) => setting.split('=', 2) as [string, string]),
      ),
      support,
      matching,
      confidence: round(confidence),
      lift: round(baseline.successRate > 0 ? confidence / baseline.successRate : 0),
      averageDurationMs: Math.round(outcome.averageDurationMs),
      averageCost: round(outcome.averageCost, 1e8),
      quality: quality.score,
      qualityParts: quality.parts,
      exampleRunIds: examples,
      goalTemplate: goalTemplate(goalsOf(all, succeeded, runs)),
    });
  }

  const patterns: MinedPattern[] = [];
  for (const pattern of best.values()) {
    const goals = goalsOf(
      intersect(
        pattern.items.map((item) => itemBits.get(item) as Bits),
        runs.length,
      ),
      succeeded,
      runs,
    );
    const { category, votes } = categorise({
      tools: pattern.tools,
      agents: [...pattern.agents, ...pattern.agents.flatMap((agent) => options.roles?.get(agent) ?? [])],
      contextFields: pattern.contextFields,
      goals,
    });
    if (options.categories && (category === null || !options.categories.includes(category))) continue;
    patterns.push({
      ...pattern,
      name: playbookName(pattern.agents, pattern.tools),
      description: playbookDescription({ ...pattern, baseSuccessRate: baseline.successRate }),
      category,
      categoryVotes: votes,
    });
  }
  patterns.sort((a, b) => b.quality - a.quality || b.support - a.support || a.key.localeCompare(b.key));
  return {
    runs: runs.length,
    successfulRuns: successful.length,
    baseline: {
      successRate: round(baseline.successRate),
      averageCost: round(baseline.averageCost, 1e8),
      averageDurationMs: Math.round(baseline.averageDurationMs),
    },
    itemsets: mined.itemsets.length,
    patterns: patterns.slice(0, options.topK),
    tookMs: { mining: Math.round(miningMs), scoring: Math.round(performance.now() - started - miningMs) },
  };
}

const round = (value: number, scale = 10_000) => Math.round(value * scale) / scale;

/** Goals of the first successful matching runs. */
function goalsOf(matching: Uint32Array, succeeded: Bits, runs: readonly MinedRun[]): string[] {
  const goals: string[] = [];
  for (const index of indexesOf(matching)) {
    if (goals.length >= GOAL_SAMPLE) break;
    if (((succeeded.words[index >>> 5] as number) >>> (index & 31)) & 1)
      goals.push((runs[index] as MinedRun).goal);
  }
  return goals;
}

/**
 * The pattern's agents in the order its successful runs most often used them (each run's
 * first use of each agent); ties by name.
 */
function usualOrder(
  agents: readonly string[],
  matching: Uint32Array,
  succeeded: Bits,
  runs: readonly MinedRun[],
): string[] {
  const wanted = new Set(agents);
  const orders = new Map<string, number>();
  let seen = 0;
  for (const index of indexesOf(matching)) {
    if (seen >= GOAL_SAMPLE * 4) break;
    if (!(((succeeded.words[index >>> 5] as number) >>> (index & 31)) & 1)) continue;
    seen += 1;
    const order: string[] = [];
    for (const name of (runs[index] as MinedRun).agents_used) {
      const agent = normaliseName(name);
      if (wanted.has(agent) && !order.includes(agent)) order.push(agent);
    }
    const key = order.join('\n');
    orders.set(key, (orders.get(key) ?? 0) + 1);
  }
  const [top] = [...orders.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const ordered = top ? top[0].split('\n').filter((agent) => agent !== '') : [];
  return ordered.length === agents.length ? ordered : [...agents].sort();
}
