/**
 * Deterministic context assembly (docs/policies.md): a policy version and the request's inputs
 * in, the rendered messages and the accounting out. Pure: no I/O, no clock, no randomness, so
 * the same inputs always give the same output (and the same hash).
 *
 *   1. each section's condition is evaluated (the one condition language, lib/conditions.ts)
 *   2. included sections are ordered static first (no variables, no condition), then dynamic,
 *      each group in the policy's order, so a provider's prompt cache keeps hitting the prefix
 *   3. `{{name}}` (or `{{variables.a.b}}`) is replaced by the variable's text; nothing else runs
 *   4. over the token budget, droppable sections go from the last one back until it fits
 */
import { createHash } from 'node:crypto';
import type { MESSAGE_ROLES, PolicyContent, PolicySection } from '../../db/schema/policies.ts';
import { type Condition, createNormaliser, evaluateCondition, parseCondition } from '../../lib/conditions.ts';
import { fillPlaceholders, placeholdersOf } from '../../lib/placeholders.ts';
import { estimateTokens } from '../../lib/tokens.ts';

export type { PolicyContent, PolicySection } from '../../db/schema/policies.ts';

type Role = (typeof MESSAGE_ROLES)[number];

export interface AssembleInput {
  agent_id?: string;
  conversation_id?: string;
  user_id?: string;
  variables?: Record<string, unknown>;
  context?: Record<string, unknown>;
}

export interface SectionReport {
  name: string;
  kind: PolicySection['kind'];
  role: Role;
  static: boolean;
  included: boolean;
  reason: 'always' | 'condition_true' | 'condition_false' | 'over_budget';
  tokens: number;
}

export interface Assembled {
  messages: { role: Role; content: string }[];
  sections: SectionReport[];
  tokens: { total: number; budget: number | null; truncated: string[] };
  unresolved_variables: string[];
}

/** Thrown when required variables have no value: `names` lists them. */
export class MissingVariableError extends Error {
  readonly names: string[];
  constructor(names: string[]) {
    super(`required variables missing: ${names.join(', ')}`);
    this.name = 'MissingVariableError';
    this.names = names;
  }
}

/** `{{variables.a}}` and `{{a}}` name the same variable. */
const variableName = (raw: string): string => raw.replace(/^variables\./, '');

/** The variable names a text refers to, in order of first use. */
export const placeholders = (text: string): string[] => [...new Set(placeholdersOf(text).map(variableName))];

/** A section without variables and without a condition renders the same for everyone. */
export const isStatic = (section: PolicySection): boolean =>
  section.when === undefined && placeholders(section.text).length === 0;

/** Every problem the schema cannot see (repeated names, conditions that do not parse), by field. */
export function checkContent(content: PolicyContent): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  const names = new Set<string>();
  content.sections.forEach((section, index) => {
    if (names.has(section.name)) {
      problems.push({ field: `body.sections.${index}.name`, message: `repeats section ${section.name}` });
    }
    names.add(section.name);
    if (section.when !== undefined) {
      try {
        parseCondition(section.when);
      } catch (error) {
        problems.push({ field: `body.sections.${index}.when`, message: (error as Error).message });
      }
    }
  });
  return problems;
}

/** The value at a dotted path of own properties (never `constructor` and the like inherited). */
function lookup(values: Record<string, unknown>, path: string): unknown {
  let value: unknown = values;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

const asText = (value: unknown): string =>
  typeof value === 'string' ? value : value === undefined || value === null ? '' : canonicalJson(value);

/** JSON with sorted keys: the same value, the same text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * Renders a policy's content for the inputs. Throws `MissingVariableError` when a variable
 * the policy declares required has no value (and no default).
 */
export function assemblePolicy(content: PolicyContent, input: AssembleInput): Assembled {
  const declared = content.variables ?? {};
  const values: Record<string, unknown> = {};
  for (const [name, variable] of Object.entries(declared)) {
    if (variable.default !== undefined) values[name] = variable.default;
  }
  Object.assign(values, input.variables ?? {});
  const missing = Object.entries(declared)
    .filter(([name, variable]) => variable.required === true && asText(lookup(values, name)) === '')
    .map(([name]) => name)
    .sort();
  if (missing.length > 0) throw new MissingVariableError(missing);

  const facts: Record<string, unknown> = {
    ...(input.context ?? {}),
    context: input.context ?? {},
    variables: values,
    agent_id: input.agent_id,
    conversation_id: input.conversation_id,
    user_id: input.user_id,
  };

  const unresolved = new Set<string>();
  const lower = createNormaliser();
  const rendered = content.sections.map((section) => {
    const condition: Condition | undefined =
      section.when === undefined ? undefined : parseCondition(section.when);
    const holds = condition === undefined || evaluateCondition(condition, facts, lower);
    const text = fillPlaceholders(section.text, (raw) => {
      const name = variableName(raw);
      const value = lookup(values, name);
      if (value === undefined || value === null) {
        if (holds) unresolved.add(name);
        return '';
      }
      return asText(value);
    });
    const reason: SectionReport['reason'] =
      condition === undefined ? 'always' : holds ? 'condition_true' : 'condition_false';
    return {
      section,
      static: isStatic(section),
      text,
      tokens: estimateTokens(text),
      included: holds,
      reason: reason as SectionReport['reason'],
    };
  });

  // Static first, then dynamic; each group keeps the policy's order.
  const ordered = [...rendered.filter((r) => r.static), ...rendered.filter((r) => !r.static)];

  const budget = content.token_budget ?? null;
  const truncated: string[] = [];
  let total = ordered.filter((r) => r.included).reduce((sum, r) => sum + r.tokens, 0);
  if (budget !== null && total > budget) {
    for (const entry of [...ordered].reverse()) {
      if (total <= budget) break;
      const required =
        entry.section.required ?? (entry.section.kind === 'instructions' || entry.section.kind === 'rules');
      if (!entry.included || required) continue;
      entry.included = false;
      entry.reason = 'over_budget';
      total -= entry.tokens;
      truncated.push(entry.section.name);
    }
  }

  const roleOf = (section: PolicySection): Role => section.role ?? 'system';
  const system = ordered.filter((r) => r.included && roleOf(r.section) === 'system');
  const messages: Assembled['messages'] = [];
  if (system.length > 0) messages.push({ role: 'system', content: system.map((r) => r.text).join('\n\n') });
  for (const r of ordered) {
    if (r.included && roleOf(r.section) !== 'system')
      messages.push({ role: roleOf(r.section), content: r.text });
  }

  return {
    messages,
    sections: ordered.map((r) => ({
      name: r.section.name,
      kind: r.section.kind,
      role: roleOf(r.section),
      static: r.static,
      included: r.included,
      reason: r.reason,
      tokens: r.tokens,
    })),
    tokens: { total, budget, truncated },
    unresolved_variables: [...unresolved].sort(),
  };
}
