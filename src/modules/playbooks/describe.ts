/**
 * Names, descriptions and goal templates of playbooks, generated from the pattern alone
 * (no model call: the same pattern always reads the same). Pure.
 */

/** Longest generated name; the column allows 255. */
const MAX_NAME = 120;

/** "code reviewer" -> "Code Reviewer". */
export const titleCase = (name: string): string =>
  name.replace(/(^|[\s_-])([a-z])/g, (_, sep, c) => sep + c.toUpperCase());

/** "Planner → Coder → Reviewer with github, jest". */
export function playbookName(agents: readonly string[], tools: readonly string[]): string {
  const team = agents.map(titleCase).join(' → ') || 'Any agent';
  const name = tools.length > 0 ? `${team} with ${tools.join(', ')}` : team;
  return name.length > MAX_NAME ? `${name.slice(0, MAX_NAME - 1).trimEnd()}…` : name;
}

const percent = (value: number) => `${Math.round(value * 1000) / 10} %`;

export interface DescriptionFacts {
  agents: readonly string[];
  tools: readonly string[];
  contextFields: readonly string[];
  inputs: readonly string[];
  configuration: Record<string, string>;
  support: number;
  matching: number;
  baseSuccessRate: number;
}

/** A plain statement of what the pattern is and the evidence for it. */
export function playbookDescription(facts: DescriptionFacts): string {
  const team = facts.agents.length > 0 ? facts.agents.map(titleCase).join(', then ') : 'these agents';
  const parts = [
    `${team}${facts.tools.length > 0 ? `, using ${facts.tools.join(', ')}` : ''}.`,
    `${facts.support} of ${facts.matching} runs with this pattern succeeded (${percent(
      facts.support / Math.max(1, facts.matching),
    )}), against ${percent(facts.baseSuccessRate)} for all runs of the workspace in the window.`,
  ];
  if (facts.contextFields.length > 0) parts.push(`Typical context: ${facts.contextFields.join(', ')}.`);
  if (facts.inputs.length > 0) parts.push(`Inputs: ${facts.inputs.join(', ')}.`);
  const configuration = Object.entries(facts.configuration).map(([key, value]) => `${key} ${value}`);
  if (configuration.length > 0) parts.push(`Configuration: ${configuration.join(', ')}.`);
  return parts.join(' ');
}

/**
 * A goal template from the goals of the pattern's runs: the words they share at the start and
 * the end are kept, the part that varied becomes `{{subject}}`. One goal (or identical goals)
 * is kept as it is; goals that share nothing become `{{goal}}`.
 */
export function goalTemplate(goals: readonly string[]): string {
  const distinct = [...new Set(goals.map((goal) => goal.trim()).filter((goal) => goal !== ''))];
  if (distinct.length === 0) return '{{goal}}';
  if (distinct.length === 1) return distinct[0] as string;
  const split = distinct.map((goal) => goal.split(/\s+/));
  const shortest = Math.min(...split.map((words) => words.length));
  let prefix = 0;
  while (prefix < shortest && split.every((words) => words[prefix] === split[0]?.[prefix])) prefix += 1;
  let suffix = 0;
  while (
    suffix < shortest - prefix &&
    split.every((words) => words[words.length - 1 - suffix] === split[0]?.[split[0].length - 1 - suffix])
  ) {
    suffix += 1;
  }
  if (prefix === 0 && suffix === 0) return '{{goal}}';
  const first = split[0] as string[];
  return [...first.slice(0, prefix), '{{subject}}', ...first.slice(first.length - suffix)].join(' ');
}
