import type { Db } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import type { WorkflowsService } from '../workflows/workflows.service.ts';
import { type ActivityRecorder, createRunLog, createRunWriter } from './run-log.ts';
import { renderGoal } from './run-state.ts';
import { createRunRecovery, RUN_EXECUTE } from './runs.jobs.ts';
import { runsRoutes } from './runs.routes.ts';
import { createRunsService } from './runs.service.ts';

export interface RunsModuleDependencies {
  db: Db;
  hub: Pick<EventHub, 'publish' | 'subscribe'>;
  activity: ActivityRecorder;
  workflows: Pick<WorkflowsService, 'get' | 'setStatus' | 'statusFromRun'>;
  queue: Pick<JobQueue, 'enqueue' | 'onJobsLost'>;
  /** This process consumes jobs (RUN_MODE worker or all): it sweeps for stranded runs. */
  consumes: boolean;
  log: Logger;
}

/**
 * Runs of workflows: started (the row is the outbox), listed, streamed and controlled. Their
 * execution is the run engine's (`createRunEngineModule`), built on this module's run log once
 * the modules an agent's step consults (policies, playbooks) exist, which themselves start and
 * read runs through this one.
 */
export function createRunsModule(deps: RunsModuleDependencies) {
  const { queue, log } = deps;
  const runLog = { db: deps.db, hub: deps.hub, activity: deps.activity };
  /** The run's log, for the engine: rare changes in a transaction, the hot path as one statement. */
  const writers = { commit: createRunLog(runLog), write: createRunWriter(runLog) };
  const service = createRunsService({
    db: deps.db,
    ...writers,
    workflows: deps.workflows,
    hub: deps.hub,
    enqueue: (runId, jobId) => queue.enqueue(RUN_EXECUTE, { run_id: runId }, { jobId }),
    onEnqueueError: (error, runId) =>
      log.warn(
        { err: error, run_id: runId },
        'the queue did not take the run; the recovery sweep hands it over',
      ),
  });
  return {
    service,
    writers,
    /** The goal inputs a goal template needs that `inputs` lacks (the `{{placeholder}}` rule of runs). */
    missingInputs: (goal: string, inputs: Record<string, string>) => renderGoal(goal, inputs).missing,
    routes: (app, { streams }) => runsRoutes(app, { runs: service, streams }),
    // Consumers sweep for runs a lost enqueue or a dead worker left behind.
    sweeps: deps.consumes ? [createRunRecovery({ runs: service, queue, log })] : [],
  } satisfies Module;
}
