import { sql } from 'drizzle-orm';
import { check, index, jsonb, pgTable, primaryKey, timestamp, uuid, varchar } from 'drizzle-orm/pg-core';
import type { Static } from 'typebox';
import type { ModelRef } from '../../lib/model-ref.ts';
import { StringEnum } from '../../lib/typebox.ts';
import { createdAt, updatedAt } from './columns.ts';

/** Workspace roles, most powerful first. */
export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export const RoleSchema = StringEnum(ROLES, { description: 'owner > admin > member > viewer' });
export type Role = Static<typeof RoleSchema>;

/**
 * A tenant groups workspaces. Its administrators are its creator (`created_by`, set by
 * `POST /api/settings/tenants`) and the owners of any of its workspaces; platform operators
 * see every tenant.
 */
export const tenants = pgTable('tenants', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: varchar('name', { length: 255 }).notNull(),
  created_by: varchar('created_by', { length: 255 }),
  /** IANA time zone of nightly jobs for the workspaces that set none; null: UTC. */
  time_zone: varchar('time_zone', { length: 64 }),
  /** The default model (`{provider, name}`) new workspaces of the tenant start with; null: none. */
  default_model: jsonb('default_model').$type<ModelRef>(),
  created_at: createdAt(),
  updated_at: updatedAt(),
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
