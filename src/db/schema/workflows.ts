import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, text, uuid, varchar } from 'drizzle-orm/pg-core';
import { type Static, Type } from 'typebox';
import { StringEnum } from '../../lib/typebox.ts';
import type { ToolRef } from './agents.ts';
import { createdAt, updatedAt } from './columns.ts';
import { playbooks } from './playbooks.ts';
import { workspaces } from './workspaces.ts';

/**
 * Workflow states: Draft, the state of a workflow never run, then the status of its latest
 * run's latest transition (docs/runs.md).
 */
export const WorkflowStatusSchema = StringEnum([
  'Draft',
  'Queued',
  'Running',
  'Paused',
  'Completed',
  'Failed',
  'Cancelled',
] as const);
export type WorkflowStatus = Static<typeof WorkflowStatusSchema>;

/** How a workflow's agents run and what a failure does. */
export const ExecutionPolicySchema = Type.Object({
  mode: StringEnum(['sequential', 'parallel'] as const, { description: 'how the agents run' }),
  error_handling: StringEnum(['stop', 'continue', 'retry'] as const, {
    description: 'what a failed step does',
  }),
  max_retries: Type.Integer({
    minimum: 0,
    maximum: 10,
    description: 'retries per step when error_handling is retry',
  }),
  timeout_seconds: Type.Integer({ minimum: 1, maximum: 86_400, description: 'whole-run timeout' }),
});
export type ExecutionPolicy = Static<typeof ExecutionPolicySchema>;

export const workflows = pgTable(
  'workflows',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 255 }).notNull(),
    description: text('description'),
    goal: text('goal'),
    agents: uuid('agents').array().notNull().default(sql`'{}'::uuid[]`),
    tools: jsonb('tools').$type<ToolRef[]>().notNull().default([]),
    execution_policy: jsonb('execution_policy').$type<ExecutionPolicy>().notNull(),
    context_template: jsonb('context_template').$type<Record<string, unknown>>().notNull().default({}),
    status: varchar('status', { length: 20 }).$type<WorkflowStatus>().notNull().default('Draft'),
    is_template: boolean('is_template').notNull().default(false),
    /** The playbook this workflow was promoted from: its runs count as the playbook's uses. */
    playbook_id: uuid('playbook_id').references(() => playbooks.id, { onDelete: 'set null' }),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    created_by: varchar('created_by', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    index('workflows_workspace_created_idx').on(
      t.workspace_id,
      t.created_at.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index('workflows_tags_idx').using('gin', t.tags),
    index('workflows_agents_idx').using('gin', t.agents),
    index('workflows_playbook_idx').on(t.playbook_id).where(sql`${t.playbook_id} is not null`),
  ],
);
