/**
 * Finished runs as mining transactions: the item vocabulary of playbooks (docs/playbooks.md).
 * Pure: no database, no HTTP.
 *
 * | item | meaning |
 * |---|---|
 * | `agent:<name>` | the run used the agent (names lower-cased, spaces collapsed) |
 * | `tool:<name>` | a step called the tool |
 * | `seq:<a>><b>` | agent b ran right after agent a (local order) |
 * | `ctx:<field>` | the run's context had the field (its presence, never its value) |
 * | `in:<name>` | the goal's `{{name}}` input was filled |
 * | `cfg:mode=<m>` | execution mode: sequential, parallel |
 * | `cfg:errors=<e>` | error handling: stop, continue, retry |
 * | `cfg:timeout=<t>` | run timeout, discretised: short (< 5 min), standard (5 to 30), long (> 30) |
 */
import type { FinishedRun } from './playbooks.repository.ts';

/** What mining reads of a finished run (as the repository loads it), and maybe its goal. */
export type MinedRun = FinishedRun & {
  /** The run's goal; absent when mining reads goals only for the patterns it keeps. */
  goal?: string;
};

/** The kinds of item, the part of an item before its first colon. */
export const ITEM_KINDS = ['agent', 'tool', 'seq', 'ctx', 'in', 'cfg'] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

/** Longest name kept in an item; longer ones are cut (item strings stay bounded). */
const MAX_NAME = 100;

/** A name as items carry it: trimmed, lower-cased, inner spaces collapsed, bounded. */
export const normaliseName = (name: string): string =>
  name.trim().toLowerCase().replace(/\s+/g, ' ').slice(0, MAX_NAME);

export function timeoutBand(seconds: number): 'short' | 'standard' | 'long' {
  if (seconds < 300) return 'short';
  return seconds <= 1800 ? 'standard' : 'long';
}

/**
 * Encodes runs' items as small integers, building the dictionary as it goes: what mining
 * feeds FP-Growth and the bit sets. Names are normalised once per distinct spelling, so a
 * hundred thousand runs cost a map look-up per name, not a string built, normalised and sorted.
 */
export class ItemEncoder {
  /** Item of each id. */
  readonly names: string[] = [];
  private readonly ids = new Map<string, number>();
  /** Per kind, a raw name (as the run has it) to its item id. */
  private readonly byRawName = {
    agent: new Map<string, number>(),
    tool: new Map(),
    ctx: new Map(),
    in: new Map(),
  } as {
    [kind in 'agent' | 'tool' | 'ctx' | 'in']: Map<string, number>;
  };
  private readonly pairs = new Map<number, Map<number, number>>();
  /** Configuration item ids by raw value: no string is built per run for them. */
  private readonly modes = new Map<string, number>();
  private readonly errorHandlings = new Map<string, number>();
  private readonly timeouts = new Map<number, number>();
  /** Which run last took each id (dedupe within a run without a set). */
  private stamps = new Int32Array(64);
  private runStamp = 0;

  /** The id of an item, added to the dictionary when new. */
  idOf(item: string): number {
    let id = this.ids.get(item);
    if (id === undefined) {
      id = this.names.length;
      this.ids.set(item, id);
      this.names.push(item);
      if (id >= this.stamps.length) {
        const grown = new Int32Array(this.stamps.length * 2);
        grown.set(this.stamps);
        this.stamps = grown;
      }
    }
    return id;
  }

  private named(kind: 'agent' | 'tool' | 'ctx' | 'in', raw: string): number | undefined {
    const cache = this.byRawName[kind];
    let id = cache.get(raw);
    if (id === undefined) {
      const name = normaliseName(raw);
      if (name === '') return undefined;
      id = this.idOf(`${kind}:${name}`);
      cache.set(raw, id);
    }
    return id;
  }

  private pair(a: number, b: number): number {
    let next = this.pairs.get(a);
    if (!next) {
      next = new Map();
      this.pairs.set(a, next);
    }
    let id = next.get(b);
    if (id === undefined) {
      const first = (this.names[a] as string).slice('agent:'.length);
      const second = (this.names[b] as string).slice('agent:'.length);
      id = this.idOf(`seq:${first}>${second}`);
      next.set(b, id);
    }
    return id;
  }

  private cached<K>(cache: Map<K, number>, key: K, item: () => string): number {
    let id = cache.get(key);
    if (id === undefined) {
      id = this.idOf(item());
      cache.set(key, id);
    }
    return id;
  }

  /** The run's distinct item ids, in no particular order. */
  encode(run: MinedRun): number[] {
    this.runStamp += 1;
    const out: number[] = [];
    const add = (id: number | undefined) => {
      if (id === undefined || this.stamps[id] === this.runStamp) return;
      this.stamps[id] = this.runStamp;
      out.push(id);
    };
    let previous: number | undefined;
    for (const raw of run.agents_used) {
      const agent = this.named('agent', raw);
      if (agent === undefined) continue;
      add(agent);
      if (previous !== undefined && previous !== agent) add(this.pair(previous, agent));
      previous = agent;
    }
    for (const raw of run.tools_used) add(this.named('tool', raw));
    for (const raw of run.context_fields) add(this.named('ctx', raw));
    for (const raw of run.inputs) add(this.named('in', raw));
    add(this.cached(this.modes, run.mode, () => `cfg:mode=${run.mode}`));
    add(this.cached(this.errorHandlings, run.error_handling, () => `cfg:errors=${run.error_handling}`));
    add(
      this.cached(
        this.timeouts,
        run.timeout_seconds,
        () => `cfg:timeout=${timeoutBand(run.timeout_seconds)}`,
      ),
    );
    return out;
  }
}

/** The run's items, sorted and distinct (the vocabulary above, one run at a time). */
export function transactionOf(run: MinedRun): string[] {
  const encoder = new ItemEncoder();
  return encoder
    .encode(run)
    .map((id) => encoder.names[id] as string)
    .sort();
}

/** The kind of an item and the rest after its colon. */
export function parseItem(item: string): { kind: ItemKind; value: string } {
  const colon = item.indexOf(':');
  return { kind: item.slice(0, colon) as ItemKind, value: item.slice(colon + 1) };
}

/** A pattern's items grouped by kind. */
export function itemsByKind(items: readonly string[]): Record<ItemKind, string[]> {
  const grouped: Record<ItemKind, string[]> = { agent: [], tool: [], seq: [], ctx: [], in: [], cfg: [] };
  for (const item of items) {
    const { kind, value } = parseItem(item);
    grouped[kind]?.push(value);
  }
  return grouped;
}

/**
 * The pattern's core: its agents and tools. Patterns with the same core are near-duplicates
 * (the same team with more or fewer context details) and are merged, keeping the best.
 */
export const coreOf = (items: readonly string[]): string =>
  items.filter((item) => item.startsWith('agent:') || item.startsWith('tool:')).join('\n');
