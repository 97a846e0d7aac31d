import { count, eq, gte, min } from 'drizzle-orm';
import { heartbeats } from '../../db/schema/system.ts';
import type { Db } from '../../db/transaction.ts';

/** What the heartbeat table holds from a minute on. */
export interface HeartbeatSpan {
  /** The first minute recorded at or after the asked start; undefined when none. */
  first: Date | undefined;
  /** Minutes recorded at or after the asked start. */
  recorded: number;
}

/** The heartbeat minutes (db/schema/system.ts). */
export function createSystemRepository(db: Db) {
  return {
    /** Records `minute` (already truncated to the minute); a minute recorded twice stays one row. */
    async recordMinute(minute: Date): Promise<void> {
      await db.insert(heartbeats).values({ minute }).onConflictDoNothing();
    },

    /** Whether `minute` has a row. */
    async hasMinute(minute: Date): Promise<boolean> {
      const rows = await db
        .select({ minute: heartbeats.minute })
        .from(heartbeats)
        .where(eq(heartbeats.minute, minute));
      return rows.length > 0;
    },

    async span(since: Date): Promise<HeartbeatSpan> {
      const [row] = await db
        .select({ first: min(heartbeats.minute), recorded: count() })
        .from(heartbeats)
        .where(gte(heartbeats.minute, since));
      const first = row?.first ?? undefined;
      return { first: first === undefined ? undefined : new Date(first), recorded: row?.recorded ?? 0 };
    },
  };
}

export type SystemRepository = ReturnType<typeof createSystemRepository>;
