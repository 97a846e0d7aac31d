import { AppError, notFound } from '../../errors.ts';
import type {
  MissingAgents,
  NewWorkflow,
  WorkflowChanges,
  WorkflowFilter,
  WorkflowRow,
  WorkflowsRepository,
} from './workflows.repository.ts';

export interface WorkflowActor {
  userId: string;
  workspaceId: string;
}

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

/** Workflows: ordered agents, tools and a policy that together pursue a goal. */
export function createWorkflowsService(repo: WorkflowsRepository) {
  return {
    async create(actor: WorkflowActor, input: CreateWorkflowInput) {
      const result = await repo.insert({
        ...input,
        execution_policy: { ...DEFAULT_EXECUTION_POLICY, ...input.execution_policy },
        workspace_id: actor.workspaceId,
        created_by: actor.userId,
      });
      if ('missing' in result) throw missingAgentsError(result, input.agents ?? []);
      return result;
    },

    async get(actor: WorkflowActor, id: string) {
      const workflow = await repo.find(actor.workspaceId, id);
      if (!workflow) throw notFound('workflow', id);
      return workflow;
    },

    list: (actor: WorkflowActor, filter: WorkflowFilter) => repo.list(actor.workspaceId, filter),

    /** Partial update; a partial execution_policy merges into the current one. */
    async update(actor: WorkflowActor, id: string, input: UpdateWorkflowInput) {
      const { execution_policy: policy, ...rest } = input;
      const result = await repo.update(actor.workspaceId, id, (current) => ({
        ...rest,
        ...(policy ? { execution_policy: { ...current.execution_policy, ...policy } } : {}),
      }));
      if (!result) throw notFound('workflow', id);
      if ('missing' in result) throw missingAgentsError(result, input.agents ?? []);
      return result;
    },

    async delete(actor: WorkflowActor, id: string) {
      if (!(await repo.delete(actor.workspaceId, id))) throw notFound('workflow', id);
    },
  };
}

export type WorkflowsService = ReturnType<typeof createWorkflowsService>;

function missingAgentsError(result: MissingAgents, agentIds: string[]): AppError {
  const errors = result.missing.map((index) => ({
    field: `body.agents.${index}`,
    message: `agent ${agentIds[index]} does not exist in this workspace`,
  }));
  return new AppError(
    400,
    'validation_failed',
    errors.map((e) => `${e.field}: ${e.message}`).join('; '),
    errors,
  );
}
