import { eq, sql } from 'drizzle-orm';
import { corsSettings } from '../../db/schema/cors.ts';
import type { Db } from '../../db/transaction.ts';

export type CorsRow = typeof corsSettings.$inferSelect;

/** What a write sets; `version` and `updated_at` are the repository's to advance. */
export type CorsWrite = Omit<CorsRow, 'id' | 'version' | 'updated_at'>;

/** Data access for the platform's one row of CORS settings. */
export function createCorsRepository(db: Db) {
  return {
    /** The stored settings, or undefined when nobody configured CORS. */
    async get(): Promise<CorsRow | undefined> {
      const [row] = await db.select().from(corsSettings).where(eq(corsSettings.id, 1));
      return row;
    },

    /** Creates the row at version 1, or replaces it and advances its version. */
    async put(write: CorsWrite): Promise<CorsRow> {
      const [row] = await db
        .insert(corsSettings)
        .values({ id: 1, ...write })
        .onConflictDoUpdate({
          target: corsSettings.id,
          set: { ...write, version: sql`${corsSettings.version} + 1`, updated_at: sql`now()` },
        })
        .returning();
      if (!row) throw new Error('cors settings upsert returned nothing');
      return row;
    },
  };
}
