import { sql } from 'drizzle-orm';
import {
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { type Static, Type } from 'typebox';
import { StringEnum } from '../../lib/typebox.ts';
import { agents } from './agents.ts';
import { createdAt, updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/** The spec's six categories (section 2.4); `modules/playbooks/categories.ts` assigns them. */
export const PLAYBOOK_CATEGORIES = [
  'Security & Compliance',
  'Code Review & Quality',
  'Data Analysis',
  'Infrastructure & DevOps',
  'Documentation',
  'Testing & QA',
] as const;
export type PlaybookCategory = (typeof PLAYBOOK_CATEGORIES)[number];

export const CategorySchema = StringEnum(PLAYBOOK_CATEGORIES, { description: 'the category badge' });

export const CategoryVoteSchema = Type.Object({
  category: CategorySchema,
  score: Type.Number(),
  because: Type.Array(Type.String(), {
    description: 'the words that voted, as `<origin>:<word>` (origin tool, agent, context or goal)',
  }),
});

export const QualityPartsSchema = Type.Object(
  {
    reliability: Type.Number({ description: 'Wilson lower bound (95 %) of the success rate' }),
    evidence: Type.Number({ description: '1 - exp(-support / 25)' }),
    lift: Type.Number({
      description: 'success gained over the workspace: (rate - base) / (1 - base), at least 0',
    }),
    cost: Type.Number({ description: 'workspace average cost / (that + the pattern’s); 0.5 when equal' }),
    speed: Type.Number({ description: 'the same for duration' }),
  },
  {
    description:
      'each in [0, 1]; the score is 0.45 reliability + 0.15 evidence + 0.2 lift + 0.1 cost + 0.1 speed',
  },
);
export type QualityPartsRecord = Static<typeof QualityPartsSchema>;

export const ContextPatternSchema = Type.Object({
  context_fields: Type.Array(Type.String(), { description: 'context fields the pattern’s runs had' }),
  required_inputs: Type.Array(Type.String(), { description: 'goal inputs the pattern’s runs filled' }),
  configuration: Type.Record(Type.String(), Type.String(), {
    description: 'common configuration: mode, errors (error handling), timeout (short, standard, long)',
  }),
});
export type ContextPattern = Static<typeof ContextPatternSchema>;

/**
 * A pattern mined from a workspace's successful runs. `pattern_key` (a digest of its agents
 * and tools) is its identity: mining again updates the row instead of adding a duplicate,
 * and keeps what a user edited (`*_edited`).
 */
export const playbooks = pgTable(
  'playbooks',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    pattern_key: varchar('pattern_key', { length: 64 }).notNull(),
    name: varchar('name', { length: 255 }).notNull(),
    name_edited: boolean('name_edited').notNull().default(false),
    description: text('description').notNull(),
    description_edited: boolean('description_edited').notNull().default(false),
    category: varchar('category', { length: 50 }).$type<PlaybookCategory>(),
    category_edited: boolean('category_edited').notNull().default(false),
    category_votes: jsonb('category_votes')
      .$type<Static<typeof CategoryVoteSchema>[]>()
      .notNull()
      .default([]),
    items: text('items').array().notNull(),
    agent_pattern: text('agent_pattern').array().notNull(),
    tool_pattern: text('tool_pattern').array().notNull().default(sql`'{}'::text[]`),
    context_pattern: jsonb('context_pattern').$type<ContextPattern>().notNull(),
    goal_template: text('goal_template').notNull(),
    support: integer('support').notNull(),
    matching_runs: integer('matching_runs').notNull(),
    confidence: doublePrecision('confidence').notNull(),
    lift: doublePrecision('lift').notNull(),
    avg_duration_ms: integer('avg_duration_ms').notNull(),
    avg_cost: doublePrecision('avg_cost').notNull(),
    quality_score: doublePrecision('quality_score').notNull(),
    quality_parts: jsonb('quality_parts').$type<QualityPartsRecord>().notNull(),
    example_run_ids: uuid('example_run_ids').array().notNull(),
    mined_at: timestamp('mined_at', { withTimezone: true, mode: 'date' }).notNull(),
    archived_at: timestamp('archived_at', { withTimezone: true, mode: 'date' }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    uniqueIndex('playbooks_workspace_pattern_idx').on(t.workspace_id, t.pattern_key),
    index('playbooks_workspace_quality_idx').on(t.workspace_id, t.quality_score.desc(), t.id),
  ],
);
export type PlaybookRow = typeof playbooks.$inferSelect;

export const AttachmentModeSchema = StringEnum(['suggest', 'auto'] as const, {
  description:
    'suggest: the playbook’s name and description are offered to the agent; auto: its steps are injected',
});

/**
 * A playbook bound to an agent as an auto-triggered macro: when the rule `when` (the condition
 * language, `lib/conditions.ts`) holds for a run's facts, the agent's step gets the playbook.
 */
export const playbookAttachments = pgTable(
  'playbook_attachments',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    playbook_id: uuid('playbook_id')
      .notNull()
      .references(() => playbooks.id, { onDelete: 'cascade' }),
    agent_id: uuid('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    when: text('when').notNull(),
    mode: varchar('mode', { length: 10 }).$type<Static<typeof AttachmentModeSchema>>().notNull(),
    /** Steps the rule matched (first attempts), counted when they are recorded. */
    triggers: integer('triggers').notNull().default(0),
    created_by: varchar('created_by', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    uniqueIndex('playbook_attachments_playbook_agent_idx').on(t.playbook_id, t.agent_id),
    index('playbook_attachments_agent_idx').on(t.workspace_id, t.agent_id),
  ],
);
export type PlaybookAttachmentRow = typeof playbookAttachments.$inferSelect;

/**
 * A workspace's nightly mining: its schedule (null columns take the defaults) and the last
 * slot claimed. The claim is the lock that makes a slot run once across processes: a process
 * takes a slot by moving `slot` forward in one statement; a claim left unfinished past its
 * lease (the process died) can be taken again, and mining again is harmless (it updates).
 */
export const playbookSchedules = pgTable('playbook_schedules', {
  workspace_id: uuid('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  cron: varchar('cron', { length: 100 }),
  time_zone: varchar('time_zone', { length: 64 }),
  enabled: boolean('enabled').notNull().default(true),
  slot: timestamp('slot', { withTimezone: true, mode: 'date' }),
  claimed_by: varchar('claimed_by', { length: 100 }),
  claimed_at: timestamp('claimed_at', { withTimezone: true, mode: 'date' }),
  finished_at: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  last_error: text('last_error'),
  last_result: jsonb('last_result').$type<Record<string, unknown>>(),
  updated_at: updatedAt(),
});
export type PlaybookScheduleRow = typeof playbookSchedules.$inferSelect;

/** Where a background mine is: waiting for a worker, working, or ended (`completed`, `failed`). */
export const MineStatusSchema = StringEnum(['queued', 'running', 'completed', 'failed'] as const);
export type MineStatus = Static<typeof MineStatusSchema>;
/** What a running mine is doing: reading the runs, mining and scoring them, storing the playbooks. */
export const MinePhaseSchema = StringEnum(['loading', 'mining', 'storing'] as const);
export type MinePhase = Static<typeof MinePhaseSchema>;

/**
 * A mine done in the background (`POST /api/playbooks/mine` past `MINE_SYNC_MAX_RUNS`, or asked
 * for with `Prefer: respond-async`): the row is the job's truth, so a worker in any process
 * reads what to mine from it, and a mine whose process died is handed to the queue again.
 * `input` holds the window already fixed to dates, so a mine run later reads the same runs.
 */
export const playbookMines = pgTable(
  'playbook_mines',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    status: varchar('status', { length: 20 }).$type<MineStatus>().notNull(),
    phase: varchar('phase', { length: 20 }).$type<MinePhase>(),
    input: jsonb('input').$type<Record<string, unknown>>().notNull(),
    /** Finished runs in the window when it was requested (at most the mining cap). */
    runs: integer('runs').notNull(),
    requested_by: varchar('requested_by', { length: 255 }).notNull(),
    result: jsonb('result').$type<Record<string, unknown>>(),
    error: text('error'),
    attempts: integer('attempts').notNull().default(0),
    created_at: createdAt(),
    started_at: timestamp('started_at', { withTimezone: true, mode: 'date' }),
    finished_at: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('playbook_mines_workspace_idx').on(t.workspace_id, t.created_at),
    index('playbook_mines_unfinished_idx').on(t.status).where(sql`${t.status} in ('queued', 'running')`),
  ],
);
export type PlaybookMineRow = typeof playbookMines.$inferSelect;
