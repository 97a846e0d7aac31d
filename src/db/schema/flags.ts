import { boolean, integer, jsonb, pgTable, primaryKey, text, uuid, varchar } from 'drizzle-orm/pg-core';
import { updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/**
 * Feature flags, per workspace (docs/flags.md): each workspace holds its own definitions, and
 * a platform flag (`search.keyword_only`) a workspace has not stored answers its built-in
 * default. `version` counts the writes; the API shows it as the flag's `ETag`.
 */
export const featureFlags = pgTable(
  'feature_flags',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    key: varchar('key', { length: 100 }).notNull(),
    type: varchar('type', { length: 10 }).$type<'boolean' | 'string' | 'number' | 'json'>().notNull(),
    description: text('description').notNull().default(''),
    enabled: boolean('enabled').notNull().default(true),
    default_value: jsonb('default_value').notNull(),
    variants: jsonb('variants').$type<Record<string, unknown>>().notNull(),
    rules: jsonb('rules')
      .$type<{ when: string; variant?: string; split?: { variant: string; weight: number }[] }[]>()
      .notNull(),
    rollout: jsonb('rollout').$type<{ variant: string; weight: number }[] | null>(),
    salt: varchar('salt', { length: 100 }),
    version: integer('version').notNull().default(1),
    updated_by: varchar('updated_by', { length: 255 }).notNull(),
    updated_at: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.key] })],
);
