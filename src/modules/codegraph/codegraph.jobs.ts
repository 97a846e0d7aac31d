import { Type } from 'typebox';
import { defineJob, JobTimeoutError } from '../../jobs/job.ts';
import { createPeriodicSweep } from '../../jobs/periodic-sweep.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Component } from '../../lifecycle.ts';
import type { Logger } from '../../logger.ts';
import type { CodegraphService, IndexJobPayload } from './codegraph.service.ts';

/** The queue's name for indexing one generation of a code project in the background. */
export const CODEGRAPH_INDEX = 'codegraph.index';

/** An index of this size takes a few minutes at most; past this it is failed, not retried forever. */
const INDEX_TIMEOUT_MS = 30 * 60_000;

/** One job per requested generation while it waits or runs. */
export const indexJobId = (payload: Pick<IndexJobPayload, 'project_id' | 'generation'>): string =>
  `codegraph:${payload.project_id}:${payload.generation}`;

/**
 * Indexes one generation of a project. The project row says what to read and whether the
 * request is still the latest, so a duplicate or late delivery does nothing. A timeout fails
 * the index; a stopping process hands the job back (it starts again from the source).
 */
export const indexProjectJob = defineJob({
  name: CODEGRAPH_INDEX,
  payload: Type.Object({
    project_id: Type.String({ format: 'uuid' }),
    workspace_id: Type.String({ format: 'uuid' }),
    generation: Type.Integer({ minimum: 1 }),
    requested_by: Type.Optional(Type.String()),
  }),
  attempts: 3,
  backoffMs: 5_000,
  timeoutMs: INDEX_TIMEOUT_MS,
  async handle(deps: { codegraph: Pick<CodegraphService, 'runIndexJob' | 'failIndex'> }, payload, signal) {
    try {
      await deps.codegraph.runIndexJob(payload, signal);
    } catch (error) {
      if (!(signal.reason instanceof JobTimeoutError)) throw error;
      await deps.codegraph.failIndex(
        payload,
        `indexing took longer than ${INDEX_TIMEOUT_MS / 60_000} minutes`,
      );
    }
  },
});

export interface CodegraphRecoveryOptions {
  codegraph: Pick<CodegraphService, 'recoverUnfinished'>;
  queue: Pick<JobQueue, 'onJobsLost'>;
  log: Logger;
}

/**
 * A consuming process hands unfinished background indexes to the queue again when it starts
 * and when the queue says it lost its jobs: the project rows are the truth, the queue only
 * wakes workers (an in-process queue forgets everything when the process dies).
 */
export function createCodegraphRecovery(options: CodegraphRecoveryOptions): Component {
  return createPeriodicSweep({
    name: 'Code graph recovery',
    log: options.log,
    failure: 'the code graph recovery sweep failed',
    atStart: true,
    alsoOn: (sweep) => options.queue.onJobsLost(sweep),
    async work() {
      const count = await options.codegraph.recoverUnfinished();
      if (count > 0)
        options.log.info({ projects: count }, 'handed unfinished code graph indexes to the queue again');
      return count;
    },
  });
}
