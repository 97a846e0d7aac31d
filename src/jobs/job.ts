import type { Static, TSchema } from 'typebox';
import Value from 'typebox/value';

/** Retries a definition may ask for at most; BullMQ jobs are enqueued with this ceiling. */
export const MAX_JOB_ATTEMPTS = 25;

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_BACKOFF_MS = 1000;
const DEFAULT_TIMEOUT_MS = 15 * 60_000;

/**
 * One kind of job, declared by its module in `<module>.jobs.ts`. The queue only wakes a
 * worker: the job's truth is a database row the handler reads, so the payload carries ids,
 * and a handler must be idempotent (delivery is at least once: a worker that dies mid-job,
 * a retry, a job handed back on shutdown all deliver it again).
 */
export interface JobDefinition<Deps, Payload extends TSchema = TSchema> {
  /** Unique across the product, `<module>.<verb>` (`run.execute`). */
  name: string;
  /** Checked when the job is consumed: a payload that does not fit fails without retry. */
  payload: Payload;
  /** Deliveries before the job fails for good (3; at most `MAX_JOB_ATTEMPTS`). */
  attempts?: number;
  /** First retry delay; each next one doubles, less up to half at random (1 s). */
  backoffMs?: number;
  /** Per attempt: the handler's signal aborts with a `JobTimeoutError` after it (15 min). */
  timeoutMs?: number;
  /**
   * Does the work. `signal` aborts on timeout or when the process stops (after the grace
   * period); a handler passes it to what it awaits and returns or throws soon after.
   */
  handle(deps: Deps, payload: Static<Payload>, signal: AbortSignal): Promise<void>;
}

/** Declares a job; the payload type follows from its schema. */
export function defineJob<Deps, Payload extends TSchema>(
  definition: JobDefinition<Deps, Payload>,
): JobDefinition<Deps, Payload> {
  const attempts = definition.attempts ?? DEFAULT_ATTEMPTS;
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > MAX_JOB_ATTEMPTS) {
    throw new Error(`job ${definition.name}: attempts must be an integer from 1 to ${MAX_JOB_ATTEMPTS}`);
  }
  return definition;
}

/** A definition bound to its dependencies, with its defaults filled in: what a queue consumes. */
export interface RegisteredJob {
  name: string;
  attempts: number;
  backoffMs: number;
  timeoutMs: number;
  /** Why `payload` does not fit the schema (`/run_id: must be string`), or nothing when it does. */
  check(payload: unknown): string[];
  run(payload: unknown, signal: AbortSignal): Promise<void>;
}

/**
 * Binds a definition to what its handler uses; the composition root does this for every
 * module's jobs, so a jobs file never imports services it was not handed.
 */
export function bindJob<Deps, Payload extends TSchema>(
  definition: JobDefinition<Deps, Payload>,
  deps: Deps,
): RegisteredJob {
  return {
    name: definition.name,
    attempts: definition.attempts ?? DEFAULT_ATTEMPTS,
    backoffMs: definition.backoffMs ?? DEFAULT_BACKOFF_MS,
    timeoutMs: definition.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    check: (payload) =>
      Value.Check(definition.payload, payload)
        ? []
        : [...Value.Errors(definition.payload, payload)].map(
            (error) => `${error.instancePath || '/'}: ${error.message}`,
          ),
    run: (payload, signal) => definition.handle(deps, payload as Static<Payload>, signal),
  };
}

/** The reason a job's signal aborts when its attempt ran out of time. */
export class JobTimeoutError extends Error {
  constructor(name: string, timeoutMs: number) {
    super(`job ${name} did not finish within ${timeoutMs} ms`);
    this.name = 'JobTimeoutError';
  }
}

/** The reason a job's signal aborts when its process stops and the grace period is over. */
export class JobStoppedError extends Error {
  constructor() {
    super('the process is stopping; the job is handed back');
    this.name = 'JobStoppedError';
  }
}

/** The retry backoff of every job (one formula for the platform: lib/backoff.ts). */
export { retryDelayMs } from '../lib/backoff.ts';
