/**
 * A playbook's category badge without a model: weighted keyword votes over what the pattern's
 * runs did (docs/playbooks.md). Pure and deterministic; the votes are kept so the badge can
 * say why.
 */

import {
  PLAYBOOK_CATEGORIES as CATEGORIES,
  type PlaybookCategory as Category,
} from '../../db/schema/playbooks.ts';

export { CATEGORIES, type Category };

/** Words (whole, lower-case, after splitting names) that speak for each category. */
const KEYWORDS: Record<Category, readonly string[]> = {
  'Security & Compliance': [
    'security',
    'secure',
    'vulnerability',
    'vulnerabilities',
    'cve',
    'audit',
    'compliance',
    'gdpr',
    'soc2',
    'hipaa',
    'pci',
    'threat',
    'pentest',
    'secret',
    'secrets',
    'scan',
    'scanner',
    'sast',
    'dast',
    'iam',
    'permission',
    'permissions',
    'policy',
    'risk',
    'encryption',
    'auth',
    'oauth',
    'malware',
  ],
  'Code Review & Quality': [
    'code',
    'review',
    'reviewer',
    'lint',
    'linter',
    'refactor',
    'pull',
    'pr',
    'diff',
    'commit',
    'github',
    'gitlab',
    'quality',
    'style',
    'smell',
    'complexity',
    'sonar',
    'static',
    'repo',
    'repository',
    'merge',
  ],
  'Data Analysis': [
    'data',
    'analysis',
    'analyst',
    'analytics',
    'sql',
    'query',
    'dataset',
    'csv',
    'report',
    'metrics',
    'dashboard',
    'statistics',
    'forecast',
    'warehouse',
    'bigquery',
    'snowflake',
    'pandas',
    'chart',
    'etl',
    'insight',
    'insights',
    'trend',
    'kpi',
  ],
  'Infrastructure & DevOps': [
    'deploy',
    'deployment',
    'infrastructure',
    'infra',
    'devops',
    'kubernetes',
    'k8s',
    'docker',
    'terraform',
    'ci',
    'cd',
    'pipeline',
    'aws',
    'gcp',
    'azure',
    'cloud',
    'server',
    'incident',
    'monitoring',
    'alert',
    'helm',
    'ansible',
    'cluster',
    'release',
    'rollback',
    'ops',
    'sre',
  ],
  Documentation: [
    'doc',
    'docs',
    'documentation',
    'readme',
    'write',
    'writer',
    'wiki',
    'guide',
    'changelog',
    'markdown',
    'confluence',
    'notion',
    'summary',
    'summarize',
    'summarise',
    'explain',
    'tutorial',
    'api',
    'spec',
  ],
  'Testing & QA': [
    'test',
    'tests',
    'testing',
    'tester',
    'qa',
    'unit',
    'integration',
    'e2e',
    'regression',
    'coverage',
    'playwright',
    'cypress',
    'selenium',
    'jest',
    'vitest',
    'pytest',
    'bug',
    'bugs',
    'flaky',
    'assert',
  ],
};

/** Where a word was seen, and how much a match there counts. */
export const VOTE_WEIGHTS = { tool: 3, agent: 2, context: 1, goal: 1 } as const;
export type VoteOrigin = keyof typeof VOTE_WEIGHTS;

/** What the votes are cast over. */
export interface CategoryEvidence {
  tools: readonly string[];
  /** Agent names and roles. */
  agents: readonly string[];
  contextFields: readonly string[];
  goals: readonly string[];
}

export interface CategoryVote {
  category: Category;
  score: number;
  /** The words that voted, with where they were seen. */
  because: string[];
}

const lookup = new Map<string, Category[]>();
for (const category of CATEGORIES) {
  for (const word of KEYWORDS[category]) lookup.set(word, [...(lookup.get(word) ?? []), category]);
}

/** Lower-case words of a name or text: camelCase, snake_case, kebab-case and spaces split. */
export function wordsOf(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 1);
}

/**
 * Votes per category, highest first (ties by the spec's order); the winner is the first,
 * or null when no word voted. Each distinct word counts once per origin.
 */
export function categorise(evidence: CategoryEvidence): { category: Category | null; votes: CategoryVote[] } {
  const tallies = new Map<Category, { score: number; because: Set<string> }>();
  const cast = (origin: VoteOrigin, texts: readonly string[]) => {
    const seen = new Set(texts.flatMap(wordsOf));
    for (const word of seen) {
      for (const category of lookup.get(word) ?? []) {
        const tally = tallies.get(category) ?? { score: 0, because: new Set<string>() };
        tally.score += VOTE_WEIGHTS[origin];
        tally.because.add(`${origin}:${word}`);
        tallies.set(category, tally);
      }
    }
  };
  cast('tool', evidence.tools);
  cast('agent', evidence.agents);
  cast('context', evidence.contextFields);
  cast('goal', evidence.goals);
  const votes = CATEGORIES.flatMap((category) => {
    const tally = tallies.get(category);
    return tally ? [{ category, score: tally.score, because: [...tally.because].sort() }] : [];
  }).sort((a, b) => b.score - a.score || CATEGORIES.indexOf(a.category) - CATEGORIES.indexOf(b.category));
  return { category: votes[0]?.category ?? null, votes };
}
