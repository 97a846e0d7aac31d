import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import type { AuditAction, FieldDefinition, TestEndpoint, TestStatus } from '../../lib/credential-fields.ts';
import type { Role } from '../../lib/roles.ts';
import type { AgentStatus, WorkflowStatus } from '../../lib/statuses.ts';

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

/** Each workspace's data key, wrapped by a master key (see lib/crypto/envelope.ts). */
export const workspaceKeys = pgTable(
  'workspace_keys',
  {
    workspace_id: uuid('workspace_id')
      .primaryKey()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    wrapped_key: text('wrapped_key').notNull(),
    master_key_id: varchar('master_key_id', { length: 32 }).notNull(),
    created_at: createdAt(),
    rotated_at: timestamp('rotated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [index('workspace_keys_master_key_id_idx').on(t.master_key_id)],
);

/** Per-workspace settings, as JSON values under dotted keys (`credentials.environment_lookup`). */
export const workspaceSettings = pgTable(
  'workspace_settings',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    key: varchar('key', { length: 100 }).notNull(),
    value: jsonb('value').notNull(),
    updated_at: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.key] })],
);

/** System types (workspace_id null) and types a workspace made for itself. */
export const credentialTypes = pgTable(
  'credential_types',
  {
    id: serial('id').primaryKey(),
    workspace_id: uuid('workspace_id').references(() => workspaces.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 255 }).notNull(),
    display_name: varchar('display_name', { length: 255 }).notNull(),
    category: varchar('category', { length: 100 }).notNull(),
    icon: varchar('icon', { length: 50 }),
    logo: varchar('logo', { length: 255 }),
    description: text('description'),
    schema_definition: jsonb('schema_definition').$type<FieldDefinition[]>().notNull(),
    test_endpoint: jsonb('test_endpoint').$type<TestEndpoint>(),
    is_system: boolean('is_system').notNull().default(false),
    is_active: boolean('is_active').notNull().default(true),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    uniqueIndex('credential_types_system_name_key').on(t.name).where(sql`${t.workspace_id} is null`),
    uniqueIndex('credential_types_workspace_name_key')
      .on(t.workspace_id, t.name)
      .where(sql`${t.workspace_id} is not null`),
  ],
);

export const credentials = pgTable(
  'credentials',
  {
    id: serial('id').primaryKey(),
    name: varchar('name', { length: 255 }).notNull(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    credential_type_id: integer('credential_type_id')
      .notNull()
      .references(() => credentialTypes.id, { onDelete: 'cascade' }),
    encrypted_data: text('encrypted_data').notNull(),
    environment: varchar('environment', { length: 50 }).notNull().default('production'),
    description: text('description'),
    tags: jsonb('tags').$type<string[]>().notNull().default([]),
    is_active: boolean('is_active').notNull().default(true),
    expires_at: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    last_tested: timestamp('last_tested', { withTimezone: true, mode: 'date' }),
    test_status: varchar('test_status', { length: 50 }).$type<TestStatus>(),
    test_message: text('test_message'),
    created_by: varchar('created_by', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    index('credentials_workspace_created_idx').on(
      t.workspace_id,
      t.created_at.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index('credentials_type_idx').on(t.credential_type_id),
    uniqueIndex('credentials_active_name_key')
      .on(t.workspace_id, t.name, t.environment)
      .where(sql`${t.is_active}`),
  ],
);

const auditColumns = {
  credential_id: integer('credential_id').notNull(),
  workspace_id: uuid('workspace_id').notNull(),
  action: varchar('action', { length: 50 }).$type<AuditAction>().notNull(),
  user_id: varchar('user_id', { length: 255 }),
  ip_address: varchar('ip_address', { length: 64 }),
  metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
  created_at: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  prev_hash: varchar('prev_hash', { length: 64 }).notNull(),
  hash: varchar('hash', { length: 64 }).notNull(),
};

/** The audit trail of a credential; each record chains to the one before it. */
export const credentialAuditLogs = pgTable(
  'credential_audit_logs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    ...auditColumns,
    credential_id: integer('credential_id')
      .notNull()
      .references(() => credentials.id, { onDelete: 'cascade' }),
  },
  (t) => [index('credential_audit_logs_credential_idx').on(t.credential_id, t.id)],
);

/** Audit records copied out before their credential is deleted, so the trail outlives it. */
export const credentialAuditArchive = pgTable(
  'credential_audit_archive',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    original_id: bigint('original_id', { mode: 'number' }).notNull(),
    ...auditColumns,
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    credential_name: varchar('credential_name', { length: 255 }).notNull(),
    archived_at: timestamp('archived_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('credential_audit_archive_workspace_idx').on(t.workspace_id, t.credential_id, t.original_id)],
);
