import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Caller } from '../../caller.ts';
import type { Db } from '../../db/transaction.ts';
import { AppError, conflict, invalidFields, notFound } from '../../errors.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { followLog } from '../../events/follow-log.ts';
import type { WorkflowsService } from '../workflows/workflows.service.ts';
import { type CommitRunChange, RUN_CONTROL_TOPIC, type WriteRun } from './run-log.ts';
import { canTransition, isFinal, renderGoal } from './run-state.ts';
import {
  createRunsRepository,
  type NewRun,
  type RunFilter,
  type RunRow,
  runFromRaw,
} from './runs.repository.ts';

export interface StartRunInput {
  inputs?: Record<string, string>;
  context?: Record<string, unknown>;
}

export interface RunsDependencies {
  db: Db;
  commit: CommitRunChange;
  write: WriteRun;
  workflows: Pick<WorkflowsService, 'get' | 'setStatus' | 'statusFromRun'>;
  hub: Pick<EventHub, 'publish' | 'subscribe'>;
  /**
   * Hands a run to the queue after its row is committed. `jobId` is stable for one
   * queued generation of the run, so handing it twice makes one job.
   */
  enqueue(runId: string, jobId: string): Promise<void>;
  /** Told when the queue could not take a run; the recovery sweep hands it over later. */
  onEnqueueError(error: unknown, runId: string): void;
}

/** Events read from the log per query while a stream catches up. */
const REPLAY_BATCH = 500;
/** A stream re-reads the log this often even without a notification (a lost one costs this much delay). */
const STREAM_POLL_MS = 5_000;

type Who = Pick<Caller, 'userId' | 'workspaceId'>;

/** One event of a run's stream: a name, its data and, for the log's events, the log id. */
export interface RunStreamEvent {
  event: string;
  data: unknown;
  id?: number;
}

