import type { Caller } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { type FieldError, invalidFields, notFound } from '../../errors.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import { agentCreated } from './agents.events.ts';
import {
  type AgentChanges,
  type AgentFilter,
  type AgentRow,
  agentsFromJson,
  createAgentsRepository,
  type NewAgent,
} from './agents.repository.ts';

export type { AgentRow } from './agents.repository.ts';

export type CreateAgentInput = Omit<NewAgent, 'workspace_id' | 'created_by'>;

/**
 * What agents need from other modules, inside their own transactions. Workflows depend on
 * agents (they lock the agents they reference), so this direction is a plain function the
 * composition root wires to `WorkflowsService.removeAgent`, not an import of workflows.
 */
export interface AgentsDependencies {
  /** Deleting an agent takes it out of every workflow, in the delete's transaction. */
  removeFromWorkflows(tx: Db, workspaceId: string, agentId: string): Promise<void>;
  /** The activity feed, written in the transaction of the change it records. */
  activity: Pick<ActivityService, 'record'>;
  /**
   * The tool registry's verdict on an agent's `tools` (unknown names, configs that do not fit),
   * as field errors under `field`; wired to `ToolsService.checkRefs`.
   */
  checkTools(tools: NonNullable<AgentChanges['tools']>, field: string): FieldError[];
}

/** Agents: the configured LLM workers that workflows are made of. */
export function createAgentsService(db: Db, deps: AgentsDependencies) {
  const repo = createAgentsRepository(db);

  /** An agent may name only tools the registry has, configured as each tool allows. */
  const checkTools = (tools: AgentChanges['tools']) => {
    const errors = tools ? deps.checkTools(tools, 'body.tools') : [];
    if (errors.length > 0) throw invalidFields(errors);
  };

  return {
    /** Creates the agent and its `agent.created` activity event in one transaction. */
    async create(caller: Pick<Caller, 'userId' | 'workspaceId' | 'tenantId'>, input: CreateAgentInput) {
      checkTools(input.tools);
      return inTransaction(db, async (tx) => {
        const agent = await createAgentsRepository(tx).insert({
          ...input,
          workspace_id: caller.workspaceId,
          created_by: caller.userId,
        });
        await deps.activity.record(tx, agentCreated(agent));
        return agent;
      });
    },

    async get(caller: Pick<Caller, 'userId' | 'workspaceId' | 'tenantId'>, id: string) {
      const agent = await repo.find(caller.workspaceId, id);
      if (!agent) throw notFound('agent', id);
      return agent;
    },

    /**
     * Lists the workspace's agents. `tenant_id` narrows to a tenant; since a workspace
     * belongs to exactly one tenant, any other tenant matches nothing (an empty list,
     * which reveals nothing about tenants the caller does not belong to). Answers the
     * page as JSON text, built by the database, for the route to send as it is.
     */
    async list(
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'tenantId'>,
      filter: AgentFilter & { tenant_id?: string },
    ) {
      if (filter.tenant_id !== undefined && filter.tenant_id.toLowerCase() !== caller.tenantId) {
        return JSON.stringify({ items: [], total: 0, limit: filter.limit, offset: filter.offset });
      }
      return repo.list(caller.workspaceId, filter);
    },

    async update(
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'tenantId'>,
      id: string,
      changes: AgentChanges,
    ) {
      checkTools(changes.tools);
      const agent = await repo.update(caller.workspaceId, id, changes);
      if (!agent) throw notFound('agent', id);
      return agent;
    },

    /**
     * Deletes the agent and takes it out of every workflow of the workspace in one
     * transaction. Deleting first locks the row, so a workflow being saved with this
     * agent either commits before (and is cleaned here) or fails its existence check.
     */
    async delete(caller: Pick<Caller, 'userId' | 'workspaceId' | 'tenantId'>, id: string) {
      await inTransaction(db, async (tx) => {
        if (!(await createAgentsRepository(tx).delete(caller.workspaceId, id))) throw notFound('agent', id);
        await deps.removeFromWorkflows(tx, caller.workspaceId, id);
      });
    },

    /**
     * For workflows, inside their transaction: share-locks the referenced agents until it
     * ends and answers the positions in `ids` that name no agent of the workspace (empty
     * when all exist). A concurrent delete waits for the lock, then cleans the workflow.
     */
    async lockExisting(tx: Db, workspaceId: string, ids: string[]): Promise<number[]> {
      const present = await createAgentsRepository(tx).lockShared(workspaceId, ids);
      return ids.flatMap((agentId, index) => (present.has(agentId) ? [] : [index]));
    },

    /**
     * For runs: the run's agents, read by the run's claim statement (`ofRunQuery`, a subquery
     * over its `run` CTE), keyed by id; agents deleted since the run started are absent.
     */
    ofRunQuery: () => repo.ofRunQuery(),
    agentsOfRun: (answer: unknown): Map<string, AgentRow> =>
      new Map(agentsFromJson(answer).map((row) => [row.id, row])),

    /**
     * For runs, inside the statement that starts or ends a step: Idle -> Busy -> Idle, or Error
     * after a failure. It changes (and locks) the agent's row only when the status changes, for
     * the one statement's time, so concurrent runs of one agent seldom wait on it. With several
     * runs of one agent at once, the latest step to start or end decides what it shows.
     */
    statusFromRun: (id: string, status: AgentRow['status']) => repo.statusFromRun(id, status),
  };
}

export type AgentsService = ReturnType<typeof createAgentsService>;
