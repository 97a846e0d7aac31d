/**
 * Aggregates over the raw tables of runs, run steps, agents and chat, read-only, for the
 * analytics and the dashboard's KPIs. Like playbook mining, a reporting module reads other
 * modules' tables through SQL (never writes them). Every query is scoped by `workspace_id`
 * and starts from an index: runs by `runs_workspace_created_idx` (a run belongs to the
 * window it was created in), their steps by `run_steps_run_idx`, messages through their
 * conversations (`conversations_workspace_last_idx`: a conversation with a message in the
 * window has its last message at or after the window's start). Whole UTC days of runs and
 * steps are also kept as daily rollups (`analytics_daily_runs`, `_steps` and `_agents`, this
 * module's tables), written by `computeDay` and read by the `rollup*` and `rolled*` methods.
 */
import { type SQL, sql } from 'drizzle-orm';
import { rowsOf } from '../../db/rows.ts';
import type { Db } from '../../db/transaction.ts';
import { BUCKETS, GROWTH, type Histogram } from '../../lib/histogram.ts';

export type Bucket = 'hour' | 'day';

/** Run figures of a window (or of one bucket of it). */
export interface RunAggregate {
  runs: number;
  completed: number;
  failed: number;
  cancelled: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  /** Over the duration_ms of runs that finished (Completed or Failed); null when none did. */
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
}

export interface ChatAggregate {
  conversations: number;
  messages: number;
}

/** One group of a cost breakdown. */
export interface CostGroup {
  key: string | null;
  label: string | null;
  cost: number;
  input_tokens: number;
  output_tokens: number;
  count: number;
}

/** An agent's figures over the steps it ran (of one part of a window, or all of it). */
export interface AgentStats {
  runs: number;
  completed: number;
  failed: number;
  steps: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  busy_ms: number;
  /** Exact (`percentile_cont`), from raw steps only. */
  latency_p50_ms?: number | null;
  latency_p95_ms?: number | null;
  /** The steps' `latency_ms` histogram. */
  latency: Histogram;
}

/** A half-open time range [from, to). */
export type Range = [Date, Date];
export type CostBy = 'provider' | 'model' | 'agent';

const RUN_COLUMNS = sql`count(*)::int as runs,
  (count(*) filter (where status = 'Completed'))::int as completed,
  (count(*) filter (where status = 'Failed'))::int as failed,
  (count(*) filter (where status = 'Cancelled'))::int as cancelled,
  coalesce(sum(tokens_in), 0)::float8 as input_tokens,
  coalesce(sum(tokens_out), 0)::float8 as output_tokens,
  coalesce(sum(cost), 0)::float8 as cost,
  percentile_cont(0.5) within group (order by duration_ms)
    filter (where status in ('Completed', 'Failed')) as latency_p50_ms,
  percentile_cont(0.95) within group (order by duration_ms)
    filter (where status in ('Completed', 'Failed')) as latency_p95_ms`;

type Raw = Record<string, unknown>;
const num = (value: unknown): number => Number(value ?? 0);
const maybe = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);

function runAggregate(row: Raw | undefined): RunAggregate {
  return {
    runs: num(row?.runs),
    completed: num(row?.completed),
    failed: num(row?.failed),
    cancelled: num(row?.cancelled),
    input_tokens: num(row?.input_tokens),
    output_tokens: num(row?.output_tokens),
    cost: num(row?.cost),
    latency_p50_ms: maybe(row?.latency_p50_ms),
    latency_p95_ms: maybe(row?.latency_p95_ms),
  };
}

/**
 * Sums of runs of one UTC day (`YYYY-MM-DD`) with their latency histogram; the percentiles
 * only when read from raw runs (exact).
 */
export type DayFigures = Omit<RunAggregate, 'latency_p50_ms' | 'latency_p95_ms'> &
  Partial<Pick<RunAggregate, 'latency_p50_ms' | 'latency_p95_ms'>> & { latency: Histogram };

