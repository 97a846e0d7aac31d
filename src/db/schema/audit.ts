import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  check,
  index,
  jsonb,
  pgTable,
  smallint,
  timestamp,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { workspaces } from './workspaces.ts';

/** Who made an audited change: a user by token, a user through an API key, or the platform. */
export type AuditActorKind = 'user' | 'api_key' | 'system';

/**
 * The workspace audit trail (docs/audit.md): one record per administrative change, written in
 * the transaction of the change. Each record chains to the workspace's record before it:
 * `hash = SHA-256(prev_hash + "\n" + canonical JSON of the record)`, as the vault's trail does.
 */
export const auditRecords = pgTable(
  'audit_records',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** The workspace whose trail it is; null in the platform trail (CORS, tenant deletions). */
    workspace_id: uuid('workspace_id').references(() => workspaces.id, { onDelete: 'cascade' }),
    created_at: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    actor_id: varchar('actor_id', { length: 255 }).notNull(),
    actor_kind: varchar('actor_kind', { length: 20 }).$type<AuditActorKind>().notNull(),
    action: varchar('action', { length: 100 }).notNull(),
    target_type: varchar('target_type', { length: 50 }).notNull(),
    target_id: varchar('target_id', { length: 255 }).notNull(),
    changes: jsonb('changes').$type<Record<string, unknown>>().notNull(),
    request_id: varchar('request_id', { length: 128 }),
    ip_address: varchar('ip_address', { length: 64 }),
    prev_hash: varchar('prev_hash', { length: 64 }).notNull(),
    hash: varchar('hash', { length: 64 }).notNull(),
  },
  (t) => [
    index('audit_records_workspace_id_idx').on(t.workspace_id, t.id),
    index('audit_records_workspace_time_idx').on(t.workspace_id, t.created_at, t.id),
  ],
);

/** A stored record of a trail: its columns, the one declaration the repository and the formats read. */
export type AuditRecord = typeof auditRecords.$inferSelect;

/**
 * The head of each workspace's chain: the newest record's hash. A writer takes this row's
 * lock (an upsert) before appending, so concurrent appends queue and each links to the last.
 */
export const auditChainHeads = pgTable('audit_chain_heads', {
  workspace_id: uuid('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  hash: varchar('hash', { length: 64 }).notNull(),
  last_id: bigint('last_id', { mode: 'number' }),
});

/**
 * The head of the platform trail: changes that belong to no workspace (the CORS policy, a
 * tenant deleted with its workspaces and so with their trails). One row, locked like a
 * workspace's head.
 */
export const auditPlatformHead = pgTable(
  'audit_platform_head',
  {
    id: smallint('id').primaryKey().default(1),
    hash: varchar('hash', { length: 64 }).notNull(),
    last_id: bigint('last_id', { mode: 'number' }),
  },
  (t) => [check('audit_platform_head_single_row', sql`${t.id} = 1`)],
);