/** Runs of workflows: start (queued), read, control, and follow their event log. */
export function createRunsService(deps: RunsDependencies) {
  const repo = createRunsRepository(deps.db);

  /** The queue job id of the run's current queued generation (see `enqueue`). */
  const jobIdOf = (run: Pick<RunRow, 'id' | 'status' | 'updated_at' | 'lease_expires_at'>) =>
    run.status === 'Running' && run.lease_expires_at
      ? `${run.id}.lease.${run.lease_expires_at.getTime()}`
      : `${run.id}.queued.${run.updated_at.getTime()}`;

  async function handToQueue(
    run: Pick<RunRow, 'id' | 'status' | 'updated_at' | 'lease_expires_at'>,
  ): Promise<void> {
    try {
      await deps.enqueue(run.id, jobIdOf(run));
    } catch (error) {
      deps.onEnqueueError(error, run.id);
    }
  }

  /**
   * Records a Queued run, its `run.queued` event and its workflow's status in one statement;
   * undefined when its idempotency key already started one. A statement that failed may still
   * have committed (its acknowledgement lost with the connection): the run's id, chosen here,
   * tells, and a run that exists is answered rather than reported as failed.
   */
  async function insertQueued(workspaceId: string, id: string, values: NewRun): Promise<RunRow | undefined> {
    try {
      const row = await deps.write(id, {
        ctes: [
          ['run', repo.insertQuery(values)],
          ['workflow', deps.workflows.statusFromRun('Queued')],
        ],
        events: [
          {
            type: 'run.queued',
            data: { workflow_id: values.workflow_id, inputs: Object.keys(values.inputs ?? {}) },
          },
        ],
        wakeReaders: false,
      });
      return row && runFromRaw(row);
    } catch (error) {
      const committed = await repo.find(workspaceId, id).catch(() => undefined);
      if (!committed) throw error;
      return committed;
    }
  }

  async function get(caller: Who, id: string): Promise<RunRow> {
    const run = await repo.find(caller.workspaceId, id);
    if (!run) throw notFound('run', id);
    return run;
  }

  /** Applies `to` to a run under a row lock, or 409 naming the statuses that allow it. */
  async function transition(
    caller: Who,
    id: string,
    action: string,
    decide: (run: RunRow) => { to: RunRow['status'] } | { control: 'pause' | 'cancel' } | undefined,
  ): Promise<RunRow> {
    const run = await get(caller, id);
    const changed = await deps.commit(
      run,
      async (tx, log) => {
        const runs = createRunsRepository(tx);
        const current = await runs.findForUpdate(caller.workspaceId, id);
        if (!current) throw notFound('run', id);
        const decision = decide(current);
        if (!decision) {
          throw conflict('run_state_conflict', `cannot ${action} a run that is ${current.status}`);
        }
        if ('control' in decision) {
          log.event(`run.${decision.control}_requested`, { by: caller.userId });
          return runs.update(caller.workspaceId, id, { control: decision.control });
        }
        const final = isFinal(decision.to);
        const updated = await runs.update(caller.workspaceId, id, {
          status: decision.to,
          control: null,
          ...(decision.to === 'Cancelled'
            ? { failure_reason: 'cancelled', error: `cancelled by ${caller.userId}` }
            : {}),
          ...(final ? { finished_at: new Date() } : {}),
        });
        const type = { Paused: 'run.paused', Cancelled: 'run.cancelled', Queued: 'run.resumed' }[
          decision.to as 'Paused'
        ];
        log.event(type, { by: caller.userId });
        if (decision.to === 'Paused' || decision.to === 'Cancelled') {
          await log.activity({
            kind: decision.to === 'Paused' ? 'workflow.paused' : 'workflow.cancelled',
            subjectType: 'run',
            subjectId: id,
            message: `Workflow “${current.workflow_name}” ${decision.to.toLowerCase()}`,
            data: { workflow_id: current.workflow_id },
            actor: caller.userId,
          });
        }
        return updated;
      },
      { rowLocked: true },
    ); // findForUpdate took the row lock first
    if (!changed) throw notFound('run', id);
    if (changed.workflow_id && changed.status !== 'Running') {
      await deps.workflows
        .setStatus(changed.workspace_id, changed.workflow_id, changed.status)
        .catch(() => {}); // the workflow's status is a hint; the run is the truth
    }
    return changed;
  }

  return {
    /** Per-variant sums over an experiment's units, and its run durations (docs/policies.md). */
    async experimentData(workspaceId: string, experimentId: string) {
      const [sums, durations, searches] = await Promise.all([
        repo.experimentSums(workspaceId, experimentId),
        repo.experimentDurations(workspaceId, experimentId),
        repo.experimentSearchSums(workspaceId, experimentId),
      ]);
      return { sums, durations, searches };
    },

    /**
     * Records the run as Queued (the row is the truth) and hands it to the queue after the
     * commit. A repeated `Idempotency-Key` answers the run it started the first time.
     */
    async start(
      caller: Who,
      workflowId: string,
      input: StartRunInput,
      idempotencyKey?: string,
    ): Promise<{ run: RunRow; replayed: boolean }> {
      const workflow = await deps.workflows.get(caller, workflowId);
      const inputs = input.inputs ?? {};
      const context = { ...workflow.context_template, ...input.context };
      if (idempotencyKey) {
        const existing = await repo.findByIdempotencyKey(caller.workspaceId, idempotencyKey);
        if (existing) return { run: sameRequest(existing, workflowId, inputs, context), replayed: true };
      }
      if (workflow.agents.length === 0) {
        throw conflict('workflow_not_runnable', `workflow ${workflowId} has no agents to run`);
      }
      const goal = renderGoal(workflow.goal ?? '', inputs);
      if (goal.text === undefined) {
        throw invalidFields(
          goal.missing.map((name) => ({
            field: `body.inputs.${name}`,
            message: `is required: the workflow's goal uses {{${name}}}`,
          })),
        );
      }
      const id = randomUUID();
      const inserted = await insertQueued(caller.workspaceId, id, {
        id,
        workspace_id: caller.workspaceId,
        workflow_id: workflow.id,
        workflow_name: workflow.name,
        inputs,
        context,
        plan: { goal: goal.text, execution_policy: workflow.execution_policy },
        agent_ids: workflow.agents,
        context_fields: Object.keys(context).sort(),
        idempotency_key: idempotencyKey ?? null,
        created_by: caller.userId,
      });
      if (!inserted) {
        // A concurrent request with the same key won the insert.
        const existing = await repo.findByIdempotencyKey(caller.workspaceId, idempotencyKey as string);
        if (!existing) throw new Error('idempotent run insert found no run');
        return { run: sameRequest(existing, workflowId, inputs, context), replayed: true };
      }
      await handToQueue(inserted);
      return { run: inserted, replayed: false };
    },

    get,

    /** The run with every attempt of every step. */
    async getWithSteps(caller: Who, id: string) {
      const run = await get(caller, id);
      return { ...run, steps: await repo.listSteps(run.id) };
    },

    list: (caller: Who, filter: RunFilter) => repo.list(caller.workspaceId, filter),

    summary: (caller: Who, limit: number) => repo.summary(caller.workspaceId, limit),

    /** Queued or Paused: Cancelled at once. Running: the worker aborts the step in flight and ends it. */
    async cancel(caller: Who, id: string): Promise<RunRow> {
      const run = await transition(caller, id, 'cancel', (current) =>
        current.status === 'Running'
          ? current.control === 'cancel'
            ? undefined
            : { control: 'cancel' }
          : canTransition(current.status, 'Cancelled')
            ? { to: 'Cancelled' }
            : undefined,
      );
      if (run.status === 'Running') deps.hub.publish(RUN_CONTROL_TOPIC, 0);
      return run;
    },

    /** Queued: Paused at once. Running: Paused after the step in flight. */
    pause: (caller: Who, id: string) =>
      transition(caller, id, 'pause', (current) =>
        current.status === 'Running'
          ? current.control
            ? undefined
            : { control: 'pause' }
          : current.status === 'Queued'
            ? { to: 'Paused' }
            : undefined,
      ),

    /** Paused: Queued again, continuing after its last completed step. */
    async resume(caller: Who, id: string): Promise<RunRow> {
      const run = await transition(caller, id, 'resume', (current) =>
        current.status === 'Paused' ? { to: 'Queued' } : undefined,
      );
      await handToQueue(run);
      return run;
    },

    /**
     * The run's event log from just after `after`, then live until the run ends. The
     * first event (`run`, no id) is the run as it is now, so a client sees its state at
     * once; ids are the log's, for `Last-Event-ID`.
     */
    async *events(
      caller: Who,
      id: string,
      after: number,
      signal: AbortSignal,
    ): AsyncGenerator<RunStreamEvent> {
      const run = await get(caller, id);
      yield { event: 'run', data: publicRun(run) };
      /** Paused (runs can stay paused for days) with nothing after `eventId`: the stream ends. */
      const restsAfter = async (eventId: number) => {
        const now = await repo.find(caller.workspaceId, id);
        const resting = !now || isFinal(now.status) || now.status === 'Paused';
        return resting && (await repo.eventsAfter(id, eventId, 1)).length === 0;
      };
      // A client resuming after the run's last event gets the snapshot and the end at once.
      if ((isFinal(run.status) || run.status === 'Paused') && (await restsAfter(after))) return;
      const followed = await followLog({
        hub: deps.hub,
        topic: `run:${id}`,
        after,
        latestId: async () => after,
        readAfter: async (from, limit) => ({ rows: await repo.eventsAfter(id, from, limit) }),
        signal,
        batchSize: REPLAY_BATCH,
        recheckMs: STREAM_POLL_MS,
      });
      for await (const row of followed.rows) {
        yield { id: row.id, event: row.type, data: { ...row.data, run_id: id, created_at: row.created_at } };
        if (ENDING_EVENTS.has(row.type)) return;
        if (row.type === 'run.paused' && (await restsAfter(row.id))) return;
      }
    },

    /**
     * Whether a client resuming the run's stream after `after` has seen all of it: the run has
     * ended and its log holds nothing after that id. The route answers such a reconnect 204,
     * so a standard EventSource stops instead of reconnecting forever. A Paused run is not
     * ended: it may be resumed, and its followers want to see that.
     */
    async streamEndedAt(caller: Who, id: string, after: number): Promise<boolean> {
      const run = await get(caller, id);
      return isFinal(run.status) && (await repo.eventsAfter(id, after, 1)).length === 0;
    },

    /**
     * Hands the queue every run it may have lost: Queued runs whose enqueue did not
     * happen (a crash between commit and enqueue, Redis away) and Running runs whose worker
     * died (lease expired). Called at start-up and periodically by consuming processes.
     */
    async recoverStranded(queuedForMs = 5_000, limit = 500): Promise<number> {
      const stranded = await repo.findStranded(queuedForMs, limit);
      for (const run of stranded) await handToQueue(run);
      return stranded.length;
    },
  };

  /** A retried request with the same key must be the same request. */
  function sameRequest(
    existing: RunRow,
    workflowId: string,
    inputs: Record<string, string>,
    context: Record<string, unknown>,
  ): RunRow {
    if (
      existing.workflow_id !== workflowId ||
      !isDeepStrictEqual(existing.inputs, inputs) ||
      !isDeepStrictEqual(existing.context, context)
    ) {
      throw new AppError(
        422,
        'idempotency_key_reused',
        'this Idempotency-Key already started a run with a different workflow, inputs or context',
      );
    }
    return existing;
  }
}

/** The events after which a run's stream has nothing more to say. */
const ENDING_EVENTS = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** What the `run` snapshot event carries. */
const publicRun = (run: RunRow) => ({
  id: run.id,
  workflow_id: run.workflow_id,
  status: run.status,
  control: run.control,
  next_step: run.next_step,
  failure_reason: run.failure_reason,
});

export type RunsService = ReturnType<typeof createRunsService>;
