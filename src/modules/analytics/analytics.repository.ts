/**
 * Aggregates over the raw tables of runs, run steps, agents and chat, read-only, for the
 * analytics and the dashboard's KPIs. Like playbook mining, a reporting module reads other
 * modules' tables through SQL (never writes them). Every query is scoped by `workspace_id`
 * and starts from an index: runs by `runs_workspace_created_idx` (a run belongs to the
 * window it was created in), their steps by `run_steps_run_idx`, messages through their
 * conversations (`conversations_workspace_last_idx`: a conversation with a message in the
 * window has its last message at or after the window's start). Whole UTC days of runs are
 * also kept as daily rollups (`analytics_daily_runs`, this module's table), written by
 * `computeDay` and read by `rollupDays`.
 */
import { type SQL, sql } from 'drizzle-orm';
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

export interface AgentAggregate {
  agent_id: string;
  name: string;
  status: string;
  runs: number;
  completed: number;
  failed: number;
  steps: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
  busy_ms: number;
}

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

/** Sums of runs of one UTC day (`YYYY-MM-DD`) with their latency histogram. */
export interface DayFigures {
  /** Exact, when read from raw runs. */
  latency_p50_ms?: number | null;
  latency_p95_ms?: number | null;
  runs: number;
  completed: number;
  failed: number;
  cancelled: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  latency: Histogram;
}

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

/** Bucket start as epoch milliseconds (no driver-specific timestamp parsing). */
const bucketStart = (bucket: Bucket, column: SQL) =>
  sql`(extract(epoch from date_trunc(${bucket}, ${column}, 'UTC')) * 1000)::float8`;

