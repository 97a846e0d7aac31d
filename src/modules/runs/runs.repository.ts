import {
  and,
  arrayContains,
  asc,
  count,
  desc,
  eq,
  getTableColumns,
  gt,
  gte,
  inArray,
  isNotNull,
  lt,
  lte,
  or,
  type SQL,
  sql,
} from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import { decodeRow, paginate, totalCount } from '../../db/queries.ts';
import { rowsOf } from '../../db/rows.ts';
import { type RunStatus, runEvents, runSteps, runs } from '../../db/schema/runs.ts';
import type { Db } from '../../db/transaction.ts';
import type { RatioArm } from '../../lib/stats/experiment-stats.ts';

export type RunRow = typeof runs.$inferSelect;
export type NewRun = Omit<typeof runs.$inferInsert, 'created_at' | 'updated_at'>;
export type RunChanges = Partial<Omit<NewRun, 'id' | 'workspace_id' | 'created_by'>>;
export type RunStepRow = typeof runSteps.$inferSelect;
export type NewRunStep = Omit<typeof runSteps.$inferInsert, 'id' | 'started_at'>;
export type RunEventRow = typeof runEvents.$inferSelect;

/** A run's row as a raw statement returned it (a `WriteRun` selecting `run.*`). */
export const runFromRaw = (raw: Record<string, unknown>): RunRow => decodeRow(runs, raw);

/** What a completed step adds to its run. */
export interface StepProgress {
  output: string;
  tokensIn: number;
  tokensOut: number;
  cost: number;
  /** The agent's name (absent for a merge step, which is no agent's). */
  agentName?: string;
  tools: string[];
}

/** How a run ends: a final status, and what it ended with. */
export type RunEnd = Pick<RunChanges, 'output' | 'failure_reason' | 'error'> & {
  status: 'Completed' | 'Failed' | 'Cancelled';
};

/** The columns a completed step changes on its run. */
function progressChanges(step: StepProgress): PgUpdateSetSource<typeof runs> {
  return {
    next_step: sql`${runs.next_step} + 1`,
    carry: step.output,
    tokens_in: sql`${runs.tokens_in} + ${step.tokensIn}`,
    tokens_out: sql`${runs.tokens_out} + ${step.tokensOut}`,
    cost: sql`${runs.cost} + ${step.cost}`,
    ...(step.agentName === undefined
      ? {}
      : { agents_used: sql`array_append(${runs.agents_used}, ${step.agentName}::text)` }),
    ...(step.tools.length === 0
      ? {}
      : {
          tools_used: sql`array(select distinct unnest(${runs.tools_used} || array[${sql.join(
            step.tools.map((tool) => sql`${tool}::text`),
            sql`, `,
          )}]) order by 1)`,
        }),
  };
}

/** The columns that end a run: its final status, totals and no owner. */
function finishChanges(end: RunEnd): PgUpdateSetSource<typeof runs> {
  return {
    status: end.status,
    output: end.output ?? null,
    failure_reason: end.failure_reason ?? null,
    error: end.error ?? null,
    control: null,
    lease_owner: null,
    lease_expires_at: null,
    finished_at: sql`now()`,
    duration_ms: sql`(extract(epoch from now() - ${runs.started_at}) * 1000)::int`,
  };
}

/** What a run records of the policy its agent was assembled from. */
export interface RunPolicy {
  policy_id: string;
  policy_version: number;
  policy_variant: string | null;
  experiment_id: string | null;
  experiment_unit: string | null;
}

/** One variant's sums over units (see `experimentSums`). */
export interface ExperimentSums {
  variant: string;
  units_with_runs: number;
  sum_success: number;
  sum_success_sq: number;
  sum_cost: number;
  sum_cost_sq: number;
  sum_runs: number;
  sum_runs_sq: number;
  sum_success_runs: number;
  sum_cost_runs: number;
}

/** One variant's sums of a ratio metric over units (x over y per unit). */
export type RatioSums = RatioArm & { variant: string };

export interface RunFilter {
  workflow_id?: string;
  agent_id?: string;
  status?: RunStatus;
  from?: string;
  to?: string;
  limit: number;
  offset: number;
}

