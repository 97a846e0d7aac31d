/**
 * The one retry backoff of the platform (jobs on either queue driver, a run step's model call):
 * exponential from `baseMs`, doubled per attempt, capped at `capMs`, minus up to half at random
 * so that work failing together does not retry together. With no cap it is BullMQ's
 * `exponential` backoff with `jitter: 0.5`, which the in-process queue must match.
 *
 * `attempt` is 1 for the first retry (after the first failure).
 */
export function retryDelayMs(
  attempt: number,
  baseMs: number,
  options: { capMs?: number; random?: () => number } = {},
): number {
  const { capMs = Number.POSITIVE_INFINITY, random = Math.random } = options;
  const ceiling = Math.min(capMs, Math.round(2 ** Math.max(0, attempt - 1) * baseMs));
  return Math.floor(ceiling * 0.5 + random() * ceiling * 0.5);
}
