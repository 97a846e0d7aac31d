import type { Caller } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { type AppError, invalidFields, notFound } from '../../errors.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import type { AgentsService } from '../agents/agents.service.ts';
import { workflowCreated } from './workflows.events.ts';
import {
  createWorkflowsRepository,
  type NewWorkflow,
  type WorkflowChanges,
  type WorkflowFilter,
  type WorkflowRow,
} from './workflows.repository.ts';

type Policy = WorkflowRow['execution_policy'];

/** The policy a workflow gets for every field the client leaves out (timeout: 15 minutes). */
export const DEFAULT_EXECUTION_POLICY: Policy = {
  mode: 'sequential',
  error_handling: 'stop',
  max_retries: 0,
  timeout_seconds: 900,
};

export type CreateWorkflowInput = Omit<NewWorkflow, 'workspace_id' | 'created_by' | 'execution_policy'> & {
  execution_policy?: Partial<Policy>;
};

export type UpdateWorkflowInput = Omit<WorkflowChanges, 'execution_policy'> & {
  execution_policy?: Partial<Policy>;
};

/** What workflows need from other modules, inside their own transactions. */
export interface WorkflowsDependencies {
  /** Referenced agents stay share-locked until the workflow's write commits. */
  agents: Pick<AgentsService, 'lockExisting'>;
  /** The activity feed, written in the transaction of the change it records. */
  activity: Pick<ActivityService, 'record'>;
}

/** Workflows: ordered agents, tools and a policy that together pursue a goal. */
export function createWorkflowsService(db: Db, deps: WorkflowsDependencies) {
  const repo = createWorkflowsRepository(db);

  /** Fails the transaction when an agent id names no agent of the workspace. */
  async function checkAgents(tx: Db, workspaceId: string, agentIds: string[]): Promise<void> {
    const missing = await deps.agents.lockExisting(tx, workspaceId, agentIds);
    if (missing.length > 0) throw missingAgentsError(missing, agentIds);
  }

  return {
    /** Creates the workflow and its `workflow.created` activity event in one transaction. */
    async create(caller: Pick<Caller, 'userId' | 'workspaceId'>, input: CreateWorkflowInput) {
      return inTransaction(db, async (tx) => {
        await checkAgents(tx, caller.workspaceId, input.agents ?? []);
        const workflow = await createWorkflowsRepository(tx).insert({
          ...input,
          execution_policy: { ...DEFAULT_EXECUTION_POLICY, ...input.execution_policy },
          workspace_id: caller.workspaceId,
          created_by: caller.userId,
        });
        await deps.activity.record(tx, workflowCreated(workflow));
        return workflow;
      });
    },

    async get(caller: Pick<Caller, 'userId' | 'workspaceId'>, id: string) {
      const workflow = await repo.find(caller.workspaceId, id);
      if (!workflow) throw notFound('workflow', id);
      return workflow;
    },

    list: (caller: Pick<Caller, 'userId' | 'workspaceId'>, filter: WorkflowFilter) =>
      repo.list(caller.workspaceId, filter),

    /**
     * Partial update on the locked current row; a partial execution_policy merges into the
     * current one without a lost update.
     */
    async update(caller: Pick<Caller, 'userId' | 'workspaceId'>, id: string, input: UpdateWorkflowInput) {
      const { execution_policy: policy, ...rest } = input;
      return inTransaction(db, async (tx) => {
        const txRepo = createWorkflowsRepository(tx);
        const current = await txRepo.findForUpdate(caller.workspaceId, id);
        if (!current) throw notFound('workflow', id);
        if (rest.agents) await checkAgents(tx, caller.workspaceId, rest.agents);
        const changes = {
          ...rest,
          ...(policy ? { execution_policy: { ...current.execution_policy, ...policy } } : {}),
        };
        const updated = await txRepo.update(caller.workspaceId, id, changes);
        if (!updated) throw notFound('workflow', id);
        return updated;
      });
    },

    async delete(caller: Pick<Caller, 'userId' | 'workspaceId'>, id: string) {
      if (!(await repo.delete(caller.workspaceId, id))) throw notFound('workflow', id);
    },

    /**
     * For runs, after a run's change commits: the workflow shows its latest run's status. Its
     * own statement, none when unchanged, so concurrent runs never queue on the workflow row
     * inside their transactions (with several at once, the latest change decides).
     */
    setStatus: (workspaceId: string, id: string, status: WorkflowRow['status']) =>
      repo.setStatus(workspaceId, id, status),

    /**
     * The same inside a run's own statement (its start, its end): the workflow's row is
     * changed, and locked, only when its status changes, and for that one statement's time.
     */
    statusFromRun: repo.statusFromRun,

    /** For agents, inside their delete transaction: the agent leaves every workflow. */
    removeAgent: (tx: Db, workspaceId: string, agentId: string) =>
      createWorkflowsRepository(tx).removeAgent(workspaceId, agentId),
  };
}

export type WorkflowsService = ReturnType<typeof createWorkflowsService>;

function missingAgentsError(missing: number[], agentIds: string[]): AppError {
  return invalidFields(
    missing.map((index) => ({
      field: `body.agents.${index}`,
      message: `agent ${agentIds[index]} does not exist in this workspace`,
    })),
  );
}
