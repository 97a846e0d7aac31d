import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type SQL, sql } from 'drizzle-orm';
import type { PlaybookTrigger, ToolCallRecord } from '../../db/schema/runs.ts';
import type { Db } from '../../db/transaction.ts';
import { infrastructureFailure } from '../../errors.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { retryDelayMs } from '../../lib/backoff.ts';
import type { ActivityStatementEntry } from '../activity/activity.service.ts';
import type { AgentRow, AgentsService } from '../agents/agents.service.ts';
import type { PoliciesService } from '../policies/policies.service.ts';
import type { ModelEvent, ModelGateway, ModelRequest } from '../providers/providers.service.ts';
import type { WorkflowsService } from '../workflows/workflows.service.ts';
import { type CommitRunChange, RUN_CONTROL_TOPIC, type RunStatementEvent, type WriteRun } from './run-log.ts';
import { createRunsRepository, type RunEnd, type RunRow, runFromRaw } from './runs.repository.ts';

export interface RunEngineDependencies {
  db: Db;
  /** Rare changes (pause, hand back): a transaction with the run's log. */
  commit: CommitRunChange;
  /** The hot path (claim, step start, step end, finish): one statement each. */
  write: WriteRun;
  agents: Pick<AgentsService, 'ofRunQuery' | 'agentsOfRun' | 'statusFromRun'>;
  workflows: Pick<WorkflowsService, 'setStatus' | 'statusFromRun'>;
  models: Pick<ModelGateway, 'stream'>;
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
  playbooks?: {
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
  };
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
 */
export function createRunEngine(deps: RunEngineDependencies) {
  const leaseMs = deps.leaseMs ?? 15_000;
  const maxClaims = deps.maxClaims ?? 3;
  const startDelayMs = deps.stepStartDelayMs ?? 100;
  const wait = deps.wait ?? ((ms, signal) => sleep(ms, undefined, { signal }));
  const repo = createRunsRepository(deps.db);
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
      repo.controlsOf(runIds).then(
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
      repo.renewLease(run.id, owner, leaseMs).then(
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
   * Claims the run for `owner` and, in the same statement, starts it (first claim: its
   * workflow shows Running) or settles what its lost worker left (a later claim: the steps
   * left Running fail); it also reads the run's agents and the playbooks attached to them.
   * Undefined when it is not claimable. A run past its claim limit is claimed without
   * starting: the caller fails it.
   */
  async function claim(runId: string, owner: string): Promise<Claimed | undefined> {
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
    const run = runFromRaw(row);
    const triggersOf = deps.playbooks?.triggersFrom(row.run_playbooks, {
      goal: run.plan.goal,
      context: run.context,
      inputs: run.inputs,
      workflow: run.workflow_name,
    });
    return {
      run,
      agents: deps.agents.agentsOfRun(row.run_agents),
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
    const steps = run.attempts === 1 ? [] : await repo.listSteps(run.id);
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
    checkPause((await repo.findById(run.id))?.control, signal);
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

  async function attemptStep(
    run: RunRow,
    step: StepPlan & { attempt: number },
    signal: AbortSignal,
  ): Promise<StepResult> {
    const { agent } = step;
    const kind = step.kind ?? 'agent';
    const label = kind === 'merge' ? 'merge' : (agent?.name ?? step.agentId ?? 'agent');
    const triggers = step.triggers ?? [];
    const prompt =
      triggers.length > 0
        ? `${triggers.map((trigger) => trigger.text).join('\n\n')}\n\n${step.prompt}`
        : step.prompt;
    const owner = run.lease_owner as string;
    const { row, events: startEvents, activity: startActivity } = stepStart(run, step, kind, label, prompt);
    const stepId = row.id;
    const countTriggers = async () => {
      if (triggers.length > 0 && step.attempt === 1) {
        await deps.playbooks?.countTriggers(
          deps.db,
          triggers.map((trigger) => trigger.attachment_id),
        );
      }
    };
    const start = deferStart(startDelayMs, async () => {
      const started = await deps.write(run.id, {
        ctes: [
          ['run', repo.ownedQuery(run.id, owner)],
          ['step', repo.insertStepQuery({ ...row, status: 'Running' })],
          ...agentStatus(agent, 'Busy'),
        ],
        events: startEvents,
        activity: startActivity,
      });
      if (!started) throw new RunInterrupted('lease_lost');
      await countTriggers();
    });

    const began = performance.now();
    const toolCalls: ToolCallRecord[] = [];
    try {
      if (kind === 'agent' && !agent)
        throw new Error(`agent ${step.agentId} no longer exists in this workspace`);
      // An agent with a policy speaks the policy's assembled context; the run records which.
      const policy =
        kind === 'agent' && agent?.policy && deps.policies
          ? await deps.policies.assembleForAgent({
              workspaceId: run.workspace_id,
              userId: run.created_by ?? 'system',
              policy: agent.policy,
              agentId: agent.id,
              ...(typeof run.context.conversation_id === 'string'
                ? { conversationId: run.context.conversation_id }
                : {}),
              variables: run.inputs,
              context: run.context,
            })
          : undefined;
      if (policy) await repo.recordPolicy(run.id, policy.record);
      const request: ModelRequest = {
        workspaceId: run.workspace_id,
        userId: run.created_by ?? 'system',
        usedBy: { runId: run.id, ...(agent ? { agentId: agent.id } : {}) },
        model: policy?.model ?? agent?.model ?? null,
        system: kind === 'merge' ? MERGE_SYSTEM : (policy?.system ?? systemPrompt(agent as AgentRow)),
        messages: [...(policy?.messages ?? []), { role: 'user', content: prompt }],
        tools: policy?.tools ?? agent?.tools ?? [],
        signal,
      };
      let finish: Extract<ModelEvent, { type: 'finish' }> | undefined;
      for await (const event of deps.models.stream(request)) {
        if (event.type === 'tool_call')
          toolCalls.push({ id: event.id, name: event.name, input: event.input, output: null });
        if (event.type === 'tool_result') {
          const call = toolCalls.find((c) => c.id === event.id);
          if (call) Object.assign(call, { output: event.output }, event.error ? { error: event.error } : {});
        }
        if (event.type === 'finish') finish = event;
      }
      if (!finish) throw new Error('the model stream ended without an answer');
      const answer = finish;
      // Unwritten yet (a quick step), the start is written with the end, in its statement.
      const startWritten = await start.settle();
      // The last step's success ends the run in the same statement.
      const end: RunEnd | undefined = step.last ? { status: 'Completed', output: answer.text } : undefined;
      const completed = {
        status: 'Completed' as const,
        output: answer.text,
        tool_calls: toolCalls,
        provider: answer.provider,
        model: answer.model,
        tokens_in: answer.usage.input_tokens,
        tokens_out: answer.usage.output_tokens,
        cost: answer.cost,
        price: answer.price,
        latency_ms: Math.round(performance.now() - began),
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
                ...(kind === 'agent' ? { agentName: label } : {}),
                tools: toolCalls.map((c) => c.name),
              },
              end,
            ),
          ],
          [
            'step',
            startWritten
              ? repo.endStepQuery(stepId, completed)
              : repo.insertStepQuery({ ...row, ...completed }),
          ],
          ...agentStatus(agent, 'Idle'),
          ...(end ? [['workflow', deps.workflows.statusFromRun(end.status)] as [string, SQL]] : []),
        ],
        events: [
          ...(startWritten ? [] : startEvents),
          ...toolCalls.map((call) => ({ type: 'tool_call', data: { step_id: stepId, ...call } })),
          {
            type: 'step.completed',
            data: {
              step_id: stepId,
              position: step.position,
              attempt: step.attempt,
              provider: answer.provider,
              model: answer.model,
              usage: answer.usage,
              cost: answer.cost,
              fallbacks: answer.fallbacks,
            },
          },
          ...(end ? [endEvent(end)] : []),
        ],
        activity: [
          ...(startWritten ? [] : startActivity),
          ...(agent
            ? [
                {
                  kind: 'agent.completed' as const,
                  subjectType: 'agent',
                  subjectId: agent.id,
                  message: `Agent “${agent.name}” completed a task of “${run.workflow_name}”`,
                  data: { run_id: run.id },
                },
              ]
            : []),
          ...(end ? [endActivity(run, end)] : []),
        ],
      });
      if (!progressed) throw new RunInterrupted('lease_lost');
      if (!startWritten) await countTriggers();
      return { output: answer.text, toolCalls };
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
      const agentFailed = !interrupted && !infrastructure;
      const failed = {
        status: 'Failed' as const,
        error: message,
        tool_calls: toolCalls,
        latency_ms: Math.round(performance.now() - began),
        finished_at: new Date(),
      };
      // Recorded whoever owns the run now: this attempt failed either way.
      await deps
        .write(run.id, {
          ctes: [
            ['run', repo.lockedQuery(run.id)],
            [
              'step',
              startWritten ? repo.endStepQuery(stepId, failed) : repo.insertStepQuery({ ...row, ...failed }),
            ],
            ...agentStatus(agent, agentFailed ? 'Error' : 'Idle'),
          ],
          events: [
            ...(startWritten ? [] : startEvents),
            {
              type: 'step.failed',
              data: { step_id: stepId, position: step.position, attempt: step.attempt, error: message },
            },
          ],
          activity: [
            ...(startWritten ? [] : startActivity),
            ...(agent && agentFailed
              ? [
                  {
                    kind: 'agent.failed' as const,
                    subjectType: 'agent',
                    subjectId: agent.id,
                    message: `Agent “${agent.name}” failed a task of “${run.workflow_name}”: ${message}`,
                    data: { run_id: run.id },
                  },
                ]
              : []),
          ],
        })
        .catch(() => {}); // recording the failure must not hide it
      if (!startWritten) await countTriggers().catch(() => {});
      throw interrupted ?? infrastructure ?? error;
    }
  }

