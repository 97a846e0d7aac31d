import { randomUUID } from 'node:crypto';
import { type SQL, sql } from 'drizzle-orm';
import type { PlaybookTrigger, ToolCallRecord } from '../../db/schema/runs.ts';
import type { Db } from '../../db/transaction.ts';
import type { ActivityStatementEntry } from '../activity/activity.service.ts';
import type { AgentRow, AgentsService } from '../agents/agents.service.ts';
import type { WorkflowsService } from '../workflows/workflows.service.ts';
import type { CommitRunChange, RunStatementEvent, WriteRun } from './run-log.ts';
import {
  createRunsRepository,
  type NewRunStep,
  type RunEnd,
  type RunPolicy,
  type RunRow,
  type RunStepRow,
  runFromRaw,
} from './runs.repository.ts';

/**
 * The run engine's statements: every write the engine makes, each one statement of the run's
 * log (`WriteRun`: the run's change, its events, its activity and the statuses it sets, in one
 * round trip and one commit) or, for the rare changes, one transaction (`CommitRunChange`).
 * The engine (`run-engine.ts`) decides *when* a run changes; this file says *what* each change
 * writes (docs/runs.md, "Durability"). Nothing here decides an outcome: a statement whose guard
 * failed (the run is no longer the worker's) answers false or undefined, and the engine acts on it.
 */

/** Playbooks attached to agents: read by the run's claim, recorded on the steps they trigger. */
export interface RunPlaybooks {
  attachmentsOfRunQuery(): SQL;
  triggersFrom(
    attached: unknown,
    facts: {
      goal: string;
      context: Record<string, unknown>;
      inputs: Record<string, string>;
      workflow: string;
    },
  ): (agent: { id: string; name: string }) => PlaybookTrigger[];
  countTriggers(db: Db, attachmentIds: string[]): Promise<void>;
}

export interface RunStatementsDependencies {
  db: Db;
  commit: CommitRunChange;
  write: WriteRun;
  agents: Pick<AgentsService, 'ofRunQuery' | 'agentsOfRun' | 'statusFromRun'>;
  workflows: Pick<WorkflowsService, 'statusFromRun'>;
  playbooks?: Pick<RunPlaybooks, 'attachmentsOfRunQuery'>;
  /** How long a claim lasts without renewal. */
  leaseMs: number;
  /** Claims after which a run that keeps losing its worker is claimed without starting. */
  maxClaims: number;
}

/** What a claim read with the run: its agents by id, and the playbooks attached to them (raw). */
export interface ClaimedRow {
  run: RunRow;
  agents: Map<string, AgentRow>;
  playbooks: unknown;
}

/**
 * A step's attempt as its start records it, written alone or with its end: the step's row (its
 * status aside), `playbook.triggered` and `step.started`, and the agent's `agent.started`. The
 * step's id is chosen here, so its events name it whichever statement writes its row.
 */
export interface StepRecord {
  id: string;
  position: number;
  attempt: number;
  kind: 'agent' | 'merge';
  agent: AgentRow | undefined;
  row: Omit<NewRunStep, 'run_id' | 'workspace_id' | 'status'> & { id: string; started_at: Date };
  events: RunStatementEvent[];
  activity: ActivityStatementEntry[];
}

/** A completed step's answer, as the step and its run store it. */
export interface StepAnswer {
  text: string;
  toolCalls: ToolCallRecord[];
  provider: string;
  model: string;
  usage: { input_tokens: number; output_tokens: number };
  cost: number;
  price: NewRunStep['price'];
  fallbacks: { provider: string; model: string; error: string }[];
  /** Not a model's answer: the built-in `local` provider answered after every model failed (why). */
  degraded?: string | undefined;
  latencyMs: number;
}

/** A failed step attempt: the message stored on it, and whether it was the agent's failure. */
export interface StepFailure {
  message: string;
  toolCalls: ToolCallRecord[];
  latencyMs: number;
  /** The agent failed (not an interruption of the worker): its status becomes `Error`. */
  agentFailed: boolean;
}

