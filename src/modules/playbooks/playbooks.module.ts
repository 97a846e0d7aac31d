import type { Config } from '../../config.ts';
import type { Db } from '../../db/transaction.ts';
import { bindJob } from '../../jobs/job.ts';
import type { JobQueue } from '../../jobs/queue.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import type { WorkspacesService } from '../workspaces/workspaces.service.ts';
import {
  createMineRecovery,
  createNightlyMining,
  mineJobId,
  minePlaybooksJob,
  PLAYBOOKS_MINE,
} from './playbooks.jobs.ts';
import { playbooksRoutes } from './playbooks.routes.ts';
import { createPlaybooksService, type PlaybooksDependencies } from './playbooks.service.ts';

export interface PlaybooksModuleDependencies {
  db: Db;
  activity: PlaybooksDependencies['activity'];
  workflows: PlaybooksDependencies['workflows'];
  /** A promoted playbook may start its workflow's first run. */
  runs: PlaybooksDependencies['runs'];
  missingInputs: PlaybooksDependencies['missingInputs'];
  /** Tenant-wide mining reads the caller's workspaces. */
  workspaces: Pick<WorkspacesService, 'listMine'>;
  audit: AuditRecorder;
  /** Background mines (`playbooks.mine`) go through it. */
  queue: Pick<JobQueue, 'enqueue' | 'onJobsLost'>;
  config: Pick<Config, 'mineSyncMaxRuns'>;
  /** Names this process's claims of a nightly schedule slot. */
  owner: string;
  /** This process consumes jobs (RUN_MODE worker or all): it runs the nightly schedules. */
  consumes: boolean;
  log: Logger;
}

/** Playbooks: patterns mined from successful runs, promoted to workflows, attached to agents. */
export function createPlaybooksModule(deps: PlaybooksModuleDependencies) {
  const { workspaces, queue, log } = deps;
  const service = createPlaybooksService({
    db: deps.db,
    activity: deps.activity,
    workflows: deps.workflows,
    runs: deps.runs,
    workspacesOf: (userId) => workspaces.listMine(userId),
    audit: deps.audit,
    missingInputs: deps.missingInputs,
    enqueueMine: (mineId) => queue.enqueue(PLAYBOOKS_MINE, { mine_id: mineId }, { jobId: mineJobId(mineId) }),
    syncMaxRuns: deps.config.mineSyncMaxRuns,
    log,
  });
  return {
    service,
    routes: (app) => playbooksRoutes(app, { playbooks: service }),
    jobs: [bindJob(minePlaybooksJob, { playbooks: service })],
    sweeps: deps.consumes
      ? [
          createNightlyMining({ playbooks: service, log, owner: deps.owner }),
          createMineRecovery({ playbooks: service, queue, log }),
        ]
      : [],
  } satisfies Module;
}
