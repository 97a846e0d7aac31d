import { and, asc, eq, sql } from 'drizzle-orm';
import { featureFlags } from '../../db/schema/flags.ts';
import type { Db } from '../../db/transaction.ts';

/** A stored flag row. */
export type FlagRow = typeof featureFlags.$inferSelect;

/** What a write sets; `version` and `updated_at` are the repository's to advance. */
export type FlagWrite = Omit<FlagRow, 'workspace_id' | 'key' | 'version' | 'updated_at'>;

/** JSON null is stored as a JSON value: drizzle would otherwise write SQL NULL. */
const json = (value: unknown) => (value === null ? sql`'null'::jsonb` : value);

/** Data access for the workspace's feature flags. */
export function createFlagsRepository(db: Db) {
  return {
    /** Every flag the workspace stored, by key. */
    list(workspaceId: string): Promise<FlagRow[]> {
      return db
        .select()
        .from(featureFlags)
        .where(eq(featureFlags.workspace_id, workspaceId))
        .orderBy(asc(featureFlags.key));
    },

    /** One stored flag; `lock` holds its row until the transaction ends (a write compares versions). */
    async get(workspaceId: string, key: string, lock = false): Promise<FlagRow | undefined> {
      const query = db
        .select()
        .from(featureFlags)
        .where(and(eq(featureFlags.workspace_id, workspaceId), eq(featureFlags.key, key)));
      const [row] = lock ? await query.for('update') : await query;
      return row;
    },

    /** Creates the flag at version 1, or replaces it and advances its version. */
    async put(workspaceId: string, key: string, write: FlagWrite): Promise<FlagRow> {
      const values = { ...write, default_value: json(write.default_value) };
      const [row] = await db
        .insert(featureFlags)
        .values({ workspace_id: workspaceId, key, ...values })
        .onConflictDoUpdate({
          target: [featureFlags.workspace_id, featureFlags.key],
          set: { ...values, version: sql`${featureFlags.version} + 1`, updated_at: sql`now()` },
        })
        .returning();
      return row as FlagRow;
    },
  };
}

export type FlagsRepository = ReturnType<typeof createFlagsRepository>;
