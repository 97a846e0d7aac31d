import { sql } from 'drizzle-orm';
import { boolean, check, integer, jsonb, pgTable, smallint, varchar } from 'drizzle-orm/pg-core';
import { updatedAt } from './columns.ts';

/**
 * The platform's CORS settings: one row (`id` = 1), not per workspace, because a preflight
 * carries no credentials and so names no workspace. No row: no cross-origin access.
 * `version` counts the writes; it is what the event hub carries to other processes.
 */
export const corsSettings = pgTable(
  'cors_settings',
  {
    id: smallint('id').primaryKey().default(1),
    origins: jsonb('origins').$type<string[]>().notNull(),
    methods: jsonb('methods').$type<string[]>().notNull(),
    headers: jsonb('headers').$type<string[]>().notNull(),
    exposed_headers: jsonb('exposed_headers').$type<string[]>().notNull(),
    credentials: boolean('credentials').notNull(),
    max_age: integer('max_age').notNull(),
    version: integer('version').notNull().default(1),
    updated_by: varchar('updated_by', { length: 255 }).notNull(),
    updated_at: updatedAt(),
  },
  (t) => [check('cors_settings_single_row', sql`${t.id} = 1`)],
);