/** The histogram bucket of a duration column, as `bucketOf` in lib/histogram.ts. */
const latencyBucket = (column: SQL) =>
  sql`(case when ${column} < 1 then 0 else least(${sql.raw(String(BUCKETS - 1))}, 1 + floor(ln(${column}) / ln(${sql.raw(String(GROWTH))}))::int) end)`;

/** Finished runs with a duration: those the latency figures count. */
const FINISHED = sql`status in ('Completed', 'Failed') and duration_ms is not null`;

/** Folds per-day sum rows and per-day histogram rows into one map by day. */
function dayFigures(sums: Raw[], buckets: Raw[]): Map<string, DayFigures> {
  const days = new Map<string, DayFigures>();
  for (const row of sums) {
    days.set(String(row.day), {
      runs: num(row.runs),
      completed: num(row.completed),
      failed: num(row.failed),
      cancelled: num(row.cancelled),
      input_tokens: num(row.input_tokens),
      output_tokens: num(row.output_tokens),
      cost: num(row.cost),
      latency_p50_ms: maybe(row.latency_p50_ms),
      latency_p95_ms: maybe(row.latency_p95_ms),
      latency: new Map(),
    });
  }
  for (const row of buckets) {
    const day = days.get(String(row.day));
    if (!day) continue;
    const bucket = num(row.bucket);
    day.latency.set(bucket, (day.latency.get(bucket) ?? 0) + num(row.n));
  }
  return days;
}

/** `column` in any of `ranges`. */
const inRanges = (column: SQL, ranges: Range[]) =>
  sql`(${sql.join(
    ranges.map(([from, to]) => sql`(${column} >= ${from} and ${column} < ${to})`),
    sql` or `,
  )})`;

/** A list of `YYYY-MM-DD` days as SQL dates (for `day in (...)`). */
const dayList = (days: string[]) =>
  sql.join(
    days.map((day) => sql`${day}::date`),
    sql`, `,
  );

/**
 * The step breakdowns' groups over steps `s`: by provider, by model (keyed by its provider: a
 * model name is per provider) and by agent. `grouping(...)` tells the sets apart: it sets a bit
 * for each listed column the row's set does not group by.
 */
const STEP_GROUPING_SETS = sql`grouping sets ((s.provider), (s.provider, s.model), (s.agent_id, s.agent_name))`;
const STEP_GROUPS = sql`grouping(s.provider, s.model, s.agent_id) as grouping_set,
  s.provider, s.model, s.agent_id::text as agent_id, s.agent_name`;
/** `grouping_set` of each breakdown: (provider) 0b011, (provider, model) 0b001, (agent) 0b110. */
const SET_OF: Record<number, CostBy> = { 3: 'provider', 1: 'model', 6: 'agent' };

/** Cost groups of one pass over steps, by breakdown. */
export type StepBreakdowns = Record<CostBy, CostGroup[]>;

function stepBreakdowns(found: Raw[]): StepBreakdowns {
  const breakdowns: StepBreakdowns = { provider: [], model: [], agent: [] };
  for (const row of found) {
    const by = SET_OF[num(row.grouping_set)];
    if (!by) continue;
    const text = (value: unknown) => (value as string | null) ?? null;
    const [key, label] =
      by === 'provider'
        ? [text(row.provider), text(row.provider)]
        : by === 'model'
          ? [text(row.provider), text(row.model)]
          : [text(row.agent_id), text(row.agent_name)];
    breakdowns[by].push({
      key,
      label,
      cost: num(row.cost),
      input_tokens: num(row.input_tokens),
      output_tokens: num(row.output_tokens),
      count: num(row.count),
    });
  }
  return breakdowns;
}

const costGroups = (found: Raw[]): CostGroup[] =>
  found.map((row) => ({
    key: (row.key as string | null) ?? null,
    label: (row.label as string | null) ?? null,
    cost: num(row.cost),
    input_tokens: num(row.input_tokens),
    output_tokens: num(row.output_tokens),
    count: num(row.count),
  }));

