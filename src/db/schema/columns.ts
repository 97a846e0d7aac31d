import { timestamp } from 'drizzle-orm/pg-core';

/** `created_at timestamptz not null default now()`, the same on every table. */
export const createdAt = () =>
  timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();

/** `updated_at timestamptz not null default now()`; repositories set it to now() on update. */
export const updatedAt = () =>
  timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();
