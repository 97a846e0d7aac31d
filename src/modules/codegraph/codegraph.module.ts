import type { Config } from '../../config.ts';
import type { Db } from '../../db/transaction.ts';
import { bindJob } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import { CODEGRAPH_INDEX, createCodegraphRecovery, indexJobId, indexProjectJob } from './codegraph.jobs.ts';
import { codegraphRoutes } from './codegraph.routes.ts';
import { createCodegraphService } from './codegraph.service.ts';

export interface CodegraphModuleDependencies {
  db: Db;
  activity: Pick<ActivityService, 'record'>;
  queue: Pick<JobQueue, 'enqueue' | 'onJobsLost'>;
  /** Each tenant's own subtree of SOURCES_ROOT; absent, no directory can be indexed. */
  sourcesRootOf: ((workspaceId: string) => Promise<string>) | undefined;
  config: Pick<Config, 'codegraphSyncMaxBytes' | 'uploadMaxBytes'>;
  /** This process consumes jobs (RUN_MODE worker or all): it sweeps for indexes left unfinished. */
  consumes: boolean;
  log: Logger;
}

/** Code graphs of projects: indexed from a folder or an archive, in the request or as a job. */
export function createCodegraphModule(deps: CodegraphModuleDependencies) {
  const { queue, log } = deps;
  const service = createCodegraphService({
    db: deps.db,
    activity: deps.activity,
    enqueue: (payload) => queue.enqueue(CODEGRAPH_INDEX, payload, { jobId: indexJobId(payload) }),
    ...(deps.sourcesRootOf ? { sourcesRootOf: deps.sourcesRootOf } : {}),
    syncMaxBytes: deps.config.codegraphSyncMaxBytes,
    log,
  });
  const { uploadMaxBytes } = deps.config;
  return {
    service,
    routes: (app) => codegraphRoutes(app, { codegraph: service, uploadMaxBytes }),
    jobs: [bindJob(indexProjectJob, { codegraph: service })],
    sweeps: deps.consumes ? [createCodegraphRecovery({ codegraph: service, queue, log })] : [],
  } satisfies Module;
}
