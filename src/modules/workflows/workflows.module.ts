import type { Db } from '../../db/transaction.ts';
import type { Module } from '../../module.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import { lockExistingAgents } from '../agents/agents.service.ts';
import { workflowsRoutes } from './workflows.routes.ts';
import { createWorkflowsService } from './workflows.service.ts';

export interface WorkflowsModuleDependencies {
  db: Db;
  activity: Pick<ActivityService, 'record'>;
}

/**
 * Workflows: ordered agents, tools and a policy that pursue a goal. The agents they name are
 * share-locked in the workflow's transaction by the agents module's `lockExistingAgents`, a
 * function of that transaction alone: the agents module, built after this one, takes
 * `service.removeAgent` for its deletes.
 */
export function createWorkflowsModule(deps: WorkflowsModuleDependencies) {
  const service = createWorkflowsService(deps.db, {
    agents: { lockExisting: lockExistingAgents },
    activity: deps.activity,
  });
  return { service, routes: (app) => workflowsRoutes(app, { workflows: service }) } satisfies Module;
}
