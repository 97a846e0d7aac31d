import { type Caller, hasRole } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, type FieldError, invalidFields, notFound } from '../../errors.ts';
import { pageOf } from '../../lib/page.ts';
import type { ActivityService } from '../activity/activity.service.ts';
import type { AuditRecorder, RecordedBy } from '../audit/audit.service.ts';
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
  /** The vault credentials the tools are configured with, per tool; wired to `ToolsService.boundCredentials`. */
  boundCredentials(tools: NonNullable<AgentChanges['tools']>): Map<string, number[]>;
  /** The workspace audit trail: `agent.credentials_changed` when an agent's credential references change. */
  audit?: AuditRecorder;
}

/** Who saves an agent: the role decides whether vault credentials may be bound into its tools. */
type Saver = Pick<Caller, 'userId' | 'workspaceId' | 'tenantId'> & Partial<Pick<Caller, 'role'>> & RecordedBy;

/** Credential references per tool, as the audit trail records them (`{http_request: [12]}`). */
type Bound = Record<string, number[]>;

/** Agents: the configured LLM workers that workflows are made of. */
/**
 * For workflows, inside their transaction: share-locks the referenced agents until it ends and
 * answers the positions in `ids` that name no agent of the workspace (empty when all exist). A
 * concurrent delete waits for the lock, then cleans the workflow. It needs only the transaction,
 * so workflows take it without an agents service (which needs workflows for its deletes).
 */
export async function lockExistingAgents(tx: Db, workspaceId: string, ids: string[]): Promise<number[]> {
  const present = await createAgentsRepository(tx).lockShared(workspaceId, ids);
  return ids.flatMap((agentId, index) => (present.has(agentId) ? [] : [index]));
}

export function createAgentsService(db: Db, deps: AgentsDependencies) {
  const repo = createAgentsRepository(db);

  /** An agent may name only tools the registry has, configured as each tool allows. */
  const checkTools = (tools: AgentChanges['tools']) => {
    const errors = tools ? deps.checkTools(tools, 'body.tools') : [];
    if (errors.length > 0) throw invalidFields(errors);
  };

  const boundOf = (tools: AgentChanges['tools']): Bound =>
    Object.fromEntries(deps.boundCredentials(tools ?? []));

  /**
   * Rule C3b: putting a vault credential into an agent's tools decides where its secrets may
   * go, so only admins (and owners) do it. A member may save an agent whose credentials stay
   * as they were, or drop some; adding one, or one to another tool, is refused naming the field.
   */
  function refuseCredentialBinding(caller: Saver, tools: AgentChanges['tools'], before: Bound): void {
    if (caller.role !== undefined && hasRole(caller.role, 'admin')) return;
    const errors = (tools ?? []).flatMap((ref, index) => {
      const added = (deps.boundCredentials([ref]).get(ref.name) ?? []).filter(
        (id) => !(before[ref.name] ?? []).includes(id),
      );
      return added.length === 0
        ? []
        : [
            {
              field: `body.tools.${index}.config.credentials`,
              message: `binds credential ${added.join(', ')}: only admins and owners put vault credentials into an agent`,
            },
          ];
    });
    if (errors.length > 0) {
      throw new AppError(
        403,
        'insufficient_role',
        `putting a vault credential into an agent needs the admin role or higher; you are ${caller.role ?? 'no member'}`,
        errors,
      );
    }
  }

  /** Records a change of the agent's credential references in the workspace audit trail. */
  async function auditBinding(tx: Db, caller: Saver, agentId: string, before: Bound, after: Bound) {
    if (JSON.stringify(before) === JSON.stringify(after)) return;
    await deps.audit?.record(tx, caller.workspaceId, caller, {
      action: 'agent.credentials_changed',
      targetType: 'agent',
      targetId: agentId,
      changes: { tool_credentials: { old: before, new: after } },
    });
  }

  return {
    /**
     * Creates the agent and its `agent.created` activity event in one transaction; credentials
     * bound into its tools need an admin and are recorded in the audit trail.
     */
    async create(caller: Saver, input: CreateAgentInput) {
      checkTools(input.tools);
      const bound = boundOf(input.tools);
      refuseCredentialBinding(caller, input.tools, {});
      return inTransaction(db, async (tx) => {
        const agent = await createAgentsRepository(tx).insert({
          ...input,
          workspace_id: caller.workspaceId,
          created_by: caller.userId,
        });
        await deps.activity.record(tx, agentCreated(agent));
        await auditBinding(tx, caller, agent.id, {}, bound);
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
        return JSON.stringify(pageOf([], filter));
      }
      return repo.list(caller.workspaceId, filter);
    },

    /**
     * Partial update. New tools are compared with the stored ones under the agent's row lock:
     * a credential added to a tool needs an admin, and any change of the credential references
     * is recorded in the audit trail in the same transaction.
     */
    async update(caller: Saver, id: string, changes: AgentChanges) {
      checkTools(changes.tools);
      return inTransaction(db, async (tx) => {
        const agents = createAgentsRepository(tx);
        if (changes.tools) {
          const stored = await agents.find(caller.workspaceId, id, true);
          if (!stored) throw notFound('agent', id);
          const before = boundOf(stored.tools);
          refuseCredentialBinding(caller, changes.tools, before);
          await auditBinding(tx, caller, id, before, boundOf(changes.tools));
        }
        const agent = await agents.update(caller.workspaceId, id, changes);
        if (!agent) throw notFound('agent', id);
        return agent;
      });
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

    /** For workflows, inside their transaction (`lockExistingAgents`). */
    lockExisting: lockExistingAgents,

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
