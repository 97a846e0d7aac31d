import type { Caller } from '../../caller.ts';
import { afterCommit, type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, infrastructureFailure, invalid, invalidFields, notFound } from '../../errors.ts';
import { ConditionError, createNormaliser, evaluateCondition, parseCondition } from '../../lib/conditions.ts';
import { mapItems } from '../../lib/page.ts';
import type { Logger } from '../../logger.ts';
import type { ActivityInput, ActivityService } from '../activity/activity.service.ts';
import { type AuditRecorder, changesBetween, type RecordedBy } from '../audit/audit.service.ts';
import type { RunsService } from '../runs/runs.service.ts';
import type { WorkflowsService } from '../workflows/workflows.service.ts';
import type { Category } from './categories.ts';
import { titleCase } from './describe.ts';
import { type MinedPattern, minePatterns } from './mine-patterns.ts';
import {
  type AttachedPlaybook,
  createPlaybooksRepository,
  type MinedPlaybook,
  type MinePhase,
  type PlaybookFilter,
  type PlaybookMineRow,
  type PlaybookRecord,
} from './playbooks.repository.ts';
import { DEFAULT_SCHEDULE, nextSlot, scheduleProblems } from './schedule.ts';
import { confidenceBand, wilsonLowerBound } from './scoring.ts';
import { normaliseName } from './transactions.ts';

type Who = Pick<Caller, 'userId' | 'workspaceId' | 'tenantId' | 'role'>;

export type TimeRange =
  | 'last_7_days'
  | 'last_30_days'
  | 'last_90_days'
  | { from: string | Date; to?: string | Date };

export interface MineInput {
  tenant_id?: string;
  min_support: number;
  min_confidence: number;
  top_k: number;
  time_range?: TimeRange;
  categories?: Category[];
}

export interface PromoteInput {
  playbook_id: string;
  name?: string;
  option: 'create_only' | 'create_and_execute' | 'save_as_template';
  inputs?: Record<string, string>;
}

export interface AttachInput {
  playbook_id: string;
  agent_ids: string[];
  rules?: { when?: string; mode?: 'suggest' | 'auto' };
}

/** What a run step's rule evaluation reads (the condition language's facts). */
export interface TriggerFacts {
  goal: string;
  context: Record<string, unknown>;
  inputs: Record<string, string>;
  workflow: string;
}

/** A matched attachment, as the run engine records it on the step. */
export interface Trigger {
  attachment_id: string;
  playbook_id: string;
  name: string;
  mode: 'suggest' | 'auto';
  when: string;
  text: string;
}

export interface PlaybooksDependencies {
  db: Db;
  activity: Pick<ActivityService, 'record'>;
  workflows: Pick<WorkflowsService, 'create'>;
  runs: Pick<RunsService, 'start'>;
  /** The goal inputs a template needs that `inputs` lacks (the runs module's rule). */
  missingInputs(goal: string, inputs: Record<string, string>): string[];
  /** The caller's workspaces with their tenants (tenant-wide scope). */
  workspacesOf(userId: string): Promise<Array<{ id: string; tenant: { id: string } }>>;
  now?: () => Date;
  /** The workspace audit trail: `playbook_schedule.updated` with the old and new schedule. */
  audit?: AuditRecorder;
  /** Hands a background mine to the job queue (`playbooks.mine`); its row is the job's truth. */
  enqueueMine?(mineId: string): Promise<void>;
  /** `MINE_SYNC_MAX_RUNS`: a window of at most this many finished runs is mined within the request. */
  syncMaxRuns?: number;
  /** Where a failed enqueue or an unexpected failure of a background mine is told. */
  log?: Pick<Logger, 'warn' | 'error'>;
}

const DAY_MS = 86_400_000;
/** What the nightly job mines with: the spec's recommended thresholds over the last 30 days. */
export const NIGHTLY_MINING = {
  min_support: 5,
  min_confidence: 0.8,
  top_k: 20,
  time_range: 'last_30_days',
} as const;
/** A playbook with at least this many uses is archived when its success falls well below the base. */
/** Background mines a workspace may have queued or running at once; beyond, 429 `too_many_mines`. */
export const MAX_UNFINISHED_MINES = 3;
export const LOW_PERFORMER = { minUses: 10, pointsBelowBase: 0.05 } as const;
const RANGE_DAYS = { last_7_days: 7, last_30_days: 30, last_90_days: 90 } as const;
/** A promoted workflow's run timeout: the spec's 15 minutes. */
export const PROMOTED_TIMEOUT_SECONDS = 900;

