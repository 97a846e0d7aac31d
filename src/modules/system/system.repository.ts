import { count, gte, min, sql } from 'drizzle-orm';
import { heartbeats } from '../../db/schema/system.ts';
import type { Db } from '../../db/transaction.ts';

/** What the heartbeat table holds from a minute on. */
export interface HeartbeatSpan {
  /** The first minute recorded at or after the asked start; undefined when none. */
  first: Date | undefined;
  /** Minutes recorded at or after the asked start. */
  recorded: number;
  /** Whether the asked current minute has a row. */
  hasMinute: boolean;
}

/** The heartbeat minutes (db/schema/system.ts). */
export function createSystemRepository(db: Db) {
  return {
    /** Records `minute` (already truncated to the minute); a minute recorded twice stays one row. */
    async recordMinute(minute: Date): Promise<void> {
      await db.insert(heartbeats).values({ minute }).onConflictDoNothing();
    },

    /** What is recorded from `since` on, and whether `current` is among it: one statement. */
    async span(since: Date, current: Date): Promise<HeartbeatSpan> {
      const [row] = await db
        .select({
          first: min(heartbeats.minute),
          recorded: count(),
          hasMinute: sql<boolean>`coalesce(bool_or(${heartbeats.minute} = ${current.toISOString()}::timestamptz), false)`,
        })
        .from(heartbeats)
        .where(gte(heartbeats.minute, since));
      const first = row?.first ?? undefined;
      return {
        first: first === undefined ? undefined : new Date(first),
        recorded: row?.recorded ?? 0,
        hasMinute: row?.hasMinute === true,
      };
    },
  };
}

export type SystemRepository = ReturnType<typeof createSystemRepository>;
