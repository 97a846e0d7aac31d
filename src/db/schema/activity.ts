import { sql } from 'drizzle-orm';
import { bigint, bigserial, index, jsonb, pgTable, text, uuid, varchar } from 'drizzle-orm/pg-core';
import type { Static } from 'typebox';
import { StringEnum } from '../../lib/typebox.ts';
import { createdAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/**
 * Activity kinds (spec section 6), `<subject>.<what happened>`. Knowledge emits the document
 * kinds and the end of a source's indexing run; the code graph its own (`codegraph.indexed`,
 * `codegraph.failed`).
 */
export const ACTIVITY_KINDS = [
  'agent.created',
  'agent.started',
  'agent.completed',
  'agent.failed',
  'workflow.created',
  'workflow.started',
  'workflow.completed',
  'workflow.failed',
  'workflow.paused',
  'workflow.cancelled',
  'document.uploaded',
  'document.processed',
  'document.failed',
  'codegraph.started',
  'codegraph.indexed',
  'codegraph.failed',
  'source.indexed',
  'source.index_failed',
  'playbook.mined',
  'playbook.mine_failed',
  'playbook.promoted',
  'playbook.archived',
  'playbook.unarchived',
  'system.settings_changed',
  'system.error',
  'system.warning',
] as const;
export const ActivityKindSchema = StringEnum(ACTIVITY_KINDS);
export type ActivityKind = Static<typeof ActivityKindSchema>;

/** What a subject of the feed can be; the column is free text so later modules can add theirs. */
export type ActivitySubjectType =
  | 'agent'
  | 'workflow'
  | 'run'
  | 'document'
  | 'codegraph_project'
  | 'source'
  | 'playbook'
  | 'playbook_mine'
  | 'settings'
  | 'system';

/**
 * The workspace's activity feed; written in the transaction of the change it records. Live
 * readers deliver it in commit order, `(tx, id)`: `tx` is the writing transaction's id, and a
 * row is delivered once no transaction that could still commit an earlier one is open (see
 * the activity repository's `listAfter`), so writers need no feed-wide lock.
 */
export const activityEvents = pgTable(
  'activity_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** The inserting transaction's 64-bit id (`xid8`, which never wraps around). */
    tx: bigint('tx', { mode: 'number' }).notNull().default(sql`(pg_current_xact_id()::text)::bigint`),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    kind: varchar('kind', { length: 50 }).$type<ActivityKind>().notNull(),
    /** What the event is about: `agent`, `workflow`, `run`, `document`, `source`, `settings`. */
    subject_type: varchar('subject_type', { length: 30 }).notNull(),
    subject_id: varchar('subject_id', { length: 100 }),
    message: text('message').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull().default({}),
    actor: varchar('actor', { length: 255 }),
    created_at: createdAt(),
  },
  (t) => [
    index('activity_workspace_id_idx').on(t.workspace_id, t.id.desc()),
    index('activity_workspace_kind_idx').on(t.workspace_id, t.kind, t.id.desc()),
    index('activity_workspace_tx_idx').on(t.workspace_id, t.tx, t.id),
  ],
);
