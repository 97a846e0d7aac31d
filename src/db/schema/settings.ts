import { jsonb, pgTable, primaryKey, uuid, varchar } from 'drizzle-orm/pg-core';
import { updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

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
