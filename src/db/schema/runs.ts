import { sql } from 'drizzle-orm';
import {
  bigserial,
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
import type { AppliedPrice } from './settings.ts';
import { ExecutionPolicySchema, workflows } from './workflows.ts';
import { workspaces } from './workspaces.ts';

/** Run states (docs/runs.md has the transition table the service enforces). */
export const RUN_STATUSES = ['Queued', 'Running', 'Paused', 'Completed', 'Failed', 'Cancelled'] as const;
export const RunStatusSchema = StringEnum(RUN_STATUSES);
export type RunStatus = Static<typeof RunStatusSchema>;

/** Why a run ended Failed or Cancelled, as a stable word. */
export const RunFailureReasonSchema = StringEnum([
  'step_failed',
  'timeout',
  'interrupted',
  'cancelled',
  'workflow_invalid',
] as const);
export type RunFailureReason = Static<typeof RunFailureReasonSchema>;

/** A control request a running run picks up between steps (pause) or at once (cancel). */
export const RunControlSchema = StringEnum(['pause', 'cancel'] as const);
export type RunControl = Static<typeof RunControlSchema>;

/** What a run keeps of its workflow at the time it was started, so edits do not change it. */
export const RunPlanSchema = Type.Object({
  goal: Type.String(),
  execution_policy: ExecutionPolicySchema,
});
export type RunPlan = Static<typeof RunPlanSchema>;

/**
 * One execution of a workflow. The row is the truth: the queue only wakes workers. A worker
 * owns a Running run while its lease (`lease_expires_at`) is in the future; a run whose
 * lease ran out belongs to whoever claims it next and resumes from `next_step`.
 */
export const runs = pgTable(
  'runs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    workflow_id: uuid('workflow_id').references(() => workflows.id, { onDelete: 'set null' }),
    workflow_name: varchar('workflow_name', { length: 255 }).notNull(),
    status: varchar('status', { length: 20 }).$type<RunStatus>().notNull().default('Queued'),
    inputs: jsonb('inputs').$type<Record<string, string>>().notNull().default({}),
    context: jsonb('context').$type<Record<string, unknown>>().notNull().default({}),
    plan: jsonb('plan').$type<RunPlan>().notNull(),
    /**
     * Kept by the database from `plan` and `inputs` (stored generated columns), so playbook
     * mining reads a run's configuration and filled input names without reading its goal.
     */
    execution_policy: jsonb('execution_policy')
      .$type<RunPlan['execution_policy']>()
      .generatedAlwaysAs(sql`(plan -> 'execution_policy')`),
    input_names: jsonb('input_names')
      .$type<string[]>()
      .generatedAlwaysAs(sql`jsonb_path_query_array(inputs, '$.keyvalue() ? (@.value != "").key')`),
    /** The workflow's agents when the run started, in order. */
    agent_ids: uuid('agent_ids').array().notNull(),
    /** Index of the next step to execute: resume and recovery continue from here. */
    next_step: integer('next_step').notNull().default(0),
    /** The text the last completed step handed on (sequential mode feeds it forward). */
    carry: text('carry'),
    output: text('output'),
    control: varchar('control', { length: 10 }).$type<RunControl>(),
    failure_reason: varchar('failure_reason', { length: 30 }).$type<RunFailureReason>(),
    error: text('error'),
    /** Agents used, in order of execution (names), for mining and analytics. */
    agents_used: text('agents_used').array().notNull().default(sql`'{}'::text[]`),
    tools_used: text('tools_used').array().notNull().default(sql`'{}'::text[]`),
    context_fields: text('context_fields').array().notNull().default(sql`'{}'::text[]`),
    tokens_in: integer('tokens_in').notNull().default(0),
    tokens_out: integer('tokens_out').notNull().default(0),
    cost: doublePrecision('cost').notNull().default(0),
    duration_ms: integer('duration_ms'),
    attempts: integer('attempts').notNull().default(0),
    idempotency_key: varchar('idempotency_key', { length: 255 }),
    lease_owner: varchar('lease_owner', { length: 100 }),
    lease_expires_at: timestamp('lease_expires_at', { withTimezone: true, mode: 'date' }),
    deadline_at: timestamp('deadline_at', { withTimezone: true, mode: 'date' }),
    created_by: varchar('created_by', { length: 255 }),
    /**
     * The policy an agent of the run was assembled from (docs/policies.md): its id, version,
     * and, when an experiment served it, the experiment, the variant and the unit bucketed.
     */
    policy_id: varchar('policy_id', { length: 100 }),
    policy_version: integer('policy_version'),
    policy_variant: varchar('policy_variant', { length: 20 }),
    experiment_id: uuid('experiment_id'),
    experiment_unit: varchar('experiment_unit', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
    started_at: timestamp('started_at', { withTimezone: true, mode: 'date' }),
    finished_at: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('runs_workspace_created_idx').on(
      t.workspace_id,
      t.created_at.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index('runs_workflow_idx').on(t.workflow_id),
    index('runs_experiment_idx')
      .on(t.experiment_id, t.policy_variant)
      .where(sql`${t.experiment_id} is not null`),
    index('runs_agent_ids_idx').using('gin', t.agent_ids),
    index('runs_unfinished_idx').on(t.status, t.created_at).where(sql`${t.status} in ('Queued', 'Running')`),
    uniqueIndex('runs_idempotency_idx')
      .on(t.workspace_id, t.idempotency_key)
      .where(sql`${t.idempotency_key} is not null`),
  ],
);

/** A tool call made during a step, with what went in and what came out. */
export const ToolCallRecordSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  input: Type.Unknown(),
  output: Type.Unknown(),
  error: Type.Optional(Type.String()),
});
export type ToolCallRecord = Static<typeof ToolCallRecordSchema>;