export function createRunStatements(deps: RunStatementsDependencies) {
  const repo = createRunsRepository(deps.db);
  const { leaseMs, maxClaims } = deps;

  /** The agent's shown status as a part of a step's statement; none for a merge step. */
  function agentStatus(agent: AgentRow | undefined, status: AgentRow['status']): [string, SQL][] {
    return agent ? [['agent', deps.agents.statusFromRun(agent.id, status)]] : [];
  }

  return {
    /**
     * Claims the run for `owner` and, in the same statement, starts it (first claim: its
     * workflow shows Running) or settles what its lost worker left (a later claim: the steps
     * left Running fail); it also reads the run's agents and the playbooks attached to them.
     * Undefined when it is not claimable. A run past its claim limit is claimed without
     * starting: the engine fails it.
     */
    async claim(runId: string, owner: string): Promise<ClaimedRow | undefined> {
      const first = sql`run.attempts = 1`;
      const row = await deps.write(runId, {
        ctes: [
          ['run', repo.claimQuery(runId, owner, leaseMs)],
          ['abandoned', repo.abandonStepsQuery(maxClaims, 'interrupted: the worker was lost')],
          ['workflow', deps.workflows.statusFromRun('Running', sql`attempts <= ${maxClaims}`)],
        ],
        events: [
          {
            type: 'run.started',
            data: sql`jsonb_build_object('workflow_id', run.workflow_id, 'agent_ids', run.agent_ids)`,
            when: first,
          },
          {
            type: 'run.resumed',
            data: sql`jsonb_build_object('after_step', run.next_step, 'claim', run.attempts)`,
            when: sql`run.attempts between 2 and ${maxClaims}`,
          },
        ],
        activity: [
          {
            kind: 'workflow.started',
            subjectType: 'run',
            subjectId: runId,
            message: sql`'Workflow “' || run.workflow_name || '” started'`,
            data: sql`jsonb_build_object('workflow_id', run.workflow_id)`,
            when: first,
          },
        ],
        select: sql`run.*, ${deps.agents.ofRunQuery()} as run_agents,
          ${deps.playbooks ? deps.playbooks.attachmentsOfRunQuery() : sql`'[]'::json`} as run_playbooks`,
      });
      if (!row) return undefined;
      return {
        run: runFromRaw(row),
        agents: deps.agents.agentsOfRun(row.run_agents),
        playbooks: row.run_playbooks,
      };
    },

    /** Extends the owner's lease: the run's pending control, or undefined when it is no longer the owner's. */
    renewLease: (runId: string, owner: string) => repo.renewLease(runId, owner, leaseMs),

    /** The pending control requests among the runs. */
    controlsOf: (runIds: string[]) => repo.controlsOf(runIds),

    /** The run's pending control request (`pause`, `cancel`), read between steps. */
    async controlOf(runId: string): Promise<string | null | undefined> {
      return (await repo.findById(runId))?.control;
    },

    /** Every attempt of every step of the run so far, in order. */
    listSteps: (runId: string): Promise<RunStepRow[]> => repo.listSteps(runId),

    /** Records the policy the run's agent was assembled from (the first one only). */
    recordPolicy: (runId: string, policy: RunPolicy) => repo.recordPolicy(runId, policy),

    /** What a step's attempt records when it starts (see `StepRecord`); nothing is written yet. */
    stepRecord(
      run: RunRow,
      step: {
        position: number;
        attempt: number;
        kind: 'agent' | 'merge';
        agent: AgentRow | undefined;
        label: string;
        prompt: string;
        triggers: PlaybookTrigger[];
      },
    ): StepRecord {
      const { agent, kind, triggers } = step;
      const id = randomUUID();
      const events: RunStatementEvent[] = [
        ...triggers.map((trigger) => ({ type: 'playbook.triggered', data: { step_id: id, ...trigger } })),
        {
          type: 'step.started',
          data: {
            step_id: id,
            position: step.position,
            attempt: step.attempt,
            kind,
            agent: agent ? { id: agent.id, name: agent.name } : null,
          },
        },
      ];
      const activity: ActivityStatementEntry[] = agent
        ? [
            {
              kind: 'agent.started',
              subjectType: 'agent',
              subjectId: agent.id,
              message: `Agent “${agent.name}” started a task of “${run.workflow_name}”`,
              data: { run_id: run.id },
            },
          ]
        : [];
      return {
        id,
        position: step.position,
        attempt: step.attempt,
        kind,
        agent,
        row: {
          id,
          position: step.position,
          attempt: step.attempt,
          kind,
          agent_id: agent?.id ?? null,
          agent_name: kind === 'merge' ? null : step.label,
          prompt: step.prompt,
          playbook_triggers: triggers,
          started_at: new Date(),
        },
        events,
        activity,
      };
    },

    /**
     * A slow step's start, while `owner` holds the run: the step row Running, its events, the
     * agent Busy. False when the run is no longer the owner's (nothing was written).
     */
    async startStep(run: RunRow, owner: string, step: StepRecord): Promise<boolean> {
      const started = await deps.write(run.id, {
        ctes: [
          ['run', repo.ownedQuery(run.id, owner)],
          ['step', repo.insertStepQuery({ ...step.row, status: 'Running' })],
          ...agentStatus(step.agent, 'Busy'),
        ],
        events: step.events,
        activity: step.activity,
      });
      return started !== undefined;
    },

    /**
     * A step's success with the run's progress, while `owner` holds the run; with `end` (the
     * last step) the run ends in the same statement. `startWritten` false: the step's start is
     * written with its end (a quick step). False when the run is no longer the owner's.
     */
    async completeStep(
      run: RunRow,
      owner: string,
      step: StepRecord,
      answer: StepAnswer,
      options: { startWritten: boolean; end?: RunEnd; agentName?: string },
    ): Promise<boolean> {
      const { startWritten, end } = options;
      const { agent } = step;
      const completed = {
        status: 'Completed' as const,
        output: answer.text,
        tool_calls: answer.toolCalls,
        provider: answer.provider,
        model: answer.model,
        tokens_in: answer.usage.input_tokens,
        tokens_out: answer.usage.output_tokens,
        cost: answer.cost,
        price: answer.price,
        latency_ms: answer.latencyMs,
        degraded: answer.degraded ?? null,
        finished_at: new Date(),
      };
      const progressed = await deps.write(run.id, {
        ctes: [
          [
            'run',
            repo.progressQuery(
              run.id,
              owner,
              {
                output: answer.text,
                tokensIn: answer.usage.input_tokens,
                tokensOut: answer.usage.output_tokens,
                cost: answer.cost,
                ...(options.agentName !== undefined ? { agentName: options.agentName } : {}),
                tools: answer.toolCalls.map((c) => c.name),
              },
              end,
            ),
          ],
          [
            'step',
            startWritten
              ? repo.endStepQuery(step.id, completed)
              : repo.insertStepQuery({ ...step.row, ...completed }),
          ],
          ...agentStatus(agent, 'Idle'),
          ...(end ? [['workflow', deps.workflows.statusFromRun(end.status)] as [string, SQL]] : []),
        ],
        events: [
          ...(startWritten ? [] : step.events),
          ...answer.toolCalls.map((call) => ({ type: 'tool_call', data: { step_id: step.id, ...call } })),
          {
            type: 'step.completed',
            data: {
              step_id: step.id,
              position: step.position,
              attempt: step.attempt,
              provider: answer.provider,
              model: answer.model,
              usage: answer.usage,
              cost: answer.cost,
              fallbacks: answer.fallbacks,
              degraded: answer.degraded ?? null,
            },
          },
          ...(end ? [endEvent(end)] : []),
        ],
        activity: [
          ...(startWritten ? [] : step.activity),
          ...(agent
            ? [
                {
                  kind: 'agent.completed',
                  subjectType: 'agent',
                  subjectId: agent.id,
                  message: `Agent “${agent.name}” completed a task of “${run.workflow_name}”`,
                  data: { run_id: run.id },
                } satisfies ActivityStatementEntry,
              ]
            : []),
          ...(end ? [endActivity(run, end)] : []),
        ],
      });
      return progressed !== undefined;
    },

    /**
     * A step attempt's failure, recorded whoever owns the run now (this attempt failed either
     * way): the step Failed with its message, `step.failed`, the agent `Error` (its failure) or
     * `Idle` (an interruption), and `agent.failed` for the agent's own failure.
     */
    async failStep(
      run: RunRow,
      step: StepRecord,
      failure: StepFailure,
      options: { startWritten: boolean },
    ): Promise<void> {
      const { startWritten } = options;
      const { agent } = step;
      const failed = {
        status: 'Failed' as const,
        error: failure.message,
        tool_calls: failure.toolCalls,
        latency_ms: failure.latencyMs,
        finished_at: new Date(),
      };
      await deps.write(run.id, {
        ctes: [
          ['run', repo.lockedQuery(run.id)],
          [
            'step',
            startWritten
              ? repo.endStepQuery(step.id, failed)
              : repo.insertStepQuery({ ...step.row, ...failed }),
          ],
          ...agentStatus(agent, failure.agentFailed ? 'Error' : 'Idle'),
        ],
        events: [
          ...(startWritten ? [] : step.events),
          {
            type: 'step.failed',
            data: {
              step_id: step.id,
              position: step.position,
              attempt: step.attempt,
              error: failure.message,
            },
          },
        ],
        activity: [
          ...(startWritten ? [] : step.activity),
          ...(agent && failure.agentFailed
            ? [
                {
                  kind: 'agent.failed',
                  subjectType: 'agent',
                  subjectId: agent.id,
                  message: `Agent “${agent.name}” failed a task of “${run.workflow_name}”: ${failure.message}`,
                  data: { run_id: run.id },
                } satisfies ActivityStatementEntry,
              ]
            : []),
        ],
      });
    },

    /** Ends the run in a final status with its totals, while its claim's owner holds it; one statement. */
    async finish(run: RunRow, end: RunEnd): Promise<void> {
      await deps.write(run.id, {
        ctes: [
          ['run', repo.finishQuery(run.id, run.lease_owner as string, end)],
          ['workflow', deps.workflows.statusFromRun(end.status)],
        ],
        events: [endEvent(end)],
        activity: [endActivity(run, end)],
      });
    },

    /**
     * Hands the run back: Queued again with no owner (`run.requeued` with the reason). The
     * claim is given back too, so it is not counted against `maxClaims`; the first claim stays
     * counted, so the next one is a resumption (`run.resumed`).
     */
    async handBack(run: RunRow, reason: string): Promise<void> {
      await deps.commit(
        run,
        async (tx, log) => {
          const row = await createRunsRepository(tx).updateOwned(run.id, run.lease_owner as string, {
            status: 'Queued',
            lease_owner: null,
            lease_expires_at: null,
            attempts: sql`greatest(attempts - 1, 1)`,
          });
          if (row) log.event('run.requeued', { reason });
        },
        { rowLocked: true },
      );
    },

    /**
     * Pauses the run between steps: Paused with no owner, its control request consumed, and its
     * deadline cleared (a resumed run gets its whole timeout again: days in Paused must not
     * count); `run.paused` and the `workflow.paused` activity. False when it was no longer the
     * claim's (nothing was written).
     */
    async pause(run: RunRow): Promise<boolean> {
      return deps.commit(
        run,
        async (tx, log) => {
          const row = await createRunsRepository(tx).updateOwned(run.id, run.lease_owner as string, {
            status: 'Paused',
            control: null,
            lease_owner: null,
            lease_expires_at: null,
            deadline_at: null,
          });
          if (!row) return false;
          log.event('run.paused', { next_step: row.next_step });
          await log.activity({
            kind: 'workflow.paused',
            subjectType: 'run',
            subjectId: run.id,
            message: `Workflow “${run.workflow_name}” paused`,
            data: { workflow_id: run.workflow_id },
          });
          return true;
        },
        { rowLocked: true },
      );
    },
  };
}

