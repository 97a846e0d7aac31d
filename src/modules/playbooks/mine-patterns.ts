/**
 * From finished runs to scored, merged, described patterns: the whole of playbook mining that
 * needs no database (docs/playbooks.md). FP-Growth runs in a worker thread
 * (`src/lib/mining`), over the successful runs' transactions; each pattern is then measured
 * against every finished run of the window with bitsets.
 */
import { createHash } from 'node:crypto';
import { mineTableInWorker } from '../../lib/mining/mine-in-worker.ts';
import { type Category, type CategoryVote, categorise } from './categories.ts';
import { goalTemplate, playbookDescription, playbookName } from './describe.ts';
import { type Baseline, type QualityParts, qualityOf, wilsonLowerBound } from './scoring.ts';
import { coreOf, ItemEncoder, itemsByKind, type MinedRun, normaliseName } from './transactions.ts';

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
  /**
   * The goals of runs whose `goal` was not loaded (mining reads goals only for the patterns it
   * keeps: the sample their templates and category votes come from).
   */
  goalsOf?: (runIds: string[]) => Promise<Map<string, string>>;
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
  /** Runs into transactions (items encoded), FP-Growth in its thread, measuring and describing. */
  tookMs: { transactions: number; mining: number; scoring: number };
}

/** Itemsets held at most (the highest support first): bounds memory on wide, varied runs. */
const MAX_ITEMSETS = 20_000;
/** Longest pattern looked for. */
const MAX_PATTERN_LENGTH = 16;
const EXAMPLES = 5;
const GOAL_SAMPLE = 50;
/** A context field, input or setting is typical of a pattern when this share of its successes had it. */
export const TYPICAL_SHARE = 0.5;
/**
 * A pattern passes `minConfidence` when the lower bound of its success rate's Wilson interval
 * at z = 1 (about 84 % one-sided) does: 5 of 5 gives 0.83, 27 of 30 gives 0.83, 5 of 6 0.64.
 */
export const CONFIDENCE_Z = 1;

/** The items that make a pattern: who works together, in which order, with which tools. */
const isPatternItem = (item: string) =>
  item.startsWith('agent:') || item.startsWith('tool:') || item.startsWith('seq:');