/** Data access for runs, their steps and their event log; scoped by workspace where a caller reads. */
export function createRunsRepository(db: Db) {
  const byId = (workspaceId: string, id: string) => and(eq(runs.workspace_id, workspaceId), eq(runs.id, id));
  /** The run while `owner` holds it Running: every write of an executing worker is guarded by it. */
  const owned = (id: string, owner: string) =>
    and(eq(runs.id, id), eq(runs.lease_owner, owner), eq(runs.status, 'Running'));

  return {
    /**
     * Inserts the run, as the body of a statement's `run` CTE (see `WriteRun`): no row when
     * its idempotency key already started one in this workspace (the unique index decides, so
     * two racing retries make one run).
     */
    insertQuery: (values: NewRun): SQL =>
      db
        .insert(runs)
        .values(values)
        .onConflictDoNothing({
          target: [runs.workspace_id, runs.idempotency_key],
          where: sql`${runs.idempotency_key} is not null`,
        })
        .returning()
        .getSQL(),

    async findByIdempotencyKey(workspaceId: string, key: string): Promise<RunRow | undefined> {
      const [row] = await db
        .select()
        .from(runs)
        .where(and(eq(runs.workspace_id, workspaceId), eq(runs.idempotency_key, key)));
      return row;
    },

    async find(workspaceId: string, id: string): Promise<RunRow | undefined> {
      const [row] = await db.select().from(runs).where(byId(workspaceId, id));
      return row;
    },

    /** For the engine, which is handed a run id by the queue and reads the workspace from the row. */
    async findById(id: string): Promise<RunRow | undefined> {
      const [row] = await db.select().from(runs).where(eq(runs.id, id));
      return row;
    },

    /**
     * Locks the row against other writers with `FOR NO KEY UPDATE`, not `FOR UPDATE`: inserting
     * a run event or step (their foreign key takes `FOR KEY SHARE` on the run) must not wait for
     * it, or a control request and the engine appending under the run's order lock deadlock.
     */
    async findForUpdate(workspaceId: string, id: string): Promise<RunRow | undefined> {
      const [row] = await db.select().from(runs).where(byId(workspaceId, id)).for('no key update');
      return row;
    },

    /**
     * Locks the run's row until the transaction ends (as its updates do): what orders the
     * appends to the run's event log. `FOR NO KEY UPDATE`, so the events' foreign keys (which
     * take KEY SHARE) never wait for it.
     */
    async lockRow(id: string): Promise<void> {
      await db.select({ id: runs.id }).from(runs).where(eq(runs.id, id)).for('no key update');
    },

    /** The run's row locked as `lockRow` locks it: a `run` CTE for a statement that changes only other rows. */
    lockedQuery: (id: string): SQL =>
      db.select().from(runs).where(eq(runs.id, id)).for('no key update').getSQL(),

    /** Newest first; `agent_id` matches runs whose workflow had that agent when they started. */
    async list(workspaceId: string, filter: RunFilter) {
      const where = and(
        eq(runs.workspace_id, workspaceId),
        filter.workflow_id ? eq(runs.workflow_id, filter.workflow_id) : undefined,
        filter.agent_id ? arrayContains(runs.agent_ids, [filter.agent_id]) : undefined,
        filter.status ? eq(runs.status, filter.status) : undefined,
        filter.from ? gte(runs.created_at, new Date(filter.from)) : undefined,
        filter.to ? lt(runs.created_at, new Date(filter.to)) : undefined,
      );
      const rows = await db
        .select({ ...getTableColumns(runs), total: totalCount() })
        .from(runs)
        .where(where)
        .orderBy(desc(runs.created_at), desc(runs.id))
        .limit(filter.limit)
        .offset(filter.offset);
      return paginate(filter, rows, async () => {
        const [result] = await db.select({ value: count() }).from(runs).where(where);
        return result?.value ?? 0;
      });
    },

    /** The rolling feed: the newest runs with what the dashboard shows of each. */
    async summary(workspaceId: string, limit: number) {
      return db
        .select({
          id: runs.id,
          workflow_id: runs.workflow_id,
          workflow_name: runs.workflow_name,
          status: runs.status,
          failure_reason: runs.failure_reason,
          tokens_in: runs.tokens_in,
          tokens_out: runs.tokens_out,
          cost: runs.cost,
          duration_ms: runs.duration_ms,
          created_at: runs.created_at,
          started_at: runs.started_at,
          finished_at: runs.finished_at,
        })
        .from(runs)
        .where(eq(runs.workspace_id, workspaceId))
        .orderBy(desc(runs.created_at), desc(runs.id))
        .limit(limit);
    },

    /**
     * Takes the run for one worker: a Queued run, or a Running one whose owner's lease ran
     * out (its worker died). Atomic, so of two workers handed the same run one wins. The
     * deadline starts at the first claim and survives later ones. The body of a statement's
     * `run` CTE (see `WriteRun`).
     */
    claimQuery: (id: string, owner: string, leaseMs: number): SQL =>
      db
        .update(runs)
        .set({
          status: 'Running',
          lease_owner: owner,
          lease_expires_at: sql`now() + ${leaseMs} * interval '1 millisecond'`,
          started_at: sql`coalesce(${runs.started_at}, now())`,
          deadline_at: sql`coalesce(${runs.deadline_at}, now() + ((${runs.plan} -> 'execution_policy' ->> 'timeout_seconds')::int * interval '1 second'))`,
          attempts: sql`${runs.attempts} + 1`,
          updated_at: sql`now()`,
        })
        .where(
          and(
            eq(runs.id, id),
            or(
              eq(runs.status, 'Queued'),
              and(eq(runs.status, 'Running'), lt(runs.lease_expires_at, sql`now()`)),
            ),
          ),
        )
        .returning()
        .getSQL(),

    /** The run's row while `owner` holds it Running, locked: a `run` CTE that changes only other rows. */
    ownedQuery: (id: string, owner: string): SQL =>
      db.select().from(runs).where(owned(id, owner)).for('no key update').getSQL(),

    /**
     * Adds a completed step to the run's progress and totals while `owner` holds it, and with
     * `end` also ends the run: the body of a `run` CTE.
     */
    progressQuery: (id: string, owner: string, step: StepProgress, end?: RunEnd): SQL =>
      db
        .update(runs)
        .set({ ...progressChanges(step), ...(end ? finishChanges(end) : {}), updated_at: sql`now()` })
        .where(owned(id, owner))
        .returning()
        .getSQL(),

    /** Ends the run while `owner` holds it: the body of a `run` CTE. */
    finishQuery: (id: string, owner: string, end: RunEnd): SQL =>
      db
        .update(runs)
        .set({ ...finishChanges(end), updated_at: sql`now()` })
        .where(owned(id, owner))
        .returning()
        .getSQL(),

    /**
     * Inserts a step of the run of the statement's `run` CTE (nothing when it has no row): a
     * Running step, or one that has already ended when its start was not written apart.
     */
    insertStepQuery(
      step: Omit<NewRunStep, 'run_id' | 'workspace_id'> & { id: string; started_at: Date },
    ): SQL {
      return sql`insert into ${runSteps} (id, run_id, workspace_id, position, attempt, kind, agent_id,
          agent_name, status, prompt, playbook_triggers, output, tool_calls, provider, model,
          tokens_in, tokens_out, cost, price, latency_ms, error, degraded, started_at, finished_at)
        select ${step.id}::uuid, run.id, run.workspace_id, ${step.position}::int, ${step.attempt ?? 1}::int,
          ${step.kind}::varchar, ${step.agent_id ?? null}::uuid, ${step.agent_name ?? null}::varchar,
          ${step.status}::varchar, ${step.prompt ?? null}::text,
          ${JSON.stringify(step.playbook_triggers ?? [])}::jsonb, ${step.output ?? null}::text,
          ${JSON.stringify(step.tool_calls ?? [])}::jsonb, ${step.provider ?? null}::varchar,
          ${step.model ?? null}::varchar, ${step.tokens_in ?? 0}::int, ${step.tokens_out ?? 0}::int,
          ${step.cost ?? 0}::float8, ${step.price ? JSON.stringify(step.price) : null}::jsonb,
          ${step.latency_ms ?? null}::int, ${step.error ?? null}::text, ${step.degraded ?? null}::text,
          ${step.started_at.toISOString()}::timestamptz,
          ${step.finished_at?.toISOString() ?? null}::timestamptz
        from run
        returning id`;
    },

    /** Ends a Running step when the statement's `run` CTE has a row (its worker still owns it). */
    endStepQuery: (id: string, changes: Partial<NewRunStep>): SQL =>
      db
        .update(runSteps)
        .set(changes)
        .where(and(eq(runSteps.id, id), eq(runSteps.status, 'Running'), sql`exists (select from run)`))
        .getSQL(),

    /** A later claim's part: the steps its lost worker left Running fail, for a run still under the limit. */
    abandonStepsQuery: (maxClaims: number, reason: string): SQL =>
      db
        .update(runSteps)
        .set({ status: 'Failed', error: reason, finished_at: sql`now()` })
        .where(
          and(
            sql`${runSteps.run_id} = (select id from run where attempts between 2 and ${maxClaims})`,
            eq(runSteps.status, 'Running'),
          ),
        )
        .getSQL(),

    /** The pending control requests (`cancel`, `pause`) among runs `ids`. */
    async controlsOf(ids: string[]): Promise<{ id: string; control: string }[]> {
      const rows = await db
        .select({ id: runs.id, control: runs.control })
        .from(runs)
        .where(and(inArray(runs.id, ids), isNotNull(runs.control)));
      return rows as { id: string; control: string }[];
    },

    /** Extends the owner's lease; undefined when the run is no longer this owner's (or not Running). */
    async renewLease(id: string, owner: string, leaseMs: number) {
      const [row] = await db
        .update(runs)
        .set({ lease_expires_at: sql`now() + ${leaseMs} * interval '1 millisecond'` })
        .where(and(eq(runs.id, id), eq(runs.lease_owner, owner), eq(runs.status, 'Running')))
        .returning({ control: runs.control });
      return row;
    },

    /** Updates the run only while `owner` holds it in status Running. */
    async updateOwned(
      id: string,
      owner: string,
      changes: PgUpdateSetSource<typeof runs>,
    ): Promise<RunRow | undefined> {
      const [row] = await db
        .update(runs)
        .set({ ...changes, updated_at: sql`now()` })
        .where(owned(id, owner))
        .returning();
      return row;
    },

    async update(workspaceId: string, id: string, changes: RunChanges): Promise<RunRow | undefined> {
      const [row] = await db
        .update(runs)
        .set({ ...changes, updated_at: sql`now()` })
        .where(byId(workspaceId, id))
        .returning();
      return row;
    },

    /**
     * Runs some process should pick up: Queued ones older than `queuedForMs` (their
     * enqueue after commit may have been lost) and Running ones whose lease ran out.
     */
    async findStranded(queuedForMs: number, limit: number) {
      return db
        .select({
          id: runs.id,
          status: runs.status,
          updated_at: runs.updated_at,
          lease_expires_at: runs.lease_expires_at,
        })
        .from(runs)
        .where(
          or(
            and(
              eq(runs.status, 'Queued'),
              lte(runs.updated_at, sql`now() - ${queuedForMs} * interval '1 millisecond'`),
            ),
            and(eq(runs.status, 'Running'), lt(runs.lease_expires_at, sql`now()`)),
          ),
        )
        .orderBy(asc(runs.created_at))
        .limit(limit);
    },

    /**
     * Per-variant sums over the units of an experiment (docs/policies.md), from its finished
     * runs: for success rate x = completed runs, for cost x = cost; y = finished runs. Units
     * without a finished run add nothing but are counted by their exposure.
     */
    async experimentSums(workspaceId: string, experimentId: string): Promise<ExperimentSums[]> {
      const result = await db.execute(sql`
        with per_unit as (
          select policy_variant as variant, experiment_unit as unit,
                 count(*) filter (where status = 'Completed')::float8 as successes,
                 count(*)::float8 as runs,
                 coalesce(sum(cost), 0)::float8 as cost
            from runs
           where workspace_id = ${workspaceId} and experiment_id = ${experimentId}
             and status in ('Completed', 'Failed', 'Cancelled')
           group by 1, 2)
        select variant,
               count(*)::int as units_with_runs,
               sum(successes) as sum_success, sum(successes * successes) as sum_success_sq,
               sum(cost) as sum_cost, sum(cost * cost) as sum_cost_sq,
               sum(runs) as sum_runs, sum(runs * runs) as sum_runs_sq,
               sum(successes * runs) as sum_success_runs, sum(cost * runs) as sum_cost_runs
          from per_unit group by variant`);
      return rowsOf<Record<string, unknown>>(result).map((row) => ({
        variant: String(row.variant),
        units_with_runs: Number(row.units_with_runs),
        sum_success: Number(row.sum_success),
        sum_success_sq: Number(row.sum_success_sq),
        sum_cost: Number(row.sum_cost),
        sum_cost_sq: Number(row.sum_cost_sq),
        sum_runs: Number(row.sum_runs),
        sum_runs_sq: Number(row.sum_runs_sq),
        sum_success_runs: Number(row.sum_success_runs),
        sum_cost_runs: Number(row.sum_cost_runs),
      }));
    },

    /**
     * Per-variant sums over the units of an experiment for the retrieval hit-rate: per unit,
     * x = `knowledge_search` calls of its finished runs that found at least one result, y =
     * all its `knowledge_search` calls. Units that never searched are not in it.
     */
    async experimentSearchSums(workspaceId: string, experimentId: string): Promise<RatioSums[]> {
      const result = await db.execute(sql`
        with per_unit as (
          select r.policy_variant as variant, r.experiment_unit as unit,
                 count(*) filter (where jsonb_typeof(c.call -> 'output' -> 'results') = 'array'
                   and jsonb_array_length(c.call -> 'output' -> 'results') > 0)::float8 as hits,
                 count(*)::float8 as searches
            from runs r
            join run_steps s on s.run_id = r.id and s.workspace_id = r.workspace_id
            cross join lateral jsonb_array_elements(s.tool_calls) as c(call)
           where r.workspace_id = ${workspaceId} and r.experiment_id = ${experimentId}
             and r.status in ('Completed', 'Failed', 'Cancelled')
             and c.call ->> 'name' = 'knowledge_search'
           group by 1, 2)
        select variant, count(*)::int as units, sum(hits) as sum_x, sum(searches) as sum_y,
               sum(hits * hits) as sum_xx, sum(searches * searches) as sum_yy,
               sum(hits * searches) as sum_xy
          from per_unit group by variant`);
      return rowsOf<Record<string, unknown>>(result).map((row) => ({
        variant: String(row.variant),
        units: Number(row.units),
        sum_x: Number(row.sum_x),
        sum_y: Number(row.sum_y),
        sum_xx: Number(row.sum_xx),
        sum_yy: Number(row.sum_yy),
        sum_xy: Number(row.sum_xy),
      }));
    },

    /** Durations (ms) of an experiment's finished runs per variant, for the p95. */
    async experimentDurations(workspaceId: string, experimentId: string) {
      return db
        .select({ variant: runs.policy_variant, duration_ms: runs.duration_ms })
        .from(runs)
        .where(
          and(
            eq(runs.workspace_id, workspaceId),
            eq(runs.experiment_id, experimentId),
            sql`${runs.status} in ('Completed', 'Failed', 'Cancelled')`,
            sql`${runs.duration_ms} is not null`,
          ),
        );
    },

    /** Records the policy a run's agent was assembled from, once (the first agent with a policy). */
    async recordPolicy(id: string, policy: RunPolicy): Promise<void> {
      await db
        .update(runs)
        .set(policy)
        .where(and(eq(runs.id, id), sql`${runs.policy_id} is null`));
    },

    /** Every attempt of every step, in order. */
    async listSteps(runId: string): Promise<RunStepRow[]> {
      return db
        .select()
        .from(runSteps)
        .where(eq(runSteps.run_id, runId))
        .orderBy(asc(runSteps.position), asc(runSteps.attempt), asc(runSteps.started_at));
    },

    /** Appends to the run's event log; returns the ids (increasing) in order. */
    async appendEvents(
      runId: string,
      workspaceId: string,
      events: { type: string; data: Record<string, unknown> }[],
    ): Promise<number[]> {
      if (events.length === 0) return [];
      const rows = await db
        .insert(runEvents)
        .values(events.map((event) => ({ run_id: runId, workspace_id: workspaceId, ...event })))
        .returning({ id: runEvents.id });
      return rows.map((row) => row.id).sort((a, b) => a - b);
    },

    async eventsAfter(runId: string, after: number, limit: number): Promise<RunEventRow[]> {
      return db
        .select()
        .from(runEvents)
        .where(and(eq(runEvents.run_id, runId), gt(runEvents.id, after)))
        .orderBy(asc(runEvents.id))
        .limit(limit);
    },
  };
}

export type RunsRepository = ReturnType<typeof createRunsRepository>;
