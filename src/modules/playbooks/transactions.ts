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

/** What mining reads of a finished run. */
export interface MinedRun {
  id: string;
  succeeded: boolean;
  agents_used: string[];
  tools_used: string[];
  context_fields: string[];
  /** Names of the goal inputs the run filled (values are never read). */
  inputs: string[];
  mode: string;
  error_handling: string;
  timeout_seconds: number;
  goal: string;
  duration_ms: number | null;
  cost: number;
}

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

/** The run's items, sorted and distinct. */
export function transactionOf(run: MinedRun): string[] {
  const items = new Set<string>();
  const agents = run.agents_used.map(normaliseName).filter((name) => name !== '');
  for (const agent of agents) items.add(`agent:${agent}`);
  for (let index = 1; index < agents.length; index += 1) {
    if (agents[index - 1] !== agents[index]) items.add(`seq:${agents[index - 1]}>${agents[index]}`);
  }
  for (const tool of run.tools_used) if (tool.trim() !== '') items.add(`tool:${normaliseName(tool)}`);
  for (const field of run.context_fields) if (field.trim() !== '') items.add(`ctx:${normaliseName(field)}`);
  for (const input of run.inputs) if (input.trim() !== '') items.add(`in:${normaliseName(input)}`);
  items.add(`cfg:mode=${run.mode}`);
  items.add(`cfg:errors=${run.error_handling}`);
  items.add(`cfg:timeout=${timeoutBand(run.timeout_seconds)}`);
  return [...items].sort();
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
