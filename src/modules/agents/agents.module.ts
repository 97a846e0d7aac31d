import type { Db } from '../../db/transaction.ts';
import type { Module } from '../../module.ts';
import type { ToolsService } from '../tools/tools.service.ts';
import { agentsRoutes } from './agents.routes.ts';
import { type AgentsDependencies, createAgentsService } from './agents.service.ts';

export interface AgentsModuleDependencies {
  db: Db;
  /**
   * Deleting an agent takes it out of every workflow, in the delete's transaction: the
   * workflows module's `removeAgent` (the port is declared here, as workflows build on agents).
   */
  workflows: { removeAgent: AgentsDependencies['removeFromWorkflows'] };
  activity: AgentsDependencies['activity'];
  /** The tool registry judges an agent's tools and names the credentials they are bound to. */
  tools: Pick<ToolsService, 'checkRefs' | 'boundCredentials'>;
  audit: NonNullable<AgentsDependencies['audit']>;
}

/** Agents: a model, a system prompt, tools and a policy, used by workflows, runs and chat. */
export function createAgentsModule(deps: AgentsModuleDependencies) {
  const service = createAgentsService(deps.db, {
    removeFromWorkflows: deps.workflows.removeAgent,
    activity: deps.activity,
    checkTools: deps.tools.checkRefs,
    boundCredentials: deps.tools.boundCredentials,
    audit: deps.audit,
  });
  return { service, routes: (app) => agentsRoutes(app, { agents: service }) } satisfies Module;
}
