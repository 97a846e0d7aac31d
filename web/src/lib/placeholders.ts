/** `{{name}}` in a workflow's goal, as the API reads it (runs/run-state.ts). */
const GOAL_PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

/** The placeholder names a goal asks for, each once, in order of first use. */
export const goalPlaceholders = (goal: string | null | undefined): string[] => [
  ...new Set([...(goal ?? '').matchAll(GOAL_PLACEHOLDER)].map((match) => match[1] as string)),
];
