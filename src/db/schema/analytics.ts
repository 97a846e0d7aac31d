import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  date,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  timestamp,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { workspaces } from './workspaces.ts';

/**
 * Daily rollups of runs: one row per workspace, UTC day of the run's `created_at` and
 * workflow (as the run recorded it), with the run counts and the token and cost sums. Written
 * only by the rollup job, a whole workspace-day at a time (delete and insert in one
 * transaction).
 */
export const analyticsDailyRuns = pgTable(
  'analytics_daily_runs',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    day: date('day', { mode: 'string' }).notNull(),
    workflow_id: uuid('workflow_id'),
    workflow_name: varchar('workflow_name', { length: 255 }).notNull(),
    runs: integer('runs').notNull(),
    completed: integer('completed').notNull(),
    failed: integer('failed').notNull(),
    cancelled: integer('cancelled').notNull(),
    tokens_in: bigint('tokens_in', { mode: 'number' }).notNull(),
    tokens_out: bigint('tokens_out', { mode: 'number' }).notNull(),
    cost: doublePrecision('cost').notNull(),
  },
  (t) => [index('analytics_daily_runs_workspace_day_idx').on(t.workspace_id, t.day)],
);

/**
 * The workspace-days the rollups hold, each with the latency histogram of its finished runs'
 * `duration_ms` (sparse: bucket index -> count, buckets in `src/lib/histogram.ts`;
 * kept per day, not per workflow, since nothing breaks latency down by workflow). A day is
 * read from the rollups only when it has a row here that is not `dirty`; a trigger on `runs` (migration `analytics_rollups_dirty`) marks a
 * rolled-up day dirty when one of its runs is inserted, changed or deleted, and the job
 * computes it again.
 */
export const analyticsRollupDays = pgTable(
  'analytics_rollup_days',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    day: date('day', { mode: 'string' }).notNull(),
    dirty: boolean('dirty').notNull().default(false),
    computed_at: timestamp('computed_at', { withTimezone: true, mode: 'date' }).notNull().default(sql`now()`),
    /** Finished (Completed or Failed) runs with a duration: the histogram's total. */
    latency_count: integer('latency_count').notNull().default(0),
    latency_hist: jsonb('latency_hist').$type<Record<string, number>>().notNull().default({}),
    /**
     * `agent` steps of the day's runs unfinished when it was computed: their busy time grows
     * until they finish, so `/api/analytics/agents` reads such a day raw.
     */
    open_steps: integer('open_steps').notNull().default(0),
    /** The day's exact percentiles (`percentile_cont`), for day buckets of a series. */
    latency_p50_ms: doublePrecision('latency_p50_ms'),
    latency_p95_ms: doublePrecision('latency_p95_ms'),
  },
  (t) => [
    primaryKey({ columns: [t.workspace_id, t.day] }),
    index('analytics_rollup_days_dirty_idx').on(t.workspace_id, t.day).where(sql`${t.dirty}`),
  ],
);

/**
 * Daily rollups of run steps for the cost breakdowns: one row per workspace, UTC day of the
 * step's run's `created_at` (the same day as its run's figures), provider, model and agent (id
 * and name as the step recorded them), with the step count and the token and cost sums. Written
 * with the day's other rollups.
 */
export const analyticsDailySteps = pgTable(
  'analytics_daily_steps',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    day: date('day', { mode: 'string' }).notNull(),
    provider: varchar('provider', { length: 100 }),
    model: varchar('model', { length: 255 }),
    agent_id: uuid('agent_id'),
    agent_name: varchar('agent_name', { length: 255 }),
    steps: integer('steps').notNull(),
    tokens_in: bigint('tokens_in', { mode: 'number' }).notNull(),
    tokens_out: bigint('tokens_out', { mode: 'number' }).notNull(),
    cost: doublePrecision('cost').notNull(),
  },
  (t) => [index('analytics_daily_steps_workspace_day_idx').on(t.workspace_id, t.day)],
);

/**
 * Daily rollups per agent of its `agent` steps (runs of the day it took part in, by outcome,
 * steps, tokens, cost, busy time, and the histogram of the steps' `latency_ms`), for
 * `/api/analytics/agents`. A run belongs to one day, so distinct-run counts add across days.
 */
export const analyticsDailyAgents = pgTable(
  'analytics_daily_agents',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    day: date('day', { mode: 'string' }).notNull(),
    agent_id: uuid('agent_id').notNull(),
    runs: integer('runs').notNull(),
    completed: integer('completed').notNull(),
    failed: integer('failed').notNull(),
    steps: integer('steps').notNull(),
    tokens_in: bigint('tokens_in', { mode: 'number' }).notNull(),
    tokens_out: bigint('tokens_out', { mode: 'number' }).notNull(),
    cost: doublePrecision('cost').notNull(),
    /** The finished steps' time from start to finish. */
    busy_ms: doublePrecision('busy_ms').notNull(),
    latency_hist: jsonb('latency_hist').$type<Record<string, number>>().notNull().default({}),
  },
  (t) => [index('analytics_daily_agents_workspace_day_idx').on(t.workspace_id, t.day)],
);