/** Read-only aggregates over other modules' tables, always for one workspace. */
export function createAnalyticsRepository(db: Db) {
  const rows = async (query: SQL): Promise<Raw[]> =>
    ((await db.execute(query)) as unknown as { rows: Raw[] }).rows;

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

    /** Cost per bucket of runs created in [from, to). */
    async costSeries(
      workspaceId: string,
      from: Date,
      to: Date,
      bucket: Bucket,
    ): Promise<Map<number, number>> {
      const found = await rows(
        sql`select ${bucketStart(bucket, sql`created_at`)} as bucket, coalesce(sum(cost), 0)::float8 as cost
            from runs where ${runsIn(workspaceId, from, to)} group by 1`,
      );
      return new Map(found.map((row) => [num(row.bucket), num(row.cost)]));
    },

    /**
     * The steps of runs created in [from, to), grouped by `by`: their cost and tokens, and
     * how many steps each group has.
     */
    async stepCosts(
      workspaceId: string,
      from: Date,
      to: Date,
      by: 'provider' | 'model' | 'agent',
    ): Promise<CostGroup[]> {
      // by model: the key is the provider, the label the model (a model name is per provider).
      const key = by === 'agent' ? sql`s.agent_id::text` : sql`s.provider`;
      const label = by === 'provider' ? sql`s.provider` : by === 'model' ? sql`s.model` : sql`s.agent_name`;
      const found = await rows(sql`
        select ${key} as key, ${label} as label,
          coalesce(sum(s.cost), 0)::float8 as cost,
          coalesce(sum(s.tokens_in), 0)::float8 as input_tokens,
          coalesce(sum(s.tokens_out), 0)::float8 as output_tokens,
          count(*)::int as count
        from runs r join run_steps s on s.run_id = r.id
        where r.workspace_id = ${workspaceId} and r.created_at >= ${from} and r.created_at < ${to}
        group by 1, 2 order by 3 desc, 2 nulls last`);
      return found.map((row) => ({
        key: (row.key as string | null) ?? null,
        label: (row.label as string | null) ?? null,
        cost: num(row.cost),
        input_tokens: num(row.input_tokens),
        output_tokens: num(row.output_tokens),
        count: num(row.count),
      }));
    },

    /** Runs created in [from, to) grouped by workflow (its name as the run recorded it). */
    async workflowCosts(workspaceId: string, from: Date, to: Date): Promise<CostGroup[]> {
      const found = await rows(sql`
        select workflow_id::text as key, workflow_name as label,
          coalesce(sum(cost), 0)::float8 as cost,
          coalesce(sum(tokens_in), 0)::float8 as input_tokens,
          coalesce(sum(tokens_out), 0)::float8 as output_tokens,
          count(*)::int as count
        from runs where ${runsIn(workspaceId, from, to)}
        group by 1, 2 order by 3 desc, 2`);
      return found.map((row) => ({
        key: (row.key as string | null) ?? null,
        label: (row.label as string | null) ?? null,
        cost: num(row.cost),
        input_tokens: num(row.input_tokens),
        output_tokens: num(row.output_tokens),
        count: num(row.count),
      }));
    },

    /**
     * Every agent of the workspace with the steps it ran in runs created in [from, to): the
     * runs it took part in and their outcome, tokens, cost, step latency, and its busy time
     * (its steps' time clipped to the window; a step still running counts until `now`).
     */
    async agentStats(workspaceId: string, from: Date, to: Date, now: Date): Promise<AgentAggregate[]> {
      const found = await rows(sql`
        with steps as (
          select s.agent_id, s.run_id, r.status as run_status, s.tokens_in, s.tokens_out, s.cost,
            s.latency_ms,
            greatest(0, extract(epoch from (
              least(coalesce(s.finished_at, ${now}::timestamptz), ${to}::timestamptz)
              - greatest(s.started_at, ${from}::timestamptz))) * 1000) as busy_ms
          from runs r join run_steps s on s.run_id = r.id
          where r.workspace_id = ${workspaceId} and r.created_at >= ${from} and r.created_at < ${to}
            and s.kind = 'agent' and s.agent_id is not null
        )
        select a.id::text as agent_id, a.name, a.status,
          count(distinct st.run_id)::int as runs,
          count(distinct st.run_id) filter (where st.run_status = 'Completed')::int as completed,
          count(distinct st.run_id) filter (where st.run_status = 'Failed')::int as failed,
          count(st.run_id)::int as steps,
          coalesce(sum(st.tokens_in), 0)::float8 as input_tokens,
          coalesce(sum(st.tokens_out), 0)::float8 as output_tokens,
          coalesce(sum(st.cost), 0)::float8 as cost,
          percentile_cont(0.5) within group (order by st.latency_ms) as latency_p50_ms,
          percentile_cont(0.95) within group (order by st.latency_ms) as latency_p95_ms,
          coalesce(sum(st.busy_ms), 0)::float8 as busy_ms
        from agents a left join steps st on st.agent_id = a.id
        where a.workspace_id = ${workspaceId}
        group by a.id, a.name, a.status
        order by 10 desc, a.name, a.id`);
      return found.map((row) => ({
        agent_id: row.agent_id as string,
        name: row.name as string,
        status: row.status as string,
        runs: num(row.runs),
        completed: num(row.completed),
        failed: num(row.failed),
        steps: num(row.steps),
        input_tokens: num(row.input_tokens),
        output_tokens: num(row.output_tokens),
        cost: num(row.cost),
        latency_p50_ms: maybe(row.latency_p50_ms),
        latency_p95_ms: maybe(row.latency_p95_ms),
        busy_ms: num(row.busy_ms),
      }));
    },

    /**
     * Per UTC day, the runs created in any of `ranges` ([from, to) each), with their latency
     * histogram: the raw part of a window that also reads rollups.
     */
    async rawDays(workspaceId: string, ranges: Array<[Date, Date]>): Promise<Map<string, DayFigures>> {
      if (ranges.length === 0) return new Map();
      const within = sql.join(
        ranges.map(([from, to]) => sql`(created_at >= ${from} and created_at < ${to})`),
        sql` or `,
      );
      const where = sql`workspace_id = ${workspaceId} and (${within})`;
      const day = sql`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`;
      const [sums, buckets] = await Promise.all([
        rows(sql`select ${day} as day, count(*)::int as runs,
            (count(*) filter (where status = 'Completed'))::int as completed,
            (count(*) filter (where status = 'Failed'))::int as failed,
            (count(*) filter (where status = 'Cancelled'))::int as cancelled,
            coalesce(sum(tokens_in), 0)::float8 as input_tokens,
            coalesce(sum(tokens_out), 0)::float8 as output_tokens,
            coalesce(sum(cost), 0)::float8 as cost,
            percentile_cont(0.5) within group (order by duration_ms) filter (where ${FINISHED}) as latency_p50_ms,
            percentile_cont(0.95) within group (order by duration_ms) filter (where ${FINISHED}) as latency_p95_ms
          from runs where ${where} group by 1`),
        rows(sql`select ${day} as day, ${latencyBucket(sql`duration_ms`)} as bucket, count(*)::int as n
          from runs where ${where} and ${FINISHED} group by 1, 2`),
      ]);
      return dayFigures(sums, buckets);
    },

    /**
     * The rolled-up days in [fromDay, toDay) that are not dirty (`YYYY-MM-DD`), each with its
     * exact latency percentiles.
     */
    async cleanDays(
      workspaceId: string,
      fromDay: string,
      toDay: string,
    ): Promise<Map<string, { latency_p50_ms: number | null; latency_p95_ms: number | null }>> {
      const found = await rows(sql`select to_char(day, 'YYYY-MM-DD') as day, latency_p50_ms, latency_p95_ms
        from analytics_rollup_days
        where workspace_id = ${workspaceId} and day >= ${fromDay}::date and day < ${toDay}::date and not dirty`);
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
        where d.workspace_id = ${workspaceId} and d.day in (${sql.join(
          days.map((day) => sql`${day}::date`),
          sql`, `,
        )})
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
      await db.execute(
        sql`delete from analytics_daily_runs where workspace_id = ${workspaceId} and day = ${day}::date`,
      );
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

    /** Runs executing (Running) and waiting (Queued) now, by `runs_unfinished_idx`. */
    async liveRuns(workspaceId: string): Promise<{ running: number; queued: number }> {
      const [row] = await rows(sql`
        select (count(*) filter (where status = 'Running'))::int as running,
          (count(*) filter (where status = 'Queued'))::int as queued
        from runs where status in ('Queued', 'Running') and workspace_id = ${workspaceId}`);
      return { running: num(row?.running), queued: num(row?.queued) };
    },

    /** The workspace's agents, and those Busy now. */
    async agentCounts(workspaceId: string): Promise<{ total: number; busy: number }> {
      const [row] = await rows(sql`
        select count(*)::int as total, (count(*) filter (where status = 'Busy'))::int as busy
        from agents where workspace_id = ${workspaceId}`);
      return { total: num(row?.total), busy: num(row?.busy) };
    },
  };
}

export type AnalyticsRepository = ReturnType<typeof createAnalyticsRepository>;