/** The playbook as the API shows it. */
export function present(row: PlaybookRecord) {
  const { pattern_key: _key, name_edited: _n, description_edited: _d, category_edited: _c, ...rest } = row;
  return {
    ...rest,
    confidence_percent: Math.round(row.confidence * 100),
    confidence_band: confidenceBand(row.confidence),
    success_rate: row.confidence,
    archived: row.archived_at !== null,
  };
}

/** A mined pattern as its row stores it. */
const toStored = (pattern: MinedPattern): MinedPlaybook => ({
  pattern_key: pattern.key,
  name: pattern.name,
  description: pattern.description,
  category: pattern.category,
  category_votes: pattern.categoryVotes,
  items: pattern.items,
  agent_pattern: pattern.agents,
  tool_pattern: pattern.tools,
  context_pattern: {
    context_fields: pattern.contextFields,
    required_inputs: pattern.inputs,
    configuration: pattern.configuration,
  },
  goal_template: pattern.goalTemplate,
  support: pattern.support,
  matching_runs: pattern.matching,
  confidence: pattern.confidence,
  lift: pattern.lift,
  avg_duration_ms: pattern.averageDurationMs,
  avg_cost: pattern.averageCost,
  quality_score: pattern.quality,
  quality_parts: pattern.qualityParts,
  example_run_ids: pattern.exampleRunIds,
});

function presentSchedule(
  row:
    | {
        cron: string | null;
        time_zone: string | null;
        enabled: boolean;
        slot: Date | null;
        finished_at: Date | null;
        last_error: string | null;
        last_result: Record<string, unknown> | null;
      }
    | undefined,
  at: Date,
  tenantTimeZone: string | null,
) {
  const cron = row?.cron ?? DEFAULT_SCHEDULE.cron;
  const timeZone = row?.time_zone ?? tenantTimeZone ?? DEFAULT_SCHEDULE.timeZone;
  const enabled = row?.enabled ?? true;
  return {
    cron,
    time_zone: timeZone,
    enabled,
    next_run_at: enabled ? nextSlot(cron, timeZone, at) : null,
    last_slot: row?.slot ?? null,
    last_finished_at: row?.finished_at ?? null,
    last_error: row?.last_error ?? null,
    last_result: row?.last_result ?? null,
  };
}

/** What a trigger adds to the agent's prompt. */
function triggerText(row: {
  name: string;
  description: string;
  mode: 'suggest' | 'auto';
  agent_pattern: string[];
  tool_pattern: string[];
}): string {
  if (row.mode === 'suggest') return `Suggested playbook “${row.name}”: ${row.description}`;
  const steps = row.agent_pattern.map((agent, index) => `${index + 1}. ${titleCase(agent)}`).join('; ');
  const tools = row.tool_pattern.length > 0 ? ` Tools it uses: ${row.tool_pattern.join(', ')}.` : '';
  return `Follow the playbook “${row.name}”. Its steps: ${steps}.${tools} ${row.description}`;
}

const playbookEvent = (
  row: Pick<PlaybookRecord, 'id' | 'name' | 'workspace_id'>,
  kind: 'playbook.promoted' | 'playbook.archived' | 'playbook.unarchived',
  actor: string,
  data: Record<string, unknown> = {},
): ActivityInput => ({
  workspaceId: row.workspace_id,
  kind,
  subjectType: 'playbook',
  subjectId: row.id,
  message: `Playbook “${row.name}” ${kind.slice('playbook.'.length)}`,
  data: { name: row.name, ...data },
  actor,
});

/**
 * Playbooks: patterns mined from a workspace's successful runs (docs/playbooks.md), stored so
 * they can be edited, archived and promoted to workflows.
 */
