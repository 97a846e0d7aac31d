import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  index,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import type { Role } from '../lib/roles.ts';
import type { AgentStatus, WorkflowStatus } from '../lib/statuses.ts';

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();
const updatedAt = () => timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();

export const tenants = pgTable('tenants', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: varchar('name', { length: 255 }).notNull(),
  created_at: createdAt(),
});

export const workspaces = pgTable(
  'workspaces',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenant_id: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 255 }).notNull(),
    created_at: createdAt(),
  },
  (t) => [index('workspaces_tenant_id_idx').on(t.tenant_id)],
);

export const workspaceMembers = pgTable(
  'workspace_members',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    user_id: varchar('user_id', { length: 255 }).notNull(),
    role: varchar('role', { length: 20 }).$type<Role>().notNull(),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspace_id, t.user_id] }),
    index('workspace_members_user_id_idx').on(t.user_id),
    check('workspace_members_role_check', sql`${t.role} in ('owner', 'admin', 'member', 'viewer')`),
  ],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 255 }).notNull(),
    prefix: varchar('prefix', { length: 32 }).notNull().unique(),
    key_hash: varchar('key_hash', { length: 64 }).notNull().unique(),
    created_by: varchar('created_by', { length: 255 }).notNull(),
    created_at: createdAt(),
    expires_at: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    revoked_at: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
    last_used_at: timestamp('last_used_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [index('api_keys_workspace_id_idx').on(t.workspace_id)],
);

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
    model: jsonb('model').$type<{ provider: string; name: string }>().notNull(),
    system_prompt: text('system_prompt'),
    tools: jsonb('tools').$type<{ name: string; config?: Record<string, unknown> }[]>().notNull().default([]),
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
    tools: jsonb('tools').$type<{ name: string; config?: Record<string, unknown> }[]>().notNull().default([]),
    execution_policy: jsonb('execution_policy')
      .$type<{
        mode: 'sequential' | 'parallel';
        error_handling: 'stop' | 'continue' | 'retry';
        max_retries: number;
        timeout_seconds: number;
      }>()
      .notNull(),
    context_template: jsonb('context_template').$type<Record<string, unknown>>().notNull().default({}),
    status: varchar('status', { length: 20 }).$type<WorkflowStatus>().notNull().default('Draft'),
    is_template: boolean('is_template').notNull().default(false),
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
  ],
);
