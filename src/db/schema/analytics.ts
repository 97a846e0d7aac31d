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
    /** The day's exact percentiles (`percentile_cont`), for day buckets of a series. */
    latency_p50_ms: doublePrecision('latency_p50_ms'),
    latency_p95_ms: doublePrecision('latency_p95_ms'),
  },
  (t) => [
    primaryKey({ columns: [t.workspace_id, t.day] }),
    index('analytics_rollup_days_dirty_idx').on(t.workspace_id, t.day).where(sql`${t.dirty}`),
  ],
);
