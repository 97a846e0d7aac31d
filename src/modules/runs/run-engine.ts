import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PlaybookTrigger, ToolCallRecord } from '../../db/schema/runs.ts';
import type { Db } from '../../db/transaction.ts';
import { infrastructureFailure } from '../../errors.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { retryDelayMs } from '../../lib/backoff.ts';
import { type AgentTurn, startAgentTurn } from '../agents/agent-turn.service.ts';
import type { AgentRow, AgentsService } from '../agents/agents.service.ts';
import type { PoliciesService } from '../policies/policies.service.ts';
import type { ModelTurns } from '../providers/providers.service.ts';
import type { WorkflowsService } from '../workflows/workflows.service.ts';
import { type CommitRunChange, RUN_CONTROL_TOPIC, type WriteRun } from './run-log.ts';
import { agentPrompt, MERGE_SYSTEM, mergePrompt, systemPrompt, withPlaybooks } from './run-prompts.ts';
import type { RunEnd, RunRow } from './runs.repository.ts';
import { createRunStatements, type RunPlaybooks, type StepRecord } from './runs.statements.ts';

export interface RunEngineDependencies {
  db: Db;
  /** Rare changes (pause, hand back): a transaction with the run's log. */
  commit: CommitRunChange;
  /** The hot path (claim, step start, step end, finish): one statement each. */
  write: WriteRun;
  agents: Pick<AgentsService, 'ofRunQuery' | 'agentsOfRun' | 'statusFromRun'>;
  workflows: Pick<WorkflowsService, 'setStatus' | 'statusFromRun'>;
  /** Model turns, the agent's tools bound for each (`createModelTurns`). */
  models: ModelTurns;
  hub: Pick<EventHub, 'subscribe'>;
  /** Names this process's claims (`lease_owner` is it plus a suffix per execution). */
  owner: string;
  /** How long a claim lasts without renewal; renewed every third of it (default 15 s). */
  leaseMs?: number;
  /**
   * A step's start (its row Running, `step.started`, the agent Busy) is written once the model
   * has not answered within this; a quicker step is written once, started and ended in one
   * statement (100 ms).
   */
  stepStartDelayMs?: number;
  /** Claims after which a run that keeps losing its worker fails with reason interrupted (3). */
  maxClaims?: number;
  /** Waits between retries; the abort signal cuts it short. */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
  /** Playbooks attached to agents: read by the run's claim, recorded on the steps they trigger. */
  playbooks?: RunPlaybooks;
  /** Assembles the context of an agent that has a policy (docs/policies.md). */
  policies?: Pick<PoliciesService, 'assembleForAgent'>;
}

/** A claimed run with what its steps need: its agents by id, and the playbooks each triggers. */
interface Claimed {
  run: RunRow;
  agents: Map<string, AgentRow>;
  triggers(agent: AgentRow | undefined): PlaybookTrigger[];
}

/** Why the engine stopped a run before its steps were done. */
type Interruption = 'cancel' | 'timeout' | 'lease_lost' | 'shutdown' | 'pause';

class RunInterrupted extends Error {
  readonly reason: Interruption;
  constructor(reason: Interruption) {
    super(`run interrupted: ${reason}`);
    this.reason = reason;
  }
}

/** A step to execute. `last`: its success ends the run `Completed` in the same commit. */
interface StepPlan {
  position: number;
  prompt: string;
  kind?: 'agent' | 'merge';
  agent?: AgentRow;
  agentId?: string;
  last?: boolean;
  /** Attached playbooks whose rules hold: prepended to the prompt and recorded on the step. */
  triggers?: PlaybookTrigger[];
}

/** A step's answer, as the run stores it. */
interface StepResult {
  output: string;
  toolCalls: ToolCallRecord[];
}

/**
 * Executes runs: the handler of the `run.execute` job. The row is the truth: a run is
 * claimed with a lease (so of two workers handed the same run, one executes it), each
 * finished step is committed with the run's progress, and a run whose worker died is
 * claimed again and continues after its last completed step.
 *
 * This file is the orchestration only: when a run is claimed, renewed, paused, cancelled,
 * timed out, retried or handed back, and the order of its steps (sequential with a carry, or
 * parallel then a merge). What each of those changes writes is `runs.statements.ts`; what a
 * step asks is `run-prompts.ts`; how an agent answers is the agent turn shared with chat
 * (`agents/agent-turn.service.ts`). A new way to order steps (a workflow graph) replaces
 * `executeSteps` and reuses `executeStep`, the statements and the turn as they are.
 */
