import type { RunStatus } from '../../db/schema/runs.ts';

/**
 * Which status may follow which (docs/runs.md draws it). `Running -> Queued` is a run whose
 * worker vanished being handed to the next one; a run never leaves a final status.
 *
 *   Queued --claim--> Running --steps done--> Completed
 *     |  \              |  \--step failed / timeout / interrupted--> Failed
 *     |   \--pause-->   |   \--pause (between steps)--> Paused --resume--> Queued
 *     \--cancel-->  Cancelled <--cancel-- Running, Paused
 */
const TRANSITIONS: Record<RunStatus, readonly RunStatus[]> = {
  Queued: ['Running', 'Paused', 'Cancelled', 'Failed'],
  Running: ['Completed', 'Failed', 'Paused', 'Cancelled', 'Queued'],
  Paused: ['Queued', 'Cancelled'],
  Completed: [],
  Failed: [],
  Cancelled: [],
};

/** True when a run in `from` may move to `to`. */
export const canTransition = (from: RunStatus, to: RunStatus): boolean => TRANSITIONS[from].includes(to);

/** Statuses a run never leaves. */
export const isFinal = (status: RunStatus): boolean => TRANSITIONS[status].length === 0;

/** `{{name}}` in a workflow's goal, filled from the run's `inputs`. */
const GOAL_PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

/** The placeholder names a goal asks for, each once, in order of first use. */
export const goalPlaceholders = (goal: string): string[] => [
  ...new Set([...goal.matchAll(GOAL_PLACEHOLDER)].map((match) => match[1] as string)),
];

/**
 * Fills a goal's placeholders from `inputs`. Returns the missing names instead of a text
 * when any placeholder has no input, so the caller can name each one in one 400.
 */
export function renderGoal(
  goal: string,
  inputs: Record<string, string>,
): { text: string; missing: [] } | { text?: undefined; missing: string[] } {
  const missing = goalPlaceholders(goal).filter((name) => !Object.hasOwn(inputs, name));
  if (missing.length > 0) return { missing };
  return { text: goal.replace(GOAL_PLACEHOLDER, (_, name: string) => inputs[name] as string), missing: [] };
}
