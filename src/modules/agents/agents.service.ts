import { notFound } from '../../errors.ts';
import type { AgentChanges, AgentFilter, AgentsRepository, NewAgent } from './agents.repository.ts';

/** The caller as the service needs it. */
export interface AgentActor {
  userId: string;
  workspaceId: string;
  tenantId: string;
}

export type CreateAgentInput = Omit<NewAgent, 'workspace_id' | 'created_by'>;

/** Agents: the configured LLM workers that workflows are made of. */
export function createAgentsService(repo: AgentsRepository) {
  return {
    create: (actor: AgentActor, input: CreateAgentInput) =>
      repo.insert({ ...input, workspace_id: actor.workspaceId, created_by: actor.userId }),

    async get(actor: AgentActor, id: string) {
      const agent = await repo.find(actor.workspaceId, id);
      if (!agent) throw notFound('agent', id);
      return agent;
    },

    /**
     * Lists the workspace's agents. `tenant_id` narrows to a tenant; since a workspace
     * belongs to exactly one tenant, any other tenant matches nothing (an empty list,
     * which reveals nothing about tenants the caller does not belong to).
     */
    async list(actor: AgentActor, filter: AgentFilter & { tenant_id?: string }) {
      if (filter.tenant_id !== undefined && filter.tenant_id.toLowerCase() !== actor.tenantId) {
        return { items: [], total: 0 };
      }
      return repo.list(actor.workspaceId, filter);
    },

    async update(actor: AgentActor, id: string, changes: AgentChanges) {
      const agent = await repo.update(actor.workspaceId, id, changes);
      if (!agent) throw notFound('agent', id);
      return agent;
    },

    async delete(actor: AgentActor, id: string) {
      if (!(await repo.delete(actor.workspaceId, id))) throw notFound('agent', id);
    },
  };
}

export type AgentsService = ReturnType<typeof createAgentsService>;