  /** The agent's shown status as a part of a step's statement; none for a merge step. */
  function agentStatus(agent: AgentRow | undefined, status: AgentRow['status']): [string, SQL][] {
    return agent ? [['agent', deps.agents.statusFromRun(agent.id, status)]] : [];
  }

  /** Ends the run in a final status with its totals, while this worker owns it; one statement. */
  async function finish(run: RunRow, end: RunEnd): Promise<void> {
    await deps.write(run.id, {
      ctes: [
        ['run', repo.finishQuery(run.id, run.lease_owner as string, end)],
        ['workflow', deps.workflows.statusFromRun(end.status)],
      ],
      events: [endEvent(end)],
      activity: [endActivity(run, end)],
    });
  }

  /**
   * Hands the run back: Queued again with no owner, so the next claim need not wait for the
   * lease. This claim is not counted against `maxClaims`, which counts workers lost: a run
   * handed back because the database was away or busy, or its worker was stopping, must
   * never end Failed `interrupted` for it, however often that happens.
   */
  async function handBack(run: RunRow, reason: string): Promise<void> {
    await deps.commit(
      run,
      async (tx, log) => {
        const row = await createRunsRepository(tx).updateOwned(run.id, run.lease_owner as string, {
          status: 'Queued',
          lease_owner: null,
          lease_expires_at: null,
          // The first claim stays counted: the next one is a resumption (`run.resumed`).
          attempts: sql`greatest(attempts - 1, 1)`,
        });
        if (row) log.event('run.requeued', { reason });
      },
      { rowLocked: true },
    );
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
        await deps.commit(
          run,
          async (tx, log) => {
            const row = await createRunsRepository(tx).updateOwned(run.id, run.lease_owner as string, {
              status: 'Paused',
              control: null,
              lease_owner: null,
              lease_expires_at: null,
              // A resumed run gets its whole timeout again: days in Paused must not count.
              deadline_at: null,
            });
            if (!row) return;
            log.event('run.paused', { next_step: row.next_step });
            await log.activity({
              kind: 'workflow.paused',
              subjectType: 'run',
              subjectId: run.id,
              message: `Workflow “${run.workflow_name}” paused`,
              data: { workflow_id: run.workflow_id },
            });
          },
          { rowLocked: true },
        );
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

/**
 * What a step's start records, written alone or with its end: the step's row (its status
 * aside), `playbook.triggered` and `step.started`, and the agent's `agent.started`. The step's
 * id is chosen here, so its events name it whichever statement writes its row.
 */
function stepStart(
  run: RunRow,
  step: StepPlan & { attempt: number },
  kind: 'agent' | 'merge',
  label: string,
  prompt: string,
) {
  const { agent } = step;
  const triggers = step.triggers ?? [];
  const id = randomUUID();
  const row = {
    id,
    position: step.position,
    attempt: step.attempt,
    kind,
    agent_id: agent?.id ?? null,
    agent_name: kind === 'merge' ? null : label,
    prompt,
    playbook_triggers: triggers,
    started_at: new Date(),
  };
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
  return { row, events, activity };
}

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

const MERGE_SYSTEM =
  'You merge the answers of several agents who worked on the same goal in parallel into one answer. Keep what they agree on, resolve conflicts explicitly, and do not invent anything none of them said.';

function systemPrompt(agent: AgentRow): string {
  const identity = `You are ${agent.name}${agent.role ? `, ${agent.role}` : ''}.`;
  return agent.system_prompt ? `${identity}\n\n${agent.system_prompt}` : identity;
}

/** What an agent is asked: the goal, the run's context, and the previous agent's output. */
function agentPrompt(run: RunRow, carry?: string | null, previous?: AgentRow): string {
  const parts = [`Goal: ${run.plan.goal}`];
  if (Object.keys(run.context).length > 0) parts.push(`Context:\n${JSON.stringify(run.context, null, 2)}`);
  if (carry) parts.push(`Output of the previous agent${previous ? ` (${previous.name})` : ''}:\n${carry}`);
  return parts.join('\n\n');
}

function mergePrompt(run: RunRow, outputs: { name: string; text: string }[]): string {
  return [`Goal: ${run.plan.goal}`, ...outputs.map((o) => `### ${o.name}\n${o.text}`)].join('\n\n');
}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}
