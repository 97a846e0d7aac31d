import type { RunStatus } from '../../db/schema/runs.ts';
import { fillPlaceholders, placeholdersOf } from '../../lib/placeholders.ts';

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

/**
 * Fills a goal's `{{name}}` placeholders (lib/placeholders.ts) from `inputs`. Returns the missing names instead of a text
 * when any placeholder has no input, so the caller can name each one in one 400.
 */
export function renderGoal(
  goal: string,
  inputs: Record<string, string>,
): { text: string; missing: [] } | { text?: undefined; missing: string[] } {
  const missing = placeholdersOf(goal).filter((name) => !Object.hasOwn(inputs, name));
  if (missing.length > 0) return { missing };
  return { text: fillPlaceholders(goal, (name) => inputs[name] as string), missing: [] };
}
