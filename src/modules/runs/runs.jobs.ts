import { Type } from 'typebox';
import { defineJob } from '../../jobs/job.ts';
import { createPeriodicSweep } from '../../jobs/periodic-sweep.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Component } from '../../lifecycle.ts';
import type { Logger } from '../../logger.ts';
import type { RunEngine } from './run-engine.ts';
import type { RunsService } from './runs.service.ts';

/** The queue's name for executing one run. */
export const RUN_EXECUTE = 'run.execute';

/**
 * Executes one run. The engine claims the run from its row, so a duplicate delivery is a
 * no-op and a re-delivery after a lost worker continues the run. The job's own timeout is
 * far beyond any run's (the run's timeout ends it first); retries cover a database outage.
 */
export const executeRunJob = defineJob({
  name: RUN_EXECUTE,
  payload: Type.Object({ run_id: Type.String({ format: 'uuid' }) }),
  attempts: 10,
  backoffMs: 2_000,
  timeoutMs: 25 * 60 * 60_000,
  handle: (deps: { engine: Pick<RunEngine, 'execute'> }, payload, signal) =>
    deps.engine.execute(payload.run_id, signal),
});

export interface RunRecoveryOptions {
  runs: Pick<RunsService, 'recoverStranded'>;
  queue: Pick<JobQueue, 'onJobsLost'>;
  log: Logger;
  /** How often a consuming process sweeps for stranded runs (5 s). */
  intervalMs?: number;
}

/**
 * The sweep of a consuming process: at start, every `intervalMs`, and when the queue says
 * it forgot its jobs (Redis restarted without data), it hands over again every run some
 * process should pick up (see `RunsService.recoverStranded`). The rows are the truth, so
 * this is what makes a lost enqueue or a dead worker cost a delay, never a run.
 */
export function createRunRecovery(options: RunRecoveryOptions): Component {
  return createPeriodicSweep({
    name: 'Run recovery',
    log: options.log,
    intervalMs: options.intervalMs ?? 5_000,
    failure: 'the stranded-run sweep failed; it runs again shortly',
    atStart: true,
    alsoOn: (sweep) => options.queue.onJobsLost(sweep),
    // Urgent (start, jobs lost): every Queued run, however recent; periodic: the service's grace.
    async work(reason) {
      const count = await options.runs.recoverStranded(reason === 'urgent' ? 0 : undefined);
      if (count > 0) options.log.info({ runs: count }, 'handed stranded runs to the queue again');
      return count;
    },
  });
}
