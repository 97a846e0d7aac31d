import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * When the work running now began: the arrival time of the HTTP request it serves.
 * A shared resource that serves the oldest work first (the PGlite gate) reads it, so a
 * request that already holds half its answer is not sent to the back of the line for
 * each of its next queries, which is what stretched PGlite's p99 to seconds.
 */
const storage = new AsyncLocalStorage<number>();

/** Runs `fn` (and everything it starts) as work that began at `startedAt` (ms, performance.now()). */
export function runAsWorkStartedAt<T>(startedAt: number, fn: () => T): T {
  return storage.run(startedAt, fn);
}

/** The start of the current work, or undefined outside of any (boot, CLI, tests). */
export function currentWorkStart(): number | undefined {
  return storage.getStore();
}