export function createPlaybooksService(deps: PlaybooksDependencies) {
  const repo = createPlaybooksRepository(deps.db);
  const now = deps.now ?? (() => new Date());

  /** The workspaces a request reads: the current one, or the tenant's that the caller belongs to. */
  async function scopeOf(caller: Who, tenantId: string | undefined): Promise<string[]> {
    if (tenantId === undefined) return [caller.workspaceId];
    const mine = await deps.workspacesOf(caller.userId);
    const ids = mine.filter((workspace) => workspace.tenant.id === tenantId).map((workspace) => workspace.id);
    if (ids.length === 0) throw notFound('tenant', tenantId);
    return ids;
  }

  function windowOf(range: TimeRange | undefined): { from: Date; to: Date } {
    const end = now();
    if (range === undefined || typeof range === 'string') {
      return { from: new Date(end.getTime() - RANGE_DAYS[range ?? 'last_30_days'] * DAY_MS), to: end };
    }
    const from = new Date(range.from);
    const to = range.to === undefined ? end : new Date(range.to);
    if (!(from < to)) {
      throw new AppError(400, 'validation_failed', 'body.time_range.from must be before body.time_range.to', [
        { field: 'body.time_range.from', message: 'must be before body.time_range.to' },
      ]);
    }
    return { from, to };
  }

  async function get(caller: Who, id: string): Promise<PlaybookRecord> {
    const row = await repo.find(caller.workspaceId, id);
    if (!row) throw notFound('playbook', id);
    return row;
  }

  async function setArchived(caller: Who, id: string, archived: boolean) {
    return inTransaction(deps.db, async (tx) => {
      const txRepo = createPlaybooksRepository(tx);
      const current = await txRepo.find(caller.workspaceId, id);
      if (!current) throw notFound('playbook', id);
      if ((current.archived_at !== null) === archived) return present(current);
      const row = (await txRepo.update(caller.workspaceId, id, {
        archived_at: archived ? now() : null,
      })) as PlaybookRecord;
      await deps.activity.record(
        tx,
        playbookEvent(row, archived ? 'playbook.archived' : 'playbook.unarchived', caller.userId),
      );
      return present(row);
    });
  }

  /** A background mine as the API shows it; its result is what `mine` answered. */
  function presentMine(row: PlaybookMineRow) {
    const { workspace_id: _workspace, attempts: _attempts, result, ...shown } = row;
    return { ...shown, result: result as Awaited<ReturnType<typeof mine>> | null };
  }

  /**
   * Mines the scope's finished runs in the window and stores the best patterns in the
   * caller's workspace (updating those already there). Aborting `signal` (the client went
   * away) stops the mining thread.
   */
  async function mine(
    caller: Who,
    input: MineInput,
    signal?: AbortSignal,
    options: {
      quietWhenEmpty?: boolean;
      mineId?: string;
      onPhase?: (phase: MinePhase) => Promise<void>;
    } = {},
  ) {
    const workspaceIds = await scopeOf(caller, input.tenant_id);
    const window = windowOf(input.time_range);
    const started = performance.now();
    const [runs, agents] = await Promise.all([
      repo.finishedRuns(workspaceIds, window.from, window.to),
      repo.agentsOf(workspaceIds),
    ]);
    const loaded = performance.now();
    await options.onPhase?.('mining');
    const roles = new Map<string, string>();
    for (const agent of agents) if (agent.role) roles.set(normaliseName(agent.name), agent.role);
    const summary = await minePatterns(runs, {
      minSupport: input.min_support,
      minConfidence: input.min_confidence,
      topK: input.top_k,
      roles,
      goalsOf: (runIds) => repo.goalsOf(workspaceIds, runIds),
      ...(input.categories ? { categories: input.categories } : {}),
      ...(signal ? { signal } : {}),
    });
    await options.onPhase?.('storing');
    const storing = performance.now();
    const minedAt = now();
    const stored = await inTransaction(deps.db, async (tx) => {
      const rows = await createPlaybooksRepository(tx).upsert(
        caller.workspaceId,
        summary.patterns.map(toStored),
        minedAt,
      );
      if (options.quietWhenEmpty && summary.runs === 0) return rows;
      await deps.activity.record(tx, {
        workspaceId: caller.workspaceId,
        kind: 'playbook.mined',
        subjectType: 'playbook',
        message: `Mined ${summary.runs} runs: ${rows.length} playbook${rows.length === 1 ? '' : 's'}`,
        data: {
          runs: summary.runs,
          playbooks: rows.length,
          workspaces: workspaceIds.length,
          ...(options.mineId ? { mine_id: options.mineId } : {}),
        },
        actor: caller.userId,
      });
      return rows;
    });
    return {
      scope: { workspace_ids: workspaceIds, from: window.from, to: window.to },
      runs: summary.runs,
      successful_runs: summary.successfulRuns,
      base_success_rate: summary.baseline.successRate,
      itemsets: summary.itemsets,
      took_ms: {
        load: Math.round(loaded - started),
        transactions: summary.tookMs.transactions,
        mining: summary.tookMs.mining,
        scoring: summary.tookMs.scoring,
        store: Math.round(performance.now() - storing),
      },
      playbooks: stored.map(present),
    };
  }

  const service = {
    mine,

    /**
     * `POST /playbooks/mine`: mines within the request when the window holds at most
     * `syncMaxRuns` finished runs, else (or when the client asks, `background`) records a
     * background mine and hands it to the queue. The scope and window are checked first, so a
     * refused request records nothing; a background mine keeps the window fixed to dates.
     */
    async requestMine(
      caller: Who,
      input: MineInput,
      options: { background?: boolean; signal?: AbortSignal } = {},
    ): Promise<{ mined: Awaited<ReturnType<typeof mine>> } | { queued: ReturnType<typeof presentMine> }> {
      const workspaceIds = await scopeOf(caller, input.tenant_id);
      const window = windowOf(input.time_range);
      const runs = await repo.countFinishedRuns(workspaceIds, window.from, window.to);
      const { enqueueMine } = deps;
      if (!enqueueMine || (!options.background && runs <= (deps.syncMaxRuns ?? Number.POSITIVE_INFINITY))) {
        return { mined: await mine(caller, input, options.signal) };
      }
      const fixed: MineInput = {
        ...input,
        time_range: { from: window.from.toISOString(), to: window.to.toISOString() },
      };
      // One workspace cannot fill the workers' queue with mines: a few wait or run at a time.
      if ((await repo.countUnfinishedMines(caller.workspaceId)) >= MAX_UNFINISHED_MINES) {
        throw new AppError(
          429,
          'too_many_mines',
          `this workspace already has ${MAX_UNFINISHED_MINES} background mines queued or running; retry when one has ended`,
          undefined,
          { 'Retry-After': '30' },
        );
      }
      const row = await inTransaction(deps.db, async (tx) => {
        const created = await createPlaybooksRepository(tx).createMine({
          workspaceId: caller.workspaceId,
          input: { ...fixed },
          runs,
          requestedBy: caller.userId,
        });
        afterCommit(tx, () => {
          enqueueMine(created.id).catch((error: unknown) =>
            deps.log?.warn(
              { err: error, mine_id: created.id },
              'the queue did not take the mine; the recovery sweep hands it over',
            ),
          );
        });
        return created;
      });
      return { queued: presentMine(row) };
    },

    /**
     * The `playbooks.mine` job: mines what the row says, as the user who asked, recording its
     * phase as it goes; ends it `completed` with the result (the same as a mine within the
     * request) or `failed` with the reason. A mine already ended does nothing (a repeated
     * delivery); an abort or a database outage is rethrown for the queue to hand it back.
     */
    async runMineJob(mineId: string, signal: AbortSignal): Promise<void> {
      const row = await repo.startMine(mineId);
      if (!row) return;
      const caller: Who = {
        userId: row.requested_by,
        workspaceId: row.workspace_id,
        tenantId: '',
        role: 'member',
      };
      try {
        const result = await mine(caller, row.input as unknown as MineInput, signal, {
          mineId: row.id,
          onPhase: (phase) => repo.setMinePhase(row.id, phase),
        });
        await repo.finishMine(row.id, { result: result as unknown as Record<string, unknown> });
      } catch (error) {
        if (signal.aborted || infrastructureFailure(error)) throw error;
        const safe = error instanceof AppError;
        if (!safe) deps.log?.error({ err: error, mine_id: row.id }, 'a background mine failed');
        await service.failMine(row.id, safe ? error.message : 'mining failed unexpectedly');
      }
    },

    /** Ends a background mine `failed` with the reason, and says so on the activity feed. */
    async failMine(mineId: string, reason: string): Promise<void> {
      await inTransaction(deps.db, async (tx) => {
        const txRepo = createPlaybooksRepository(tx);
        const row = await txRepo.findMineById(mineId);
        if (!row || !(await txRepo.finishMine(mineId, { error: reason }))) return;
        await deps.activity.record(tx, {
          workspaceId: row.workspace_id,
          kind: 'playbook.mine_failed',
          subjectType: 'playbook_mine',
          subjectId: row.id,
          message: `Mining ${row.runs} runs failed: ${reason}`,
          data: { mine_id: row.id, runs: row.runs, error: reason },
          actor: row.requested_by,
        });
      });
    },

    async getMine(caller: Who, id: string) {
      const row = await repo.findMine(caller.workspaceId, id);
      if (!row) throw notFound('mine', id);
      return presentMine(row);
    },

    async listMines(caller: Who, page: { limit: number; offset: number }) {
      const found = await repo.listMines(caller.workspaceId, page);
      return { ...found, items: found.items.map((row) => presentMine(row as PlaybookMineRow)) };
    },

    /** Hands every unfinished background mine to the queue again (a consumer's start). */
    async recoverUnfinishedMines(): Promise<number> {
      if (!deps.enqueueMine) return 0;
      const pending = await repo.unfinishedMines();
      for (const mine of pending) await deps.enqueueMine(mine.id);
      return pending.length;
    },

    async list(caller: Who, query: PlaybookFilter & { tenant_id?: string }) {
      const workspaceIds = await scopeOf(caller, query.tenant_id);
      return mapItems(await repo.list(workspaceIds, query), present);
    },

    get: async (caller: Who, id: string) => present(await get(caller, id)),

    /** Renames, re-describes or re-categorises; what a user set is kept by later mining. */
    async update(
      caller: Who,
      id: string,
      input: { name?: string; description?: string; category?: Category | null },
    ) {
      const row = await repo.update(caller.workspaceId, id, {
        ...(input.name === undefined ? {} : { name: input.name, name_edited: true }),
        ...(input.description === undefined
          ? {}
          : { description: input.description, description_edited: true }),
        ...(input.category === undefined ? {} : { category: input.category, category_edited: true }),
      });
      if (!row) throw notFound('playbook', id);
      return present(row);
    },

    archive: (caller: Who, id: string) => setArchived(caller, id, true),
    unarchive: (caller: Who, id: string) => setArchived(caller, id, false),

    /**
     * The workspace's nightly mining schedule, with its next run and the last one's outcome.
     * A workspace that set no time zone shows (and runs in) its tenant's, else UTC.
     */
    async schedule(caller: Who) {
      const [row, tenantTimeZone] = await Promise.all([
        repo.schedule(caller.workspaceId),
        repo.tenantTimeZone(caller.workspaceId),
      ]);
      return presentSchedule(row, now(), tenantTimeZone);
    },

    /** Changes the schedule (admins); a field sent as null goes back to its default. */
    async putSchedule(
      caller: Who & RecordedBy,
      input: { cron?: string | null; time_zone?: string | null; enabled?: boolean },
    ) {
      const problems = scheduleProblems(input.cron ?? undefined, input.time_zone ?? undefined);
      if (problems.length > 0) {
        throw invalidFields(
          problems.map((problem) => ({ field: `body.${problem.field}`, message: problem.message })),
        );
      }
      const row = await inTransaction(deps.db, async (tx) => {
        const txRepo = createPlaybooksRepository(tx);
        const before = await txRepo.schedule(caller.workspaceId);
        const saved = await txRepo.putSchedule(caller.workspaceId, {
          ...(input.cron === undefined ? {} : { cron: input.cron }),
          ...(input.time_zone === undefined ? {} : { time_zone: input.time_zone }),
          ...(input.enabled === undefined ? {} : { enabled: input.enabled }),
        });
        const audited = (schedule: typeof saved) => ({
          cron: schedule.cron,
          time_zone: schedule.time_zone,
          enabled: schedule.enabled,
        });
        await deps.audit?.record(tx, caller.workspaceId, caller, {
          action: 'playbook_schedule.updated',
          targetType: 'playbook_schedule',
          targetId: caller.workspaceId,
          changes: changesBetween(before && audited(before), audited(saved)),
        });
        return saved;
      });
      return presentSchedule(row, now(), await repo.tenantTimeZone(caller.workspaceId));
    },

    /** For the nightly job: every workspace's schedule, and the slot claim. */
    schedules: () => repo.schedules(),
    claimSlot: (workspaceId: string, slot: Date, owner: string, leaseMs: number) =>
      repo.claimSlot(workspaceId, slot, owner, leaseMs),
    finishSlot: (
      workspaceId: string,
      slot: Date,
      owner: string,
      outcome: { result: Record<string, unknown> } | { error: string },
    ) => repo.finishSlot(workspaceId, slot, owner, outcome),

    /**
     * The nightly work for one workspace: mine with the recommended thresholds, then archive
     * the low performers: playbooks with at least 10 uses (finished runs of workflows promoted
     * from them) whose success rate's Wilson lower bound (95 %) is more than 5 points below the
     * workspace's base success rate. Only a user unarchives them.
     */
    async nightly(workspaceId: string, signal?: AbortSignal) {
      const system: Who = { userId: 'system', workspaceId, tenantId: '', role: 'owner' };
      const mined = await mine(system, { ...NIGHTLY_MINING }, signal, { quietWhenEmpty: true });
      const archived: string[] = [];
      for (const use of await repo.usesOf(workspaceId)) {
        const bound = wilsonLowerBound(use.successes, use.uses);
        if (
          use.uses < LOW_PERFORMER.minUses ||
          bound >= mined.base_success_rate - LOW_PERFORMER.pointsBelowBase
        )
          continue;
        await inTransaction(deps.db, async (tx) => {
          const row = await createPlaybooksRepository(tx).update(workspaceId, use.id, { archived_at: now() });
          if (!row) return;
          await deps.activity.record(
            tx,
            playbookEvent(row, 'playbook.archived', 'system', {
              reason: 'low_performer',
              uses: use.uses,
              successes: use.successes,
              success_lower_bound: Math.round(bound * 10_000) / 10_000,
              base_success_rate: mined.base_success_rate,
            }),
          );
        });
        archived.push(use.id);
      }
      return { runs: mined.runs, playbooks: mined.playbooks.length, archived };
    },

    /**
     * Binds the playbook to agents of the workspace with a rule: `when` (the condition language,
     * default `true`) decides per run step, `mode` what the agent gets.
     */
    async attach(caller: Who, input: AttachInput) {
      const playbook = await get(caller, input.playbook_id);
      const when = input.rules?.when ?? 'true';
      try {
        parseCondition(when);
      } catch (error) {
        if (error instanceof ConditionError) throw invalid('body.rules.when', error.message);
        throw error;
      }
      const existing = await repo.existingAgents(caller.workspaceId, input.agent_ids);
      const unknown = input.agent_ids.flatMap((id, index) =>
        existing.has(id)
          ? []
          : [{ field: `body.agent_ids.${index}`, message: `no agent ${id} in this workspace` }],
      );
      if (unknown.length > 0) throw invalidFields(unknown);
      const mode = input.rules?.mode ?? 'suggest';
      const attachments = await repo.attach(
        input.agent_ids.map((agentId) => ({
          workspace_id: caller.workspaceId,
          playbook_id: playbook.id,
          agent_id: agentId,
          when,
          mode,
          created_by: caller.userId,
        })),
      );
      return { playbook_id: playbook.id, attachments };
    },

    /** Unbinds the playbook from the agents given, or from every agent. */
    async detach(caller: Who, input: { playbook_id: string; agent_ids?: string[] }) {
      const playbook = await get(caller, input.playbook_id);
      return {
        playbook_id: playbook.id,
        detached: await repo.detach(caller.workspaceId, playbook.id, input.agent_ids),
      };
    },

    async attachments(caller: Who, id: string) {
      const playbook = await get(caller, id);
      return {
        playbook_id: playbook.id,
        attachments: await repo.attachmentsOf(caller.workspaceId, playbook.id),
      };
    },

    /**
     * For the run engine: the attachments of a run's agents, read once per run, as a function
     * from an agent to the triggers whose rules hold for the run (with the agent's name as
     * `agent` among the facts).
     */
    /**
     * For runs: the attachments of the run's agents, read by the run's claim statement
     * (`attachmentsOfRunQuery`, a subquery over its `run` CTE), and the triggers they give an
     * agent of that run, given the run's facts.
     */
    attachmentsOfRunQuery: () => repo.attachmentsOfRunQuery(),

    triggersFrom(attached: unknown, facts: TriggerFacts): (agent: { id: string; name: string }) => Trigger[] {
      const rows = attached as AttachedPlaybook[];
      if (rows.length === 0) return () => [];
      const tags = Array.isArray(facts.context.tags) ? facts.context.tags : [];
      // One normaliser for the run: each of its strings is lower-cased once for all its rules.
      const lower = createNormaliser();
      return (agent) =>
        rows.flatMap((row) => {
          if (row.agent_id !== agent.id) return [];
          let holds: boolean;
          try {
            holds = evaluateCondition(parseCondition(row.when), { ...facts, tags, agent: agent.name }, lower);
          } catch {
            holds = false; // stored rules were checked when attached; never let one stop a run
          }
          if (!holds) return [];
          return [
            {
              attachment_id: row.id,
              playbook_id: row.playbook_id,
              name: row.name,
              mode: row.mode,
              when: row.when,
              text: triggerText(row),
            },
          ];
        });
    },

    /** Counts recorded triggers (their first attempts). */
    countTriggers: (db: Db, attachmentIds: string[]) =>
      createPlaybooksRepository(db).countTriggers(attachmentIds),

    /**
     * A workflow from the playbook: its agents (this workspace's agents of those names, in the
     * pattern's order), tools, goal template, execution policy and context template; with
     * `create_and_execute` also a run of it.
     */
    async promote(caller: Who, input: PromoteInput) {
      const playbook = await get(caller, input.playbook_id);
      const agents = await repo.agentsOf([caller.workspaceId]);
      const byName = new Map<string, string>();
      for (const agent of agents) {
        const name = normaliseName(agent.name);
        if (!byName.has(name)) byName.set(name, agent.id);
      }
      const absent = playbook.agent_pattern.filter((name) => !byName.has(name));
      if (absent.length > 0) {
        throw new AppError(
          409,
          'playbook_agents_missing',
          `the pattern's agents ${absent.join(', ')} no longer exist in this workspace`,
          absent.map((name) => ({ field: 'agent_pattern', message: `no agent named ${name}` })),
        );
      }
      if (input.option === 'create_and_execute') {
        // Checked before anything is created: a refused run leaves no workflow behind.
        const missing = deps.missingInputs(playbook.goal_template, input.inputs ?? {});
        if (missing.length > 0) {
          throw invalidFields(
            missing.map((name) => ({
              field: `body.inputs.${name}`,
              message: `is required: the playbook's goal template uses {{${name}}}`,
            })),
          );
        }
      }
      const configuration = playbook.context_pattern.configuration;
      const errorHandling = (configuration.errors ?? 'stop') as 'stop' | 'continue' | 'retry';
      const workflow = await deps.workflows.create(caller, {
        name: input.name ?? playbook.name,
        description: playbook.description,
        goal: playbook.goal_template,
        agents: playbook.agent_pattern.map((name) => byName.get(name) as string),
        tools: playbook.tool_pattern.map((name) => ({ name })),
        execution_policy: {
          mode: (configuration.mode ?? 'sequential') as 'sequential' | 'parallel',
          error_handling: errorHandling,
          max_retries: errorHandling === 'retry' ? 2 : 0,
          timeout_seconds: PROMOTED_TIMEOUT_SECONDS,
        },
        context_template: Object.fromEntries(
          playbook.context_pattern.context_fields.map((field) => [field, '']),
        ),
        is_template: input.option === 'save_as_template',
        playbook_id: playbook.id,
      });
      await inTransaction(deps.db, (tx) =>
        deps.activity.record(
          tx,
          playbookEvent(playbook, 'playbook.promoted', caller.userId, {
            workflow_id: workflow.id,
            option: input.option,
          }),
        ),
      );
      const run =
        input.option === 'create_and_execute'
          ? (await deps.runs.start(caller, workflow.id, { inputs: input.inputs ?? {}, context: {} })).run
          : null;
      return { workflow, run };
    },
  };
  return service;
}

export type PlaybooksService = ReturnType<typeof createPlaybooksService>;