/** A playbook attached to the step's agent whose rule matched the run: what it added to the prompt. */
export const PlaybookTriggerSchema = Type.Object({
  attachment_id: Type.String({ format: 'uuid' }),
  playbook_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  mode: StringEnum(['suggest', 'auto'] as const),
  when: Type.String({ description: 'the rule that matched' }),
  text: Type.String({ description: 'what was added to the agent’s prompt' }),
});
export type PlaybookTrigger = Static<typeof PlaybookTriggerSchema>;

export const RunStepKindSchema = StringEnum(['agent', 'merge'] as const);
export const RunStepStatusSchema = StringEnum(['Running', 'Completed', 'Failed'] as const);

/** One attempt of one step of a run: an agent's turn, or the merge of a parallel run. */
export const runSteps = pgTable(
  'run_steps',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    run_id: uuid('run_id')
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    workspace_id: uuid('workspace_id').notNull(),
    position: integer('position').notNull(),
    attempt: integer('attempt').notNull().default(1),
    kind: varchar('kind', { length: 10 }).$type<Static<typeof RunStepKindSchema>>().notNull(),
    agent_id: uuid('agent_id').references(() => agents.id, { onDelete: 'set null' }),
    agent_name: varchar('agent_name', { length: 255 }),
    status: varchar('status', { length: 20 }).$type<Static<typeof RunStepStatusSchema>>().notNull(),
    prompt: text('prompt'),
    output: text('output'),
    tool_calls: jsonb('tool_calls').$type<ToolCallRecord[]>().notNull().default([]),
    /** Playbooks attached to the agent whose rules matched: recorded so triggers can be audited. */
    playbook_triggers: jsonb('playbook_triggers').$type<PlaybookTrigger[]>().notNull().default([]),
    provider: varchar('provider', { length: 100 }),
    model: varchar('model', { length: 255 }),
    tokens_in: integer('tokens_in').notNull().default(0),
    tokens_out: integer('tokens_out').notNull().default(0),
    cost: doublePrecision('cost').notNull().default(0),
    /** The prices `cost` was computed with (null: the model had no price). */
    price: jsonb('price').$type<AppliedPrice>(),
    latency_ms: integer('latency_ms'),
    error: text('error'),
    /**
     * Set when the step's answer is not a model's: the built-in `local` provider answered
     * because every model before it failed; the cause (each model and its error).
     */
    degraded: text('degraded'),
    started_at: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    finished_at: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [index('run_steps_run_idx').on(t.run_id, t.position, t.attempt)],
);

/**
 * The run's append-only event log: what SSE replays from `Last-Event-ID`. The id is global
 * and increasing, so "events after N" is one index range.
 */
export const runEvents = pgTable(
  'run_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    run_id: uuid('run_id')
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    workspace_id: uuid('workspace_id').notNull(),
    type: varchar('type', { length: 50 }).notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull().default({}),
    created_at: createdAt(),
  },
  (t) => [index('run_events_run_idx').on(t.run_id, t.id)],
);
