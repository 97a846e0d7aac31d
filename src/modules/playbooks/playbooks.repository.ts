import { and, count, desc, eq, getTableColumns, inArray, isNull, type SQL, sql } from 'drizzle-orm';
import { type PageRequest, paginate, totalCount } from '../../db/queries.ts';
import { rowsOf } from '../../db/rows.ts';
import {
  type MinePhase,
  type PlaybookAttachmentRow,
  type PlaybookMineRow,
  type PlaybookRow,
  type PlaybookScheduleRow,
  playbookAttachments,
  playbookMines,
  playbookSchedules,
  playbooks,
} from '../../db/schema/playbooks.ts';
import type { Db } from '../../db/transaction.ts';

/** The spec's confidence bands, as a filter. */
export type ConfidenceBandFilter = 'high' | 'medium' | 'low';

/** A finished run as mining reads it (input names only, never their values). */
export interface FinishedRun {
  id: string;
  succeeded: boolean;
  agents_used: string[];
  tools_used: string[];
  context_fields: string[];
  inputs: string[];
  mode: string;
  error_handling: string;
  timeout_seconds: number;
  duration_ms: number | null;
  cost: number;
}

/** What mining stores of a pattern: the row without its ids, edits, archive state and times. */
export type MinedPlaybook = Omit<
  typeof playbooks.$inferInsert,
  | 'id'
  | 'workspace_id'
  | 'mined_at'
  | 'name_edited'
  | 'description_edited'
  | 'category_edited'
  | 'archived_at'
  | 'created_at'
  | 'updated_at'
>;

export interface PlaybookFilter {
  category?: string;
  confidence?: ConfidenceBandFilter;
  include_archived?: boolean;
  /** Only those attached to this agent. */
  agent_id?: string;
  limit: number;
  offset: number;
}

/** Finished runs mined at most per request (any of them past that): bounds the memory of one mine. */
export const MAX_MINED_RUNS = 1_000_000;
/** Characters of each run's goal read (goal templates are made from them). */
export type { MinePhase, MineStatus, PlaybookMineRow } from '../../db/schema/playbooks.ts';

export const MAX_GOAL_CHARS = 500;

/**
 * A playbook as read: the row and its usage count, the runs of workflows promoted from it
 * (derived on read, so it is never out of step with the runs).
 */
const withUsage = {
  ...getTableColumns(playbooks),
  usage_count: sql<number>`(select count(*)::int from runs r join workflows w on w.id = r.workflow_id
    where w.playbook_id = "playbooks"."id" and w.workspace_id = "playbooks"."workspace_id")`.mapWith(Number),
};
export type PlaybookRecord = PlaybookRow & { usage_count: number };

/** Data access for playbooks, and the one read of runs that mining does. */
/** An attachment of a run's agent to a playbook that is not archived, with what a trigger shows. */
export interface AttachedPlaybook {
  id: string;
  agent_id: string;
  when: string;
  mode: 'suggest' | 'auto';
  playbook_id: string;
  name: string;
  description: string;
  agent_pattern: string[];
  tool_pattern: string[];
}

/**
 * The runs a mine reads: those of `workspaceIds` that finished (Completed or Failed; Cancelled
 * ones say nothing of success) in [from, to), at most MAX_MINED_RUNS.
 */
const finishedRunsIn = (workspaceIds: string[], from: Date, to: Date): SQL => sql`select * from runs
  where workspace_id in (${sql.join(
    workspaceIds.map((id) => sql`${id}::uuid`),
    sql`, `,
  )})
    and status in ('Completed', 'Failed')
    and finished_at >= ${from.toISOString()}::timestamptz and finished_at < ${to.toISOString()}::timestamptz
  limit ${MAX_MINED_RUNS}`;