/** An agent's run, outcome, step, token and cost sums over its steps `st`. */
const AGENT_SUMS = sql`count(distinct run_id)::int as runs,
  (count(distinct run_id) filter (where run_status = 'Completed'))::int as completed,
  (count(distinct run_id) filter (where run_status = 'Failed'))::int as failed,
  count(*)::int as steps,
  coalesce(sum(tokens_in), 0)::float8 as input_tokens,
  coalesce(sum(tokens_out), 0)::float8 as output_tokens,
  coalesce(sum(cost), 0)::float8 as cost`;

/** A stored histogram (`{"bucket": count}`), or a JSON array of them, merged into `into`. */
function addHistograms(into: Histogram, stored: unknown): void {
  const parsed = typeof stored === 'string' ? JSON.parse(stored) : stored;
  for (const histogram of Array.isArray(parsed) ? parsed : [parsed]) {
    for (const [bucket, count] of Object.entries((histogram ?? {}) as Record<string, number>)) {
      into.set(Number(bucket), (into.get(Number(bucket)) ?? 0) + Number(count));
    }
  }
}

/** Per-agent rows (sums, and `latency_hist` or `latency_hists`) by agent id. */
function agentStatsOf(found: Raw[]): Map<string, AgentStats> {
  const agents = new Map<string, AgentStats>();
  for (const row of found) {
    const latency: Histogram = new Map();
    addHistograms(latency, row.latency_hist ?? row.latency_hists);
    agents.set(String(row.agent_id), {
      runs: num(row.runs),
      completed: num(row.completed),
      failed: num(row.failed),
      steps: num(row.steps),
      input_tokens: num(row.input_tokens),
      output_tokens: num(row.output_tokens),
      cost: num(row.cost),
      busy_ms: num(row.busy_ms),
      ...('latency_p50_ms' in row
        ? { latency_p50_ms: maybe(row.latency_p50_ms), latency_p95_ms: maybe(row.latency_p95_ms) }
        : {}),
      latency,
    });
  }
  return agents;
}

/** The dashboard's counts of one workspace (`dashboardCounts`). */
export interface DashboardCounts {
  runs: RunAggregate;
  /** Runs executing and waiting now. */
  live: { running: number; queued: number };
  /** Agents, and those Busy now. */
  agents: { total: number; busy: number };
  documents: { processed: number; processing: number; failed: number };
  /** Searches and those that met their `min_score` (a hit), over whole UTC days. */
  searches: { searches: number; hits: number };
}

/** Bucket start as epoch milliseconds (no driver-specific timestamp parsing). */
const bucketStart = (bucket: Bucket, column: SQL) =>
  sql`(extract(epoch from date_trunc(${bucket}, ${column}, 'UTC')) * 1000)::float8`;

