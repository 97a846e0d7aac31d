import type { Db } from '../../db/transaction.ts';
import type { Logger } from '../../logger.ts';
import type { Module } from '../../module.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import type { WorkspacesService } from '../workspaces/workspaces.service.ts';
import { createNightlyMining } from './playbooks.jobs.ts';
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
  /** Names this process's claims of a nightly schedule slot. */
  owner: string;
  /** This process consumes jobs (RUN_MODE worker or all): it runs the nightly schedules. */
  consumes: boolean;
  log: Logger;
}

/** Playbooks: patterns mined from successful runs, promoted to workflows, attached to agents. */
export function createPlaybooksModule(deps: PlaybooksModuleDependencies) {
  const { workspaces, log } = deps;
  const service = createPlaybooksService({
    db: deps.db,
    activity: deps.activity,
    workflows: deps.workflows,
    runs: deps.runs,
    workspacesOf: (userId) => workspaces.listMine(userId),
    audit: deps.audit,
    missingInputs: deps.missingInputs,
  });
  return {
    service,
    routes: (app) => playbooksRoutes(app, { playbooks: service }),
    sweeps: deps.consumes ? [createNightlyMining({ playbooks: service, log, owner: deps.owner })] : [],
  } satisfies Module;
}