export function createPlaybooksRepository(db: Db) {
  const bandCondition = (band: ConfidenceBandFilter): SQL => {
    if (band === 'high') return sql`${playbooks.confidence} > 0.9`;
    if (band === 'medium') return sql`${playbooks.confidence} >= 0.7 and ${playbooks.confidence} <= 0.9`;
    return sql`${playbooks.confidence} < 0.7`;
  };

  return {
    /**
     * Runs of `workspaceIds` that finished (Completed or Failed; Cancelled ones say nothing of
     * success) in [from, to), at most MAX_MINED_RUNS, as mining reads them: input names, never
     * values.
     */
    async finishedRuns(workspaceIds: string[], from: Date, to: Date): Promise<FinishedRun[]> {
      // One JSON text for the lot, written by string concatenation from small columns (the
      // policy and the input names are generated columns, so no goal or plan is read): a row
      // per run through the driver took 3.5 s at 100,000 runs, json_agg(json_build_array(..))
      // of the plan's fields about 1 s. Names are JSON-encoded, so none can break the framing.
      const [row] = rowsOf<{ runs: string | null }>(
        await db.execute(sql`select '[' || string_agg(concat('["', id, '",', (status = 'Completed')::text, ',',
              coalesce(duration_ms::text, 'null'), ',', to_json(cost), ',',
              to_json(concat_ws('|', execution_policy->>'mode', execution_policy->>'error_handling',
                execution_policy->>'timeout_seconds')), ',',
              to_json(agents_used), ',', to_json(tools_used), ',', to_json(context_fields), ',',
              coalesce(input_names, '[]'::jsonb), ']'), ',') || ']' as runs
          from (${finishedRunsIn(workspaceIds, from, to)}) r`),
      );
      if (!row?.runs) return [];
      // The policy as `mode|error_handling|timeout_seconds`: a tenth of the text its JSON took.
      type Packed = [
        string,
        boolean,
        number | null,
        number | string,
        string,
        string[],
        string[],
        string[],
        string[],
      ];
      const policies = new Map<string, { mode: string; error_handling: string; timeout_seconds: number }>();
      const policyOf = (text: string) => {
        let policy = policies.get(text);
        if (!policy) {
          const [mode, errorHandling, timeout] = text.split('|');
          policy = {
            mode: mode || 'sequential',
            error_handling: errorHandling || 'stop',
            timeout_seconds: Number(timeout) || 900,
          };
          policies.set(text, policy);
        }
        return policy;
      };
      return (JSON.parse(row.runs) as Packed[]).map(
        ([id, succeeded, duration, cost, policy, agents, tools, context, inputs]) => ({
          id,
          succeeded,
          agents_used: agents,
          tools_used: tools,
          context_fields: context,
          inputs,
          ...policyOf(policy),
          duration_ms: duration,
          cost: Number(cost),
        }),
      );
    },

    /** The goals (their first MAX_GOAL_CHARS characters) of these runs of the workspaces. */
    /** How many runs `finishedRuns` would read (counted up to MAX_MINED_RUNS, no further). */
    async countFinishedRuns(workspaceIds: string[], from: Date, to: Date): Promise<number> {
      const [row] = rowsOf<{ runs: number | string }>(
        await db.execute(sql`select count(*) as runs from (${finishedRunsIn(workspaceIds, from, to)}) r`),
      );
      return Number(row?.runs ?? 0);
    },

    async goalsOf(workspaceIds: string[], runIds: string[]): Promise<Map<string, string>> {
      if (runIds.length === 0) return new Map();
      const rows = rowsOf<{ id: string; goal: string | null }>(
        await db.execute(sql`select id, left(plan->>'goal', ${MAX_GOAL_CHARS}) as goal from runs
          where workspace_id in (${sql.join(
            workspaceIds.map((id) => sql`${id}::uuid`),
            sql`, `,
          )}) and id in (${sql.join(
            runIds.map((id) => sql`${id}::uuid`),
            sql`, `,
          )})`),
      );
      return new Map(rows.map((row) => [row.id, row.goal ?? '']));
    },

    /**
     * Stores mined patterns in the workspace: a pattern already there (same key) is updated,
     * keeping its edited name, description and category, its usage count and whether it is
     * archived. Answers the stored rows in the patterns' order.
     */
    async upsert(workspaceId: string, patterns: MinedPlaybook[], minedAt: Date): Promise<PlaybookRecord[]> {
      if (patterns.length === 0) return [];
      const rows = await db
        .insert(playbooks)
        .values(patterns.map((pattern) => ({ ...pattern, workspace_id: workspaceId, mined_at: minedAt })))
        .onConflictDoUpdate({
          target: [playbooks.workspace_id, playbooks.pattern_key],
          set: {
            name: sql`case when ${playbooks.name_edited} then ${playbooks.name} else excluded.name end`,
            description: sql`case when ${playbooks.description_edited} then ${playbooks.description} else excluded.description end`,
            category: sql`case when ${playbooks.category_edited} then ${playbooks.category} else excluded.category end`,
            category_votes: sql`excluded.category_votes`,
            items: sql`excluded.items`,
            agent_pattern: sql`excluded.agent_pattern`,
            tool_pattern: sql`excluded.tool_pattern`,
            context_pattern: sql`excluded.context_pattern`,
            goal_template: sql`excluded.goal_template`,
            support: sql`excluded.support`,
            matching_runs: sql`excluded.matching_runs`,
            confidence: sql`excluded.confidence`,
            lift: sql`excluded.lift`,
            avg_duration_ms: sql`excluded.avg_duration_ms`,
            avg_cost: sql`excluded.avg_cost`,
            quality_score: sql`excluded.quality_score`,
            quality_parts: sql`excluded.quality_parts`,
            example_run_ids: sql`excluded.example_run_ids`,
            mined_at: sql`excluded.mined_at`,
            updated_at: sql`now()`,
          },
        })
        .returning({ id: playbooks.id });
      const stored = await db
        .select(withUsage)
        .from(playbooks)
        .where(
          and(
            eq(playbooks.workspace_id, workspaceId),
            inArray(
              playbooks.id,
              rows.map((row) => row.id),
            ),
          ),
        );
      const byKey = new Map(stored.map((row) => [row.pattern_key, row]));
      return patterns.flatMap((pattern) => byKey.get(pattern.pattern_key) ?? []);
    },

    /** Agents of `workspaceIds` (ids, names and roles): promotion and category votes read them. */
    async agentsOf(workspaceIds: string[]) {
      return rowsOf<{ id: string; workspace_id: string; name: string; role: string | null }>(
        await db.execute(sql`select id, workspace_id, name, role from agents
          where workspace_id in (${sql.join(
            workspaceIds.map((id) => sql`${id}::uuid`),
            sql`, `,
          )}) order by created_at, id`),
      );
    },

    /** Playbooks of `workspaceIds`, best quality first, with the total for the filter. */
    async list(workspaceIds: string[], filter: PlaybookFilter) {
      const conditions = [inArray(playbooks.workspace_id, workspaceIds)];
      if (!filter.include_archived) conditions.push(isNull(playbooks.archived_at));
      if (filter.category)
        conditions.push(eq(playbooks.category, filter.category as PlaybookRow['category'] & string));
      if (filter.confidence) conditions.push(bandCondition(filter.confidence));
      if (filter.agent_id) {
        conditions.push(
          inArray(
            playbooks.id,
            db
              .select({ id: playbookAttachments.playbook_id })
              .from(playbookAttachments)
              .where(eq(playbookAttachments.agent_id, filter.agent_id)),
          ),
        );
      }
      const where = and(...conditions);
      const rows = await db
        .select({ ...withUsage, total: totalCount() })
        .from(playbooks)
        .where(where)
        .orderBy(desc(playbooks.quality_score), playbooks.id)
        .limit(filter.limit)
        .offset(filter.offset);
      return paginate(filter, rows, async () => {
        const [result] = await db.select({ value: count() }).from(playbooks).where(where);
        return result?.value ?? 0;
      });
    },

    async find(workspaceId: string, id: string): Promise<PlaybookRecord | undefined> {
      const [row] = await db
        .select(withUsage)
        .from(playbooks)
        .where(and(eq(playbooks.workspace_id, workspaceId), eq(playbooks.id, id)));
      return row;
    },

    async update(
      workspaceId: string,
      id: string,
      changes: Partial<
        Pick<
          PlaybookRow,
          | 'name'
          | 'name_edited'
          | 'description'
          | 'description_edited'
          | 'category'
          | 'category_edited'
          | 'archived_at'
        >
      >,
    ): Promise<PlaybookRecord | undefined> {
      const [row] = await db
        .update(playbooks)
        .set({ ...changes, updated_at: sql`now()` })
        .where(and(eq(playbooks.workspace_id, workspaceId), eq(playbooks.id, id)))
        .returning({ id: playbooks.id });
      return row ? this.find(workspaceId, row.id) : undefined;
    },

    /** Binds the playbook to the agents (a binding already there gets the new rule). */
    async attach(
      values: Array<
        Pick<
          PlaybookAttachmentRow,
          'workspace_id' | 'playbook_id' | 'agent_id' | 'when' | 'mode' | 'created_by'
        >
      >,
    ): Promise<PlaybookAttachmentRow[]> {
      if (values.length === 0) return [];
      return db
        .insert(playbookAttachments)
        .values(values)
        .onConflictDoUpdate({
          target: [playbookAttachments.playbook_id, playbookAttachments.agent_id],
          set: { when: sql`excluded.when`, mode: sql`excluded.mode`, updated_at: sql`now()` },
        })
        .returning();
    },

    /** Unbinds the playbook from the agents (from every agent without `agentIds`); answers how many. */
    async detach(workspaceId: string, playbookId: string, agentIds?: string[]): Promise<number> {
      const conditions = [
        eq(playbookAttachments.workspace_id, workspaceId),
        eq(playbookAttachments.playbook_id, playbookId),
      ];
      if (agentIds) conditions.push(inArray(playbookAttachments.agent_id, agentIds));
      const rows = await db
        .delete(playbookAttachments)
        .where(and(...conditions))
        .returning({ id: playbookAttachments.id });
      return rows.length;
    },

    attachmentsOf(workspaceId: string, playbookId: string): Promise<PlaybookAttachmentRow[]> {
      return db
        .select()
        .from(playbookAttachments)
        .where(
          and(
            eq(playbookAttachments.workspace_id, workspaceId),
            eq(playbookAttachments.playbook_id, playbookId),
          ),
        )
        .orderBy(playbookAttachments.created_at, playbookAttachments.id);
    },

    /**
     * The attachments of the agents of the run of a statement's `run` CTE (the runs module's
     * `WriteRun`), as one JSON array of `AttachedPlaybook` in attachment order: a scalar
     * subquery for the statement's select, so a run's claim reads them without a statement
     * of its own.
     */
    attachmentsOfRunQuery: (): SQL =>
      sql`(select coalesce(json_agg(attached order by attached.created_at, attached.id), '[]'::json)
        from (${db
          .select({
            id: playbookAttachments.id,
            agent_id: playbookAttachments.agent_id,
            when: playbookAttachments.when,
            mode: playbookAttachments.mode,
            created_at: playbookAttachments.created_at,
            playbook_id: sql`${playbooks.id}`.as('playbook_id'),
            name: playbooks.name,
            description: playbooks.description,
            agent_pattern: playbooks.agent_pattern,
            tool_pattern: playbooks.tool_pattern,
          })
          .from(playbookAttachments)
          .innerJoin(playbooks, eq(playbooks.id, playbookAttachments.playbook_id))
          .where(
            and(
              sql`${playbookAttachments.workspace_id} = run.workspace_id`,
              sql`${playbookAttachments.agent_id} = any(run.agent_ids)`,
              isNull(playbooks.archived_at),
            ),
          )
          .getSQL()}) as attached)`,

    async countTriggers(ids: string[]): Promise<void> {
      if (ids.length === 0) return;
      await db
        .update(playbookAttachments)
        .set({ triggers: sql`${playbookAttachments.triggers} + 1` })
        .where(inArray(playbookAttachments.id, ids));
    },

    /** Which of `agentIds` are agents of the workspace. */
    async existingAgents(workspaceId: string, agentIds: string[]): Promise<Set<string>> {
      if (agentIds.length === 0) return new Set();
      const rows = rowsOf<{ id: string }>(
        await db.execute(sql`select id from agents where workspace_id = ${workspaceId}::uuid
          and id in (${sql.join(
            agentIds.map((id) => sql`${id}::uuid`),
            sql`, `,
          )})`),
      );
      return new Set(rows.map((row) => row.id));
    },

    /**
     * Every workspace with its nightly schedule (absent: the defaults), unless turned off. A
     * workspace that set no time zone runs in its tenant's (`tenants.time_zone`), if any.
     */
    async schedules(): Promise<
      Array<
        { workspace_id: string; created_at: Date } & Partial<
          Pick<PlaybookScheduleRow, 'cron' | 'time_zone' | 'slot' | 'finished_at' | 'claimed_at'>
        >
      >
    > {
      const rows = rowsOf<{
        workspace_id: string;
        created_at: string | Date;
        cron: string | null;
        time_zone: string | null;
        slot: string | Date | null;
        finished_at: string | Date | null;
        claimed_at: string | Date | null;
      }>(
        await db.execute(sql`select w.id as workspace_id, w.created_at, s.cron,
            coalesce(s.time_zone, t.time_zone) as time_zone, s.slot, s.finished_at, s.claimed_at
          from workspaces w join tenants t on t.id = w.tenant_id
            left join playbook_schedules s on s.workspace_id = w.id
          where s.enabled is distinct from false`),
      );
      const date = (value: string | Date | null) => (value === null ? null : new Date(value));
      return rows.map((row) => ({
        workspace_id: row.workspace_id,
        created_at: new Date(row.created_at),
        cron: row.cron,
        time_zone: row.time_zone,
        slot: date(row.slot),
        finished_at: date(row.finished_at),
        claimed_at: date(row.claimed_at),
      }));
    },

    /**
     * Takes the workspace's nightly slot for `owner`: only when the slot is newer than the one
     * recorded, or the same slot's claim was never finished and is older than `leaseMs` (its
     * process died). One statement, so of two processes at most one gets it.
     */
    async claimSlot(workspaceId: string, slot: Date, owner: string, leaseMs: number): Promise<boolean> {
      const rows = rowsOf<{ workspace_id: string }>(
        await db.execute(sql`insert into playbook_schedules (workspace_id, slot, claimed_by, claimed_at)
          values (${workspaceId}::uuid, ${slot.toISOString()}::timestamptz, ${owner}, now())
          on conflict (workspace_id) do update
            set slot = excluded.slot, claimed_by = excluded.claimed_by, claimed_at = now(), finished_at = null,
              updated_at = now()
            where playbook_schedules.slot is null or playbook_schedules.slot < excluded.slot
              or (playbook_schedules.slot = excluded.slot and playbook_schedules.finished_at is null
                and playbook_schedules.claimed_at < now() - make_interval(secs => ${leaseMs / 1000}))
          returning workspace_id`),
      );
      return rows.length === 1;
    },

    /** Records the end of a claimed slot (while the claim is still `owner`'s). */
    async finishSlot(
      workspaceId: string,
      slot: Date,
      owner: string,
      outcome: { result: Record<string, unknown> } | { error: string },
    ): Promise<void> {
      await db
        .update(playbookSchedules)
        .set(
          'error' in outcome
            ? { last_error: outcome.error, updated_at: sql`now()` }
            : {
                finished_at: sql`now()`,
                last_error: null,
                last_result: outcome.result,
                updated_at: sql`now()`,
              },
        )
        .where(
          and(
            eq(playbookSchedules.workspace_id, workspaceId),
            eq(playbookSchedules.slot, slot),
            eq(playbookSchedules.claimed_by, owner),
          ),
        );
    },

    /** The time zone the workspace's tenant set for nightly jobs, or null. */
    async tenantTimeZone(workspaceId: string): Promise<string | null> {
      const [row] = rowsOf<{ time_zone: string | null }>(
        await db.execute(sql`select t.time_zone from workspaces w join tenants t on t.id = w.tenant_id
          where w.id = ${workspaceId}::uuid`),
      );
      return row?.time_zone ?? null;
    },

    async schedule(workspaceId: string): Promise<PlaybookScheduleRow | undefined> {
      const [row] = await db
        .select()
        .from(playbookSchedules)
        .where(eq(playbookSchedules.workspace_id, workspaceId));
      return row;
    },

    async putSchedule(
      workspaceId: string,
      values: Partial<Pick<PlaybookScheduleRow, 'cron' | 'time_zone' | 'enabled'>>,
    ): Promise<PlaybookScheduleRow> {
      const [row] = await db
        .insert(playbookSchedules)
        .values({ workspace_id: workspaceId, ...values })
        .onConflictDoUpdate({
          target: playbookSchedules.workspace_id,
          set: { ...values, updated_at: sql`now()` },
        })
        .returning();
      if (!row) throw new Error('schedule upsert returned nothing');
      return row;
    },

    /** Per playbook not archived: finished runs of the workflows promoted from it, and the successful ones. */
    async usesOf(
      workspaceId: string,
    ): Promise<Array<{ id: string; name: string; uses: number; successes: number }>> {
      return rowsOf<{ id: string; name: string; uses: number; successes: number }>(
        await db.execute(sql`select p.id, p.name, count(r.id)::int as uses,
            (count(r.id) filter (where r.status = 'Completed'))::int as successes
          from playbooks p
          join workflows w on w.playbook_id = p.id and w.workspace_id = p.workspace_id
          join runs r on r.workflow_id = w.id and r.status in ('Completed', 'Failed')
          where p.workspace_id = ${workspaceId}::uuid and p.archived_at is null
          group by p.id, p.name`),
      );
    },

    /** Records a mine to do in the background, `queued`. */
    async createMine(mine: {
      workspaceId: string;
      input: Record<string, unknown>;
      runs: number;
      requestedBy: string;
    }): Promise<PlaybookMineRow> {
      const [row] = await db
        .insert(playbookMines)
        .values({
          workspace_id: mine.workspaceId,
          status: 'queued',
          input: mine.input,
          runs: mine.runs,
          requested_by: mine.requestedBy,
        })
        .returning();
      if (!row) throw new Error('insert into playbook_mines returned nothing');
      return row;
    },

    async findMine(workspaceId: string, id: string): Promise<PlaybookMineRow | undefined> {
      const [row] = await db
        .select()
        .from(playbookMines)
        .where(and(eq(playbookMines.workspace_id, workspaceId), eq(playbookMines.id, id)));
      return row;
    },

    async findMineById(id: string): Promise<PlaybookMineRow | undefined> {
      const [row] = await db.select().from(playbookMines).where(eq(playbookMines.id, id));
      return row;
    },

    /** The workspace's mines, newest first. */
    async listMines(workspaceId: string, page: PageRequest) {
      const where = eq(playbookMines.workspace_id, workspaceId);
      const rows = await db
        .select({ ...getTableColumns(playbookMines), total: totalCount() })
        .from(playbookMines)
        .where(where)
        .orderBy(desc(playbookMines.created_at), desc(playbookMines.id))
        .limit(page.limit)
        .offset(page.offset);
      return paginate(page, rows, async () => {
        const [counted] = await db.select({ total: count() }).from(playbookMines).where(where);
        return counted?.total ?? 0;
      });
    },

    /**
     * Takes an unfinished mine for an attempt: `running`, from its first phase. Answers the row,
     * or nothing when it already ended (a late or repeated delivery of its job).
     */
    async startMine(id: string): Promise<PlaybookMineRow | undefined> {
      const [row] = await db
        .update(playbookMines)
        .set({
          status: 'running',
          phase: 'loading',
          attempts: sql`${playbookMines.attempts} + 1`,
          started_at: sql`coalesce(${playbookMines.started_at}, now())`,
        })
        .where(and(eq(playbookMines.id, id), inArray(playbookMines.status, ['queued', 'running'])))
        .returning();
      return row;
    },

    async setMinePhase(id: string, phase: MinePhase): Promise<void> {
      await db
        .update(playbookMines)
        .set({ phase })
        .where(and(eq(playbookMines.id, id), eq(playbookMines.status, 'running')));
    },

    /** Ends a mine: `completed` with its result or `failed` with the reason (safe to show). */
    async finishMine(
      id: string,
      end: { result: Record<string, unknown> } | { error: string },
    ): Promise<boolean> {
      const rows = await db
        .update(playbookMines)
        .set({
          ...('result' in end
            ? { status: 'completed' as const, result: end.result }
            : { status: 'failed' as const, error: end.error }),
          phase: null,
          finished_at: sql`now()`,
        })
        .where(and(eq(playbookMines.id, id), inArray(playbookMines.status, ['queued', 'running'])))
        .returning({ id: playbookMines.id });
      return rows.length > 0;
    },

    /** The workspace's mines not yet ended (queued or running). */
    async countUnfinishedMines(workspaceId: string): Promise<number> {
      const [row] = await db
        .select({ total: count() })
        .from(playbookMines)
        .where(
          and(
            eq(playbookMines.workspace_id, workspaceId),
            inArray(playbookMines.status, ['queued', 'running']),
          ),
        );
      return row?.total ?? 0;
    },

    /** Mines not yet ended, oldest first: what a consuming process hands to the queue again. */
    async unfinishedMines(): Promise<Array<{ id: string }>> {
      return db
        .select({ id: playbookMines.id })
        .from(playbookMines)
        .where(inArray(playbookMines.status, ['queued', 'running']))
        .orderBy(playbookMines.created_at);
    },
  };
}