/** Read-only aggregates over other modules' tables, always for one workspace. */
export function createAnalyticsRepository(db: Db) {
  const rows = async (query: SQL): Promise<Raw[]> => rowsOf<Raw>(await db.execute(query));

  const runsIn = (workspaceId: string, from: Date, to: Date) =>
    sql`workspace_id = ${workspaceId} and created_at >= ${from} and created_at < ${to}`;

  return {
    /** Runs created in [from, to). */
    async runTotals(workspaceId: string, from: Date, to: Date): Promise<RunAggregate> {
      const [row] = await rows(sql`select ${RUN_COLUMNS} from runs where ${runsIn(workspaceId, from, to)}`);
      return runAggregate(row);
    },

    /** Runs created in [from, to) per bucket (buckets without runs are absent). */
    async runSeries(
      workspaceId: string,
      from: Date,
      to: Date,
      bucket: Bucket,
    ): Promise<Map<number, RunAggregate>> {
      const found = await rows(
        sql`select ${bucketStart(bucket, sql`created_at`)} as bucket, ${RUN_COLUMNS}
            from runs where ${runsIn(workspaceId, from, to)} group by 1`,
      );
      return new Map(found.map((row) => [num(row.bucket), runAggregate(row)]));
    },

    /** Conversations and messages created in [from, to), per bucket (buckets without any are absent). */
    async chatSeries(
      workspaceId: string,
      from: Date,
      to: Date,
      bucket: Bucket,
    ): Promise<Map<number, ChatAggregate>> {
      const found = await rows(sql`
        with c as (
          select id, created_at from conversations
          where workspace_id = ${workspaceId} and last_message_at >= ${from}
        ),
        events as (
          select created_at, 1 as conversation, 0 as message from c
          where created_at >= ${from} and created_at < ${to}
          union all
          select m.created_at, 0, 1 from c join messages m on m.conversation_id = c.id
          where m.created_at >= ${from} and m.created_at < ${to}
        )
        select ${bucketStart(bucket, sql`created_at`)} as bucket,
          sum(conversation)::int as conversations, sum(message)::int as messages
        from events group by 1`);
      return new Map(
        found.map((row) => [
          num(row.bucket),
          { conversations: num(row.conversations), messages: num(row.messages) },
        ]),
      );
    },

    /** Cost per bucket of runs created in any of `ranges` ([from, to) each). */
    async costSeries(workspaceId: string, ranges: Range[], bucket: Bucket): Promise<Map<number, number>> {
      if (ranges.length === 0) return new Map();
      const found = await rows(
        sql`select ${bucketStart(bucket, sql`created_at`)} as bucket, coalesce(sum(cost), 0)::float8 as cost
            from runs where workspace_id = ${workspaceId} and ${inRanges(sql`created_at`, ranges)} group by 1`,
      );
      return new Map(found.map((row) => [num(row.bucket), num(row.cost)]));
    },

    /**
     * The steps of runs created in any of `ranges`, grouped by provider, by model and by agent
     * in one pass (grouping sets): their cost and tokens, and how many steps each group has.
     */
    async stepCosts(workspaceId: string, ranges: Range[]): Promise<StepBreakdowns> {
      if (ranges.length === 0) return { provider: [], model: [], agent: [] };
      return stepBreakdowns(
        await rows(sql`select ${STEP_GROUPS}, coalesce(sum(s.cost), 0)::float8 as cost,
            coalesce(sum(s.tokens_in), 0)::float8 as input_tokens,
            coalesce(sum(s.tokens_out), 0)::float8 as output_tokens, count(*)::int as count
          from runs r join run_steps s on s.run_id = r.id
          where r.workspace_id = ${workspaceId} and ${inRanges(sql`r.created_at`, ranges)}
          group by ${STEP_GROUPING_SETS}`),
      );
    },

    /** `stepCosts` of the given rolled-up days, from their step rollups. */
    async rolledStepCosts(workspaceId: string, days: string[]): Promise<StepBreakdowns> {
      if (days.length === 0) return { provider: [], model: [], agent: [] };
      return stepBreakdowns(
        await rows(sql`select ${STEP_GROUPS}, sum(s.cost)::float8 as cost,
            sum(s.tokens_in)::float8 as input_tokens, sum(s.tokens_out)::float8 as output_tokens,
            sum(s.steps)::int as count
          from analytics_daily_steps s
          where s.workspace_id = ${workspaceId} and s.day in (${dayList(days)})
          group by ${STEP_GROUPING_SETS}`),
      );
    },

    /** Runs created in any of `ranges` grouped by workflow (its name as the run recorded it). */
    async workflowCosts(workspaceId: string, ranges: Range[]): Promise<CostGroup[]> {
      if (ranges.length === 0) return [];
      return costGroups(
        await rows(sql`
          select workflow_id::text as key, workflow_name as label,
            coalesce(sum(cost), 0)::float8 as cost,
            coalesce(sum(tokens_in), 0)::float8 as input_tokens,
            coalesce(sum(tokens_out), 0)::float8 as output_tokens,
            count(*)::int as count
          from runs where workspace_id = ${workspaceId} and ${inRanges(sql`created_at`, ranges)}
          group by 1, 2`),
      );
    },

    /** `workflowCosts` of the given rolled-up days, from their run rollups. */
    async rolledWorkflowCosts(workspaceId: string, days: string[]): Promise<CostGroup[]> {
      if (days.length === 0) return [];
      return costGroups(
        await rows(sql`
          select workflow_id::text as key, workflow_name as label, sum(cost)::float8 as cost,
            sum(tokens_in)::float8 as input_tokens, sum(tokens_out)::float8 as output_tokens,
            sum(runs)::int as count
          from analytics_daily_runs
          where workspace_id = ${workspaceId} and day in (${dayList(days)})
          group by 1, 2`),
      );
    },

    /** Every agent of the workspace as it is now. */
    async agentList(workspaceId: string): Promise<Array<{ agent_id: string; name: string; status: string }>> {
      const found = await rows(sql`select id::text as agent_id, name, status from agents
        where workspace_id = ${workspaceId}`);
      return found.map((row) => ({
        agent_id: String(row.agent_id),
        name: String(row.name),
        status: String(row.status),
      }));
    },

    /**
     * Per agent, the `agent` steps it ran in runs created in any of `ranges`: the runs it took
     * part in and their outcome, tokens, cost, exact step-latency percentiles and histogram, and
     * its busy time (its steps' time clipped to `window`; a step still running counts until
     * `now`). Agents without such steps are absent.
     */
    async agentStats(
      workspaceId: string,
      ranges: Range[],
      window: Range,
      now: Date,
    ): Promise<Map<string, AgentStats>> {
      if (ranges.length === 0) return new Map();
      const [from, to] = window;
      const steps = sql`
        select s.agent_id, s.run_id, r.status as run_status, s.tokens_in, s.tokens_out, s.cost, s.latency_ms,
          greatest(0, extract(epoch from (
            least(coalesce(s.finished_at, ${now}::timestamptz), ${to}::timestamptz)
            - greatest(s.started_at, ${from}::timestamptz))) * 1000) as busy_ms
        from runs r join run_steps s on s.run_id = r.id
        where r.workspace_id = ${workspaceId} and ${inRanges(sql`r.created_at`, ranges)}
          and s.kind = 'agent' and s.agent_id is not null`;
      // One statement: the steps are read once, summed per agent and bucketed for its histogram.
      const found = await rows(sql`with st as materialized (${steps}),
        hist as (
          select agent_id, jsonb_object_agg(bucket::text, n) as latency_hist
          from (select agent_id, ${latencyBucket(sql`latency_ms`)} as bucket, count(*)::int as n
                from st where latency_ms is not null group by 1, 2) b
          group by agent_id
        )
        select st.agent_id::text as agent_id, ${AGENT_SUMS},
          coalesce(sum(busy_ms), 0)::float8 as busy_ms,
          percentile_cont(0.5) within group (order by latency_ms) as latency_p50_ms,
          percentile_cont(0.95) within group (order by latency_ms) as latency_p95_ms,
          (select h.latency_hist from hist h where h.agent_id = st.agent_id) as latency_hist
        from st group by st.agent_id`);
      return agentStatsOf(found);
    },

    /** `agentStats` of the given rolled-up days (busy time unclipped; percentiles left to the histogram). */
    async rolledAgentStats(workspaceId: string, days: string[]): Promise<Map<string, AgentStats>> {
      if (days.length === 0) return new Map();
      return agentStatsOf(
        await rows(sql`select agent_id::text as agent_id, sum(runs)::int as runs, sum(completed)::int as completed,
            sum(failed)::int as failed, sum(steps)::int as steps, sum(tokens_in)::float8 as input_tokens,
            sum(tokens_out)::float8 as output_tokens, sum(cost)::float8 as cost, sum(busy_ms)::float8 as busy_ms,
            jsonb_agg(latency_hist) as latency_hists
          from analytics_daily_agents where workspace_id = ${workspaceId} and day in (${dayList(days)})
          group by 1`),
      );
    },

    /**
     * Per UTC day, the runs created in any of `ranges` ([from, to) each), with their latency
     * histogram: the raw part of a window that also reads rollups.
     */
    async rawDays(workspaceId: string, ranges: Range[]): Promise<Map<string, DayFigures>> {
      if (ranges.length === 0) return new Map();
      const where = sql`workspace_id = ${workspaceId} and ${inRanges(sql`created_at`, ranges)}`;
      const day = sql`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`;
      const [sums, buckets] = await Promise.all([
        rows(sql`select ${day} as day, ${RUN_COLUMNS} from runs where ${where} group by 1`),
        rows(sql`select ${day} as day, ${latencyBucket(sql`duration_ms`)} as bucket, count(*)::int as n
          from runs where ${where} and ${FINISHED} group by 1, 2`),
      ]);
      return dayFigures(sums, buckets);
    },

    /**
     * The rolled-up days in [fromDay, toDay) that are not dirty (`YYYY-MM-DD`), each with its
     * exact latency percentiles; with `finishedSteps`, only days without unfinished agent steps.
     */
    async cleanDays(
      workspaceId: string,
      fromDay: string,
      toDay: string,
      finishedSteps = false,
    ): Promise<Map<string, { latency_p50_ms: number | null; latency_p95_ms: number | null }>> {
      const found = await rows(sql`select to_char(day, 'YYYY-MM-DD') as day, latency_p50_ms, latency_p95_ms
        from analytics_rollup_days
        where workspace_id = ${workspaceId} and day >= ${fromDay}::date and day < ${toDay}::date and not dirty
          ${finishedSteps ? sql`and open_steps = 0` : sql``}`);
      return new Map(
        found.map((row) => [
          String(row.day),
          { latency_p50_ms: maybe(row.latency_p50_ms), latency_p95_ms: maybe(row.latency_p95_ms) },
        ]),
      );
    },

    /** The latency histograms of the given rolled-up days, merged. */
    async rollupLatency(workspaceId: string, days: string[]): Promise<Histogram> {
      if (days.length === 0) return new Map();
      const found = await rows(sql`select h.key::int as bucket, sum(h.value::int)::int as n
        from analytics_rollup_days d, jsonb_each_text(d.latency_hist) h
        where d.workspace_id = ${workspaceId} and d.day in (${dayList(days)})
        group by 1`);
      return new Map(found.map((row) => [num(row.bucket), num(row.n)]));
    },

    /** Per UTC day in [fromDay, toDay), the rollups' sums (their histograms come with `cleanDays`). */
    async rollupDays(workspaceId: string, fromDay: string, toDay: string): Promise<Map<string, DayFigures>> {
      const sums = await rows(sql`select to_char(day, 'YYYY-MM-DD') as day, sum(runs)::int as runs,
          sum(completed)::int as completed, sum(failed)::int as failed, sum(cancelled)::int as cancelled,
          sum(tokens_in)::float8 as input_tokens, sum(tokens_out)::float8 as output_tokens,
          sum(cost)::float8 as cost
        from analytics_daily_runs
        where workspace_id = ${workspaceId} and day >= ${fromDay}::date and day < ${toDay}::date
        group by 1`);
      return dayFigures(sums, []);
    },

    /** Every workspace's id (the rollup job walks them). */
    async workspaceIds(): Promise<string[]> {
      return (await rows(sql`select id::text as id from workspaces order by id`)).map((row) =>
        String(row.id),
      );
    },

    /** The workspace's latest rolled-up day, its dirty days, and the creation time of its first run. */
    async rollupState(
      workspaceId: string,
    ): Promise<{ last: string | null; dirty: string[]; firstRunAt: Date | null }> {
      const [[state], dirty, [first]] = await Promise.all([
        rows(sql`select to_char(max(day), 'YYYY-MM-DD') as last from analytics_rollup_days
          where workspace_id = ${workspaceId}`),
        rows(sql`select to_char(day, 'YYYY-MM-DD') as day from analytics_rollup_days
          where workspace_id = ${workspaceId} and dirty order by day`),
        rows(sql`select (extract(epoch from min(created_at)) * 1000)::float8 as at from runs
          where workspace_id = ${workspaceId}`),
      ]);
      return {
        last: (state?.last as string | null) ?? null,
        dirty: dirty.map((row) => String(row.day)),
        firstRunAt: first?.at === null || first?.at === undefined ? null : new Date(num(first.at)),
      };
    },

    /**
     * (Re)computes the rollups of one workspace-day from its runs; call inside a transaction.
     * The day's row in `analytics_rollup_days` is written (and so locked) first, clean: a run
     * changed while this reads waits for the commit and then marks the day dirty again, and
     * a run changed before it is in what this reads.
     */
    async computeDay(workspaceId: string, day: string): Promise<void> {
      await db.execute(sql`insert into analytics_rollup_days (workspace_id, day, dirty, computed_at)
        values (${workspaceId}, ${day}::date, false, now())
        on conflict (workspace_id, day) do update set dirty = false, computed_at = now()`);
      for (const table of ['analytics_daily_runs', 'analytics_daily_steps', 'analytics_daily_agents']) {
        await db.execute(
          sql`delete from ${sql.identifier(table)} where workspace_id = ${workspaceId} and day = ${day}::date`,
        );
      }
      const start = sql`(${day}::date)::timestamp at time zone 'UTC'`;
      const ofDay = sql`workspace_id = ${workspaceId} and created_at >= ${start} and created_at < ${start} + interval '1 day'`;
      await db.execute(sql`
        insert into analytics_daily_runs (workspace_id, day, workflow_id, workflow_name, runs, completed,
          failed, cancelled, tokens_in, tokens_out, cost)
        select ${workspaceId}, ${day}::date, workflow_id, workflow_name, count(*)::int,
          (count(*) filter (where status = 'Completed'))::int,
          (count(*) filter (where status = 'Failed'))::int,
          (count(*) filter (where status = 'Cancelled'))::int,
          coalesce(sum(tokens_in), 0)::bigint, coalesce(sum(tokens_out), 0)::bigint,
          coalesce(sum(cost), 0)::float8
        from runs where ${ofDay} group by workflow_id, workflow_name`);
      const stepsOfDay = sql`from runs r join run_steps s on s.run_id = r.id
        where r.workspace_id = ${workspaceId} and r.created_at >= ${start} and r.created_at < ${start} + interval '1 day'`;
      await db.execute(sql`
        insert into analytics_daily_steps (workspace_id, day, provider, model, agent_id, agent_name, steps,
          tokens_in, tokens_out, cost)
        select ${workspaceId}, ${day}::date, s.provider, s.model, s.agent_id, s.agent_name, count(*)::int,
          coalesce(sum(s.tokens_in), 0)::bigint, coalesce(sum(s.tokens_out), 0)::bigint,
          coalesce(sum(s.cost), 0)::float8
        ${stepsOfDay} group by s.provider, s.model, s.agent_id, s.agent_name`);
      await db.execute(sql`
        with st as (
          select s.agent_id, s.run_id, r.status as run_status, s.tokens_in, s.tokens_out, s.cost, s.latency_ms,
            greatest(0, extract(epoch from (s.finished_at - s.started_at)) * 1000) as busy_ms
          ${stepsOfDay} and s.kind = 'agent' and s.agent_id is not null
        ),
        sums as (
          select agent_id, ${AGENT_SUMS}, coalesce(sum(busy_ms), 0)::float8 as busy_ms from st group by agent_id
        ),
        hist as (
          select agent_id, jsonb_object_agg(bucket::text, n) as latency_hist
          from (select agent_id, ${latencyBucket(sql`latency_ms`)} as bucket, count(*)::int as n
                from st where latency_ms is not null group by 1, 2) b
          group by agent_id
        )
        insert into analytics_daily_agents (workspace_id, day, agent_id, runs, completed, failed, steps,
          tokens_in, tokens_out, cost, busy_ms, latency_hist)
        select ${workspaceId}, ${day}::date, sums.agent_id, runs, completed, failed, steps, input_tokens::bigint,
          output_tokens::bigint, cost, busy_ms, coalesce(hist.latency_hist, '{}'::jsonb)
        from sums left join hist using (agent_id)`);
      await db.execute(sql`update analytics_rollup_days set open_steps = (
          select count(*)::int ${stepsOfDay} and s.kind = 'agent' and s.agent_id is not null and s.finished_at is null)
        where workspace_id = ${workspaceId} and day = ${day}::date`);
      await db.execute(sql`
        update analytics_rollup_days set
          latency_hist = coalesce(h.hist, '{}'::jsonb), latency_count = coalesce(h.n, 0),
          latency_p50_ms = p.p50, latency_p95_ms = p.p95
        from (
          select jsonb_object_agg(bucket::text, n) as hist, sum(n)::int as n
          from (select ${latencyBucket(sql`duration_ms`)} as bucket, count(*)::int as n
                from runs where ${ofDay} and ${FINISHED} group by 1) b
        ) h, (
          select percentile_cont(0.5) within group (order by duration_ms) as p50,
            percentile_cont(0.95) within group (order by duration_ms) as p95
          from runs where ${ofDay} and ${FINISHED}
        ) p
        where workspace_id = ${workspaceId} and day = ${day}::date`);
    },

    /**
     * Everything the dashboard counts for one workspace, in one statement (one round trip and
     * one pooled connection per metrics request): the runs created in [from, to), runs Running
     * and Queued now (by `runs_unfinished_idx`), agents and those Busy, documents by state and
     * the searches and hits counted on or after `sinceDay` (a UTC date).
     */
    async dashboardCounts(
      workspaceId: string,
      from: Date,
      to: Date,
      sinceDay: string,
    ): Promise<DashboardCounts> {
      const [row] = await rows(sql`
        select r.*, l.running, l.queued, a.agents, a.busy_agents, d.processed, d.processing,
          d.documents_failed, s.searches, s.hits
        from (select ${RUN_COLUMNS} from runs where ${runsIn(workspaceId, from, to)}) r,
          (select (count(*) filter (where status = 'Running'))::int as running,
              (count(*) filter (where status = 'Queued'))::int as queued
            from runs where status in ('Queued', 'Running') and workspace_id = ${workspaceId}) l,
          (select count(*)::int as agents, (count(*) filter (where status = 'Busy'))::int as busy_agents
            from agents where workspace_id = ${workspaceId}) a,
          (select (count(*) filter (where status = 'processed'))::int as processed,
              (count(*) filter (where status = 'processing'))::int as processing,
              (count(*) filter (where status = 'failed'))::int as documents_failed
            from documents where workspace_id = ${workspaceId}) d,
          (select coalesce(sum(searches), 0)::int as searches, coalesce(sum(hits), 0)::int as hits
            from search_stats where workspace_id = ${workspaceId} and day >= ${sinceDay}::date) s`);
      return {
        runs: runAggregate(row),
        live: { running: num(row?.running), queued: num(row?.queued) },
        agents: { total: num(row?.agents), busy: num(row?.busy_agents) },
        documents: {
          processed: num(row?.processed),
          processing: num(row?.processing),
          failed: num(row?.documents_failed),
        },
        searches: { searches: num(row?.searches), hits: num(row?.hits) },
      };
    },
  };
}

export type AnalyticsRepository = ReturnType<typeof createAnalyticsRepository>;
