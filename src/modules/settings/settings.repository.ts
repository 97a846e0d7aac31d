import { and, eq, like, sql } from 'drizzle-orm';
import { workspaceSettings } from '../../db/schema/settings.ts';
import type { Db } from '../../db/transaction.ts';

/** The namespaces and their types, for the service (which imports no db/ file but transaction.ts). */
export {
  SETTINGS_NAMESPACES,
  type Settings,
  type SettingsNamespace,
} from '../../db/schema/settings.ts';

/** Data access for per-workspace settings, stored as JSON values under dotted keys. */
export function createSettingsRepository(db: Db) {
  return {
    /** The stored values whose keys start with `prefix` (a namespace and a dot), by key. */
    async list(workspaceId: string, prefix: string): Promise<Record<string, unknown>> {
      const rows = await db
        .select({ key: workspaceSettings.key, value: workspaceSettings.value })
        .from(workspaceSettings)
        .where(
          and(eq(workspaceSettings.workspace_id, workspaceId), like(workspaceSettings.key, `${prefix}%`)),
        );
      return Object.fromEntries(rows.map((row) => [row.key, row.value]));
    },

    /** One key's stored value in every workspace that set it (process-wide views such as health). */
    async valuesOf(key: string): Promise<{ workspace_id: string; value: unknown }[]> {
      return db
        .select({ workspace_id: workspaceSettings.workspace_id, value: workspaceSettings.value })
        .from(workspaceSettings)
        .where(eq(workspaceSettings.key, key));
    },

    /** Stores `value` under `key`; null is stored as JSON null (the column itself is never NULL). */
    async put(workspaceId: string, key: string, value: unknown): Promise<void> {
      const json = value === null ? sql`'null'::jsonb` : value;
      await db
        .insert(workspaceSettings)
        .values({ workspace_id: workspaceId, key, value: json })
        .onConflictDoUpdate({
          target: [workspaceSettings.workspace_id, workspaceSettings.key],
          set: { value: json, updated_at: sql`now()` },
        });
    },
  };
}
