import { pgTable, timestamp } from 'drizzle-orm/pg-core';

/**
 * One row per minute in which a process of the service was up: every process writes the
 * current minute once a minute (a second writer of the same minute changes nothing). Uptime
 * is the share of the minutes of a window that have a row, so it survives restarts.
 */
export const heartbeats = pgTable('heartbeats', {
  minute: timestamp('minute', { withTimezone: true, mode: 'date' }).primaryKey(),
});
