import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, uuid, varchar } from 'drizzle-orm/pg-core';
import { type Static, Type } from 'typebox';
import type { ModelRef } from '../../lib/model-ref.ts';
import { component, StringEnum } from '../../lib/typebox.ts';
import { createdAt, updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/** Agent states shown by the spec (section 2.5). */
export const AgentStatusSchema = StringEnum(['Active', 'Busy', 'Idle', 'Error'] as const);
export type AgentStatus = Static<typeof AgentStatusSchema>;

/** A tool an agent or a workflow may use, with its configuration. */
export const ToolRefSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false, ...component('ToolRef') },
);
export type ToolRef = Static<typeof ToolRefSchema>;

/** An agent's policy: its id and the label to serve (production when absent, else latest). */
export const AgentPolicyRefSchema = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,99}$', description: 'the policy id (a slug)' }),
    label: Type.Optional(
      Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,49}$', description: 'the label to serve' }),
    ),
  },
  { additionalProperties: false },
);
export type AgentPolicyRef = Static<typeof AgentPolicyRefSchema>;

export const agents = pgTable(
  'agents',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 255 }).notNull(),
    description: text('description'),
    role: varchar('role', { length: 255 }),
    model: jsonb('model').$type<ModelRef>(),
    system_prompt: text('system_prompt'),
    /** The policy whose assembled context replaces system_prompt and model (docs/policies.md). */
    policy: jsonb('policy').$type<AgentPolicyRef>(),
    tools: jsonb('tools').$type<ToolRef[]>().notNull().default([]),
    status: varchar('status', { length: 20 }).$type<AgentStatus>().notNull().default('Idle'),
    config: jsonb('config').$type<Record<string, unknown>>().notNull().default({}),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    created_by: varchar('created_by', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    index('agents_workspace_created_idx').on(
      t.workspace_id,
      t.created_at.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index('agents_tags_idx').using('gin', t.tags),
  ],
);