/** Set bits of a 32-bit word. */
function popcount(word: number): number {
  let v = word - ((word >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Run indexes of the set bits, in order. */
function indexesOf(words: Uint32Array, limit = Number.POSITIVE_INFINITY): number[] {
  const indexes: number[] = [];
  for (let w = 0; w < words.length && indexes.length < limit; w += 1) {
    let word = words[w] as number;
    while (word !== 0 && indexes.length < limit) {
      const low = word & -word;
      indexes.push((w << 5) + (31 - Math.clz32(low)));
      word ^= low;
    }
  }
  return indexes;
}

const average = (total: number, count: number) => (count > 0 ? total / count : 0);
type Scored = Omit<MinedPattern, 'name' | 'description' | 'category' | 'categoryVotes'>;

/**
 * Mines `runs` (finished runs of one scope; examples are taken from the start).
 *
 * FP-Growth finds the closed itemsets of the pattern items (agents, tools, order pairs) of the
 * successful runs; each is measured against every run with bit sets; a pattern's context
 * fields, inputs and configuration are then those typical of its successful runs (at least
 * half of them). Rejects with the signal's reason when aborted.
 */
export async function minePatterns(runs: readonly MinedRun[], options: MineOptions): Promise<MineSummary> {
  const started = performance.now();
  const n = runs.length;
  const words = (n + 31) >>> 5;

  // Every run's items as ids (one flat table), and the success bits.
  const encoder = new ItemEncoder();
  const names = encoder.names;
  const itemOffsets = new Int32Array(n + 1);
  const allItems: number[] = [];
  const succeeded = new Uint32Array(words);
  let successCount = 0;
  let successCost = 0;
  let successDuration = 0;
  for (let index = 0; index < n; index += 1) {
    const run = runs[index] as MinedRun;
    for (const id of encoder.encode(run)) allItems.push(id);
    itemOffsets[index + 1] = allItems.length;
    if (run.succeeded) {
      succeeded[index >>> 5] = (succeeded[index >>> 5] as number) | (1 << (index & 31));
      successCount += 1;
      successCost += run.cost;
      successDuration += run.duration_ms ?? 0;
    }
  }
  const runItems = Int32Array.from(allItems);
  allItems.length = 0;
  const itemsOf = (index: number) => runItems.subarray(itemOffsets[index], itemOffsets[index + 1]);
  const baseline: Baseline = {
    successRate: average(successCount, n),
    averageCost: average(successCost, successCount),
    averageDurationMs: average(successDuration, successCount),
  };

  // The successful runs' pattern items, as an integer table for the mining thread.
  const encodedAt = performance.now();
  const patternItem = names.map(isPatternItem);
  const offsets = new Int32Array(successCount + 1);
  const flat: number[] = [];
  let row = 0;
  for (let index = 0; index < n; index += 1) {
    if (!(runs[index] as MinedRun).succeeded) continue;
    for (const id of itemsOf(index)) if (patternItem[id]) flat.push(id);
    row += 1;
    offsets[row] = flat.length;
  }
  const mined =
    successCount >= options.minSupport
      ? await mineTableInWorker(
          { items: Int32Array.from(flat), offsets },
          {
            minSupport: options.minSupport,
            mode: 'closed',
            maxLength: MAX_PATTERN_LENGTH,
            topK: MAX_ITEMSETS,
            ...(options.signal ? { signal: options.signal } : {}),
            ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          },
        )
      : { itemsets: [] as [number[], number][] };
  const miningMs = performance.now() - started;

  // Bit sets over all runs only for the items of mined itemsets: those are frequent, so their
  // number is bounded by the data, whereas one set per distinct item (a context field name
  // per run, say) would take gigabytes.
  const itemBits: Array<Uint32Array | undefined> = new Array(names.length);
  for (const [itemIds] of mined.itemsets) {
    for (const id of itemIds) itemBits[id] ??= new Uint32Array(words);
  }
  for (let index = 0; index < n; index += 1) {
    const start = itemOffsets[index] as number;
    const end = itemOffsets[index + 1] as number;
    for (let at = start; at < end; at += 1) {
      const bits = itemBits[runItems[at] as number];
      if (bits) bits[index >>> 5] = (bits[index >>> 5] as number) | (1 << (index & 31));
    }
  }

  // Measure against every run, keep what passes, and the best of each core.
  const best = new Map<string, { scored: Scored; matches: Uint32Array }>();
  const matches = new Uint32Array(words);
  const isAgent = names.map((name) => name.startsWith('agent:'));
  const costs = Float64Array.from(runs, (run) => run.cost);
  const durations = Float64Array.from(runs, (run) => run.duration_ms ?? 0);
  for (const [itemIds, support] of mined.itemsets) {
    options.signal?.throwIfAborted();
    if (!itemIds.some((id) => isAgent[id])) continue;
    matches.set(itemBits[itemIds[0] as number] as Uint32Array);
    for (let k = 1; k < itemIds.length; k += 1) {
      const bits = itemBits[itemIds[k] as number] as Uint32Array;
      for (let w = 0; w < words; w += 1) matches[w] = (matches[w] as number) & (bits[w] as number);
    }
    let matching = 0;
    for (let w = 0; w < words; w += 1) matching += popcount(matches[w] as number);
    if (wilsonLowerBound(support, matching, CONFIDENCE_Z) < options.minConfidence) continue;

    const wins = new Uint32Array(words);
    let cost = 0;
    let duration = 0;
    for (let w = 0; w < words; w += 1) {
      let word = (matches[w] as number) & (succeeded[w] as number);
      wins[w] = word;
      while (word !== 0) {
        const low = word & -word;
        const index = (w << 5) + (31 - Math.clz32(low));
        cost += costs[index] as number;
        duration += durations[index] as number;
        word ^= low;
      }
    }
    const items = itemIds.map((id) => names[id] as string).sort();
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
      (kept.scored.quality > quality.score ||
        (kept.scored.quality === quality.score && kept.scored.support >= support))
    ) {
      continue;
    }
    const confidence = average(support, matching);
    best.set(core, {
      matches: wins,
      scored: {
        key: createHash('sha256').update(core).digest('hex').slice(0, 32),
        items,
        agents: [],
        tools: itemsByKind(items).tool,
        contextFields: [],
        inputs: [],
        configuration: {},
        support,
        matching,
        confidence: round(confidence),
        lift: round(baseline.successRate > 0 ? confidence / baseline.successRate : 0),
        averageDurationMs: Math.round(outcome.averageDurationMs),
        averageCost: round(outcome.averageCost, 1e8),
        quality: quality.score,
        qualityParts: quality.parts,
        exampleRunIds: indexesOf(wins, EXAMPLES).map((index) => (runs[index] as MinedRun).id),
        goalTemplate: '',
      },
    });
  }

  // Best first; described (typical context, order, goals, category) only as far as needed.
  const ranked = [...best.values()].sort(
    (a, b) =>
      b.scored.quality - a.scored.quality ||
      b.scored.support - a.scored.support ||
      a.scored.key.localeCompare(b.scored.key),
  );
  const patterns: MinedPattern[] = [];
  // In chunks: a chunk's goal sample is read at once, and a category filter may need more.
  for (let start = 0; start < ranked.length && patterns.length < options.topK; start += options.topK) {
    const chunk = ranked.slice(start, start + options.topK).map((entry) => ({
      ...entry,
      successes: indexesOf(entry.matches),
    }));
    const goalOf = await goalReader(
      chunk.flatMap((entry) => entry.successes.slice(0, GOAL_SAMPLE)),
      runs,
      options.goalsOf,
    );
    for (const { scored, successes } of chunk) {
      if (patterns.length >= options.topK) break;
      const typical = typicalItems(successes, itemsOf, names, patternItem, scored.support);
      const items = [...scored.items, ...typical].sort();
      const grouped = itemsByKind(items);
      const goals = successes.slice(0, GOAL_SAMPLE).map(goalOf);
      const agents = usualOrder(grouped.agent, successes, runs);
      const { category, votes } = categorise({
        tools: grouped.tool,
        agents: [...agents, ...agents.flatMap((agent) => options.roles?.get(agent) ?? [])],
        contextFields: grouped.ctx,
        goals,
      });
      if (options.categories && (category === null || !options.categories.includes(category))) continue;
      const pattern = {
        ...scored,
        items,
        agents,
        contextFields: grouped.ctx,
        inputs: grouped.in,
        configuration: Object.fromEntries(
          grouped.cfg.map((setting) => setting.split('=', 2) as [string, string]),
        ),
        goalTemplate: goalTemplate(goals),
      };
      patterns.push({
        ...pattern,
        name: playbookName(agents, pattern.tools),
        description: playbookDescription({ ...pattern, baseSuccessRate: baseline.successRate }),
        category,
        categoryVotes: votes,
      });
    }
  }
  return {
    runs: n,
    successfulRuns: successCount,
    baseline: {
      successRate: round(baseline.successRate),
      averageCost: round(baseline.averageCost, 1e8),
      averageDurationMs: Math.round(baseline.averageDurationMs),
    },
    itemsets: mined.itemsets.length,
    patterns,
    tookMs: {
      transactions: Math.round(encodedAt - started),
      mining: Math.round(miningMs - (encodedAt - started)),
      scoring: Math.round(performance.now() - started - miningMs),
    },
  };
}

/** The goal of a run by index: loaded with the run, or read for the sample through `goalsOf`. */
async function goalReader(
  indexes: readonly number[],
  runs: readonly MinedRun[],
  goalsOf: MineOptions['goalsOf'],
): Promise<(index: number) => string> {
  const missing = indexes.filter((index) => (runs[index] as MinedRun).goal === undefined);
  const read =
    missing.length > 0 && goalsOf
      ? await goalsOf([...new Set(missing.map((index) => (runs[index] as MinedRun).id))])
      : new Map<string, string>();
  return (index) => {
    const run = runs[index] as MinedRun;
    return run.goal ?? read.get(run.id) ?? '';
  };
}

/** Context, input and configuration items that at least half of the pattern's successes had. */
function typicalItems(
  successes: readonly number[],
  itemsOf: (index: number) => Int32Array,
  names: readonly string[],
  patternItem: readonly boolean[],
  support: number,
): string[] {
  const counts = new Int32Array(names.length);
  const seen: number[] = [];
  for (const index of successes) {
    for (const id of itemsOf(index)) {
      if (patternItem[id]) continue;
      if (counts[id] === 0) seen.push(id);
      counts[id] = (counts[id] as number) + 1;
    }
  }
  return seen
    .filter((id) => (counts[id] as number) >= support * TYPICAL_SHARE)
    .map((id) => names[id] as string);
}

const round = (value: number, scale = 10_000) => Math.round(value * scale) / scale;

/**
 * The pattern's agents in the order its successful runs most often used them (each run's
 * first use of each agent); ties by name.
 */
function usualOrder(
  agents: readonly string[],
  successes: readonly number[],
  runs: readonly MinedRun[],
): string[] {
  const wanted = new Set(agents);
  const orders = new Map<string, number>();
  for (const index of successes.slice(0, GOAL_SAMPLE * 4)) {
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