export function createRunEngine(deps: RunEngineDependencies) {
  const leaseMs = deps.leaseMs ?? 15_000;
  const maxClaims = deps.maxClaims ?? 3;
  const startDelayMs = deps.stepStartDelayMs ?? 100;
  const wait = deps.wait ?? ((ms, signal) => sleep(ms, undefined, { signal }));
  const statements = createRunStatements({
    db: deps.db,
    commit: deps.commit,
    write: deps.write,
    agents: deps.agents,
    workflows: deps.workflows,
    ...(deps.playbooks ? { playbooks: deps.playbooks } : {}),
    leaseMs,
    maxClaims,
  });
  /** This process's executions by owner name: what a control request may concern. */
  const executing = new Map<string, { runId: string; onControl(control: string | null): void }>();
  let watchingControls = false;

  /**
   * One subscription per process to control requests (a cancel wakes the worker at once
   * rather than at the next heartbeat): each wakes one read of the controls of the runs this
   * process executes, rather than a subscription per run.
   */
  function watchControls(): void {
    if (watchingControls) return;
    watchingControls = true;
    deps.hub.subscribe(RUN_CONTROL_TOPIC, () => {
      const runIds = [...new Set([...executing.values()].map((execution) => execution.runId))];
      if (runIds.length === 0) return;
      statements.controlsOf(runIds).then(
        (rows) => {
          const controls = new Map(rows.map((row) => [row.id, row.control]));
          for (const execution of executing.values()) {
            const control = controls.get(execution.runId);
            if (control) execution.onControl(control);
          }
        },
        () => {}, // the heartbeat reads the control too
      );
    });
  }

  /** Runs the job: returns when the run is finished, paused, or handed back. */
  async function execute(runId: string, jobSignal: AbortSignal): Promise<void> {
    // Each execution claims under its own name, so a run this same process claims again
    // (after its lease was lost) is never confused with the execution that lost it.
    const owner = `${deps.owner}/${randomBytes(4).toString('hex')}`;
    const claimed = await claim(runId, owner);
    // Not claimable: finished, paused, cancelled, or another live worker has it.
    if (!claimed) return;
    const { run } = claimed;
    const controller = new AbortController();
    const interrupt = (reason: Interruption) => {
      if (!controller.signal.aborted) controller.abort(new RunInterrupted(reason));
    };
    const onJobAbort = () => interrupt('shutdown');
    jobSignal.addEventListener('abort', onJobAbort, { once: true });
    if (jobSignal.aborted) interrupt('shutdown');

    const deadline = run.deadline_at ? run.deadline_at.getTime() - Date.now() : Number.POSITIVE_INFINITY;
    const timeout = setTimeout(() => interrupt('timeout'), Math.max(0, Math.min(deadline, 2 ** 31 - 1)));
    const checkControl = (control: string | null | undefined) => {
      if (control === 'cancel') interrupt('cancel');
    };
    const heartbeat = setInterval(() => {
      statements.renewLease(run.id, owner).then(
        (row) => (row ? checkControl(row.control) : interrupt('lease_lost')),
        () => {}, // a failed renewal is retried next beat; the lease outlives two misses
      );
    }, leaseMs / 3);
    watchControls();
    executing.set(owner, { runId: run.id, onControl: checkControl });

    try {
      if (run.control === 'cancel') interrupt('cancel');
      if (deadline <= 0) interrupt('timeout');
      controller.signal.throwIfAborted();
      if (run.attempts > maxClaims) {
        throw Object.assign(new Error(`the run lost its worker ${run.attempts - 1} times`), { final: true });
      }
      const { output, finished } = await executeSteps(claimed, controller.signal);
      if (!finished) await finish(run, { status: 'Completed', output });
    } catch (error) {
      const reason =
        error instanceof RunInterrupted
          ? error.reason
          : controller.signal.aborted
            ? (controller.signal.reason as RunInterrupted).reason
            : undefined;
      await settle(run, reason, error);
    } finally {
      clearTimeout(timeout);
      clearInterval(heartbeat);
      executing.delete(owner);
      jobSignal.removeEventListener('abort', onJobAbort);
    }
  }

  /**
   * Claims the run for `owner` (see `RunStatements.claim`) and prepares what its steps need:
   * its agents by id and, per agent, the attached playbooks whose rules hold for this run.
   */
  async function claim(runId: string, owner: string): Promise<Claimed | undefined> {
    const claimed = await statements.claim(runId, owner);
    if (!claimed) return undefined;
    const { run } = claimed;
    const triggersOf = deps.playbooks?.triggersFrom(claimed.playbooks, {
      goal: run.plan.goal,
      context: run.context,
      inputs: run.inputs,
      workflow: run.workflow_name,
    });
    return {
      run,
      agents: claimed.agents,
      triggers: (agent) => (agent && triggersOf ? triggersOf(agent) : []),
    };
  }

  /**
   * Runs the steps not yet completed. `finished`: the last step's commit also ended the run
   * `Completed` (one transaction instead of two); otherwise the caller ends it.
   */
  async function executeSteps(
    { run, agents, triggers }: Claimed,
    signal: AbortSignal,
  ): Promise<{ output: string; finished: boolean }> {
    // A first claim has no steps yet; a later one continues after the last completed.
    const steps = run.attempts === 1 ? [] : await statements.listSteps(run.id);
    const done = new Map(steps.filter((s) => s.status === 'Completed').map((s) => [s.position, s]));
    if (run.plan.execution_policy.mode === 'parallel') {
      const pending = run.agent_ids
        .map((id, position) => ({ id, position }))
        .filter((s) => !done.has(s.position));
      const results = await Promise.all(
        pending.map(({ id, position }) =>
          executeStep(
            run,
            {
              position,
              agent: agents.get(id),
              agentId: id,
              prompt: agentPrompt(run),
              triggers: triggers(agents.get(id)),
            },
            signal,
          ),
        ),
      );
      const outputs = run.agent_ids.map((id, position) => {
        const result = results[pending.findIndex((s) => s.position === position)];
        const text = result?.output ?? done.get(position)?.output ?? null;
        return { name: agents.get(id)?.name ?? id, text };
      });
      const usable = outputs.filter((o): o is { name: string; text: string } => o.text !== null);
      if (usable.length <= 1) return { output: usable[0]?.text ?? '', finished: false };
      await pauseIfAsked(run, signal);
      const merged = await executeStep(
        run,
        { position: run.agent_ids.length, kind: 'merge', prompt: mergePrompt(run, usable), last: true },
        signal,
      );
      return { output: merged?.output ?? '', finished: merged !== undefined };
    }
    let carry = run.carry;
    let claimedJustNow = true;
    let finished = false;
    for (const [position, id] of run.agent_ids.entries()) {
      if (done.has(position)) continue;
      // The claim has just read the run's control: the first boundary needs no read of its own.
      if (claimedJustNow) checkPause(run.control, signal);
      else await pauseIfAsked(run, signal);
      claimedJustNow = false;
      const result = await executeStep(
        run,
        {
          position,
          agent: agents.get(id),
          agentId: id,
          prompt: agentPrompt(run, carry, agents.get(run.agent_ids[position - 1] ?? '')),
          last: position === run.agent_ids.length - 1,
          triggers: triggers(agents.get(id)),
        },
        signal,
      );
      if (result) carry = result.output;
      finished = result !== undefined && position === run.agent_ids.length - 1;
    }
    return { output: carry ?? '', finished };
  }

  /** Between steps: a pause asked for through the API takes effect here. */
  async function pauseIfAsked(run: RunRow, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    checkPause(await statements.controlOf(run.id), signal);
  }

  function checkPause(control: string | null | undefined, signal: AbortSignal): void {
    signal.throwIfAborted();
    if (control === 'pause') throw new RunInterrupted('pause');
    if (control === 'cancel') throw new RunInterrupted('cancel');
  }

  /**
   * One step with the workflow's error handling: `retry` tries again with backoff,
   * `continue` records the failure and goes on (undefined), `stop` fails the run.
   */
  async function executeStep(
    run: RunRow,
    step: StepPlan,
    signal: AbortSignal,
  ): Promise<StepResult | undefined> {
    const policy = run.plan.execution_policy;
    const attempts = policy.error_handling === 'retry' ? policy.max_retries + 1 : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await attemptStep(run, { ...step, attempt }, signal);
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        // Not the step's failure: the run is no longer this worker's, or the database is away
        // or busy, met by the engine or inside the provider call, a tool or the policy's
        // assembly (the run is handed back and continues after its last completed step).
        if (error instanceof RunInterrupted) throw error;
        const infrastructure = infrastructureFailure(error);
        if (infrastructure) throw infrastructure;
        if (attempt < attempts) {
          await wait(retryDelayMs(attempt, 500, { capMs: 30_000, random: deps.random }), signal).catch(() => {
            throw signal.reason;
          });
          continue;
        }
        if (policy.error_handling === 'continue') return undefined;
        throw Object.assign(error instanceof Error ? error : new Error(String(error)), { stepFailed: true });
      }
    }
  }

  /**
   * One attempt of a step: its start is written if the model is slow to answer (`deferStart`),
   * the agent's turn runs, and its end is written with the run's progress (and, for the last
   * step, the run's end). A failure is recorded on the step and rethrown.
   */
  async function attemptStep(
    run: RunRow,
    step: StepPlan & { attempt: number },
    signal: AbortSignal,
  ): Promise<StepResult> {
    const { agent } = step;
    const kind = step.kind ?? 'agent';
    const label = kind === 'merge' ? 'merge' : (agent?.name ?? step.agentId ?? 'agent');
    const triggers = step.triggers ?? [];
    const prompt = withPlaybooks(step.prompt, triggers);
    const owner = run.lease_owner as string;
    const record: StepRecord = statements.stepRecord(run, {
      position: step.position,
      attempt: step.attempt,
      kind,
      agent,
      label,
      prompt,
      triggers,
    });
    const countTriggers = async () => {
      if (triggers.length > 0 && step.attempt === 1) {
        await deps.playbooks?.countTriggers(
          deps.db,
          triggers.map((trigger) => trigger.attachment_id),
        );
      }
    };
    const start = deferStart(startDelayMs, async () => {
      if (!(await statements.startStep(run, owner, record))) throw new RunInterrupted('lease_lost');
      await countTriggers();
    });

    const began = performance.now();
    let turn: AgentTurn | undefined;
    const toolCalls = (): ToolCallRecord[] => turn?.toolCalls ?? [];
    try {
      if (kind === 'agent' && !agent)
        throw new Error(`agent ${step.agentId} no longer exists in this workspace`);
      turn = await startAgentTurn(
        { models: deps.models, policies: deps.policies },
        {
          workspaceId: run.workspace_id,
          userId: run.created_by ?? 'system',
          ...(agent ? { agent } : {}),
          usedBy: { runId: run.id },
          system: kind === 'merge' ? MERGE_SYSTEM : systemPrompt(agent as AgentRow),
          prompt,
          facts: {
            ...(typeof run.context.conversation_id === 'string'
              ? { conversationId: run.context.conversation_id }
              : {}),
            variables: run.inputs,
            context: run.context,
          },
          signal,
        },
      );
      // The run records which policy its agent spoke (the first agent with one).
      if (turn.policy) await statements.recordPolicy(run.id, turn.policy);
      const answer = await turn.complete();
      // Unwritten yet (a quick step), the start is written with the end, in its statement.
      const startWritten = await start.settle();
      // The last step's success ends the run in the same statement.
      const end: RunEnd | undefined = step.last ? { status: 'Completed', output: answer.text } : undefined;
      const progressed = await statements.completeStep(
        run,
        owner,
        record,
        {
          text: answer.text,
          toolCalls: toolCalls(),
          provider: answer.provider,
          model: answer.model,
          usage: answer.usage,
          cost: answer.cost,
          price: answer.price,
          fallbacks: answer.fallbacks,
          degraded: answer.degraded,
          latencyMs: Math.round(performance.now() - began),
        },
        { startWritten, ...(end ? { end } : {}), ...(kind === 'agent' ? { agentName: label } : {}) },
      );
      if (!progressed) throw new RunInterrupted('lease_lost');
      if (!startWritten) await countTriggers();
      return { output: answer.text, toolCalls: toolCalls() };
    } catch (error) {
      // A start that failed to be written (the lease lost, the database away) recorded nothing
      // of this attempt: its failure is the one to report, and there is no step to fail.
      const startWritten = await start.settle();
      const interrupted = signal.aborted
        ? (signal.reason as RunInterrupted)
        : error instanceof RunInterrupted
          ? error
          : undefined;
      // Never started in the database and no longer this worker's: the new owner runs the step.
      if (!startWritten && interrupted?.reason === 'lease_lost') throw interrupted;
      // The database away or busy interrupts the attempt as a lost worker would: not the agent's failure.
      const infrastructure = interrupted ? undefined : infrastructureFailure(error);
      const message = interrupted
        ? `interrupted: ${interrupted.reason}`
        : infrastructure
          ? `interrupted: ${infrastructure.code}`
          : describe(error);
      // Recorded whoever owns the run now: this attempt failed either way.
      await statements
        .failStep(
          run,
          record,
          {
            message,
            toolCalls: toolCalls(),
            latencyMs: Math.round(performance.now() - began),
            agentFailed: !interrupted && !infrastructure,
          },
          { startWritten },
        )
        .catch(() => {}); // recording the failure must not hide it
      if (!startWritten) await countTriggers().catch(() => {});
      throw interrupted ?? infrastructure ?? error;
    }
  }

  /** Ends the run in a final status with its totals, while this worker owns it. */
  function finish(run: RunRow, end: RunEnd): Promise<void> {
    return statements.finish(run, end);
  }

  /**
   * Hands the run back: Queued again with no owner, so the next claim need not wait for the
   * lease. This claim is not counted against `maxClaims`, which counts workers lost: a run
   * handed back because the database was away or busy, or its worker was stopping, must
   * never end Failed `interrupted` for it, however often that happens.
   */
  function handBack(run: RunRow, reason: string): Promise<void> {
    return statements.handBack(run, reason);
  }

  /** After an interruption or a failure: the status the run ends in, or hands back. */
  async function settle(run: RunRow, reason: Interruption | undefined, error: unknown): Promise<void> {
    switch (reason) {
      case 'lease_lost':
        return; // another worker owns the run now
      case 'cancel':
        return finish(run, {
          status: 'Cancelled',
          failure_reason: 'cancelled',
          error: 'cancelled by request',
        });
      case 'timeout':
        return finish(run, {
          status: 'Failed',
          failure_reason: 'timeout',
          error: `the run exceeded its ${run.plan.execution_policy.timeout_seconds} s timeout`,
        });
      case 'pause':
        await statements.pause(run);
        if (run.workflow_id) {
          // A hint beside the run's truth, as in a control request's transition.
          await deps.workflows.setStatus(run.workspace_id, run.workflow_id, 'Paused').catch(() => {});
        }
        return;
      case 'shutdown':
        // The process is stopping: hand the run back at once rather than after the lease.
        return handBack(run, 'worker stopping');
      default: {
        const final = (error as { final?: boolean }).final === true;
        if (final || (error as { stepFailed?: boolean }).stepFailed === true) {
          return finish(run, {
            status: 'Failed',
            failure_reason: final ? 'interrupted' : 'step_failed',
            error: describe(error),
          });
        }
        // Not the workflow's failure but the engine's (the database dropped, a deadlock): the
        // run goes back to the queue, and the job's retry (or the sweep) executes it again
        // after its last completed step.
        await handBack(run, 'engine error').catch(() => {});
        throw error;
      }
    }
  }

  return { execute };
}

export type RunEngine = ReturnType<typeof createRunEngine>;

/**
 * A step's start, written by `write` once `delayMs` have passed unless `settle` comes first.
 * `settle` stops the clock and says whether the start was written (waiting for a write under
 * way); it rejects as that write did, so a start that failed is never mistaken for written.
 */
function deferStart(delayMs: number, write: () => Promise<void>) {
  let written: Promise<void> | undefined;
  const timer = setTimeout(() => {
    written = write();
    written.catch(() => {}); // reported by settle
  }, delayMs);
  return {
    async settle(): Promise<boolean> {
      clearTimeout(timer);
      if (!written) return false;
      await written;
      return true;
    },
  };
}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}