export type RunStatements = ReturnType<typeof createRunStatements>;

/** The event that ends a run, with its totals as the run's row has them after the change. */
function endEvent(end: RunEnd): RunStatementEvent {
  const type = { Completed: 'run.completed', Failed: 'run.failed', Cancelled: 'run.cancelled' }[end.status];
  return {
    type,
    data: sql`jsonb_build_object('status', run.status, 'failure_reason', run.failure_reason,
      'error', run.error, 'duration_ms', run.duration_ms, 'tokens_in', run.tokens_in,
      'tokens_out', run.tokens_out, 'cost', run.cost)`,
  };
}

/** The activity entry of a run's end. */
function endActivity(run: RunRow, end: RunEnd): ActivityStatementEntry {
  const { status } = end;
  const kind = {
    Completed: 'workflow.completed',
    Failed: 'workflow.failed',
    Cancelled: 'workflow.cancelled',
  }[status] as 'workflow.completed';
  return {
    kind,
    subjectType: 'run',
    subjectId: run.id,
    message: `Workflow “${run.workflow_name}” ${status.toLowerCase()}${end.error ? `: ${end.error}` : ''}`,
    data: sql`jsonb_build_object('workflow_id', run.workflow_id, 'duration_ms', run.duration_ms, 'cost', run.cost)`,
  };
}
