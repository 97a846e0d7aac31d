import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import { type Db, inTransaction } from '../../db/transaction.ts';
import {
  createSettingsRepository,
  SETTINGS_NAMESPACES,
  type Settings,
  type SettingsNamespace,
} from './settings.repository.ts';

/**
 * Per-workspace settings by namespace (`credentials`, and later `runs`, `chat`, ...). Each
 * module reads and writes its own namespace through this service, so defaults, storage
 * and validation of stored values live in one place.
 */
export function createSettingsService(db: Db) {
  const repo = createSettingsRepository(db);

  /** The namespace's settings: each stored value that fits its schema, else the default (read in `tx` when given). */
  async function get<N extends SettingsNamespace>(
    workspaceId: string,
    namespace: N,
    tx?: Db,
  ): Promise<Settings<N>> {
    const { schema, defaults } = SETTINGS_NAMESPACES[namespace];
    const stored = await (tx ? createSettingsRepository(tx) : repo).list(workspaceId, `${namespace}.`);
    const settings: Record<string, unknown> = { ...defaults };
    for (const [key, property] of Object.entries(schema.properties)) {
      const value = stored[`${namespace}.${key}`];
      if (value !== undefined && Value.Check(property, value)) settings[key] = value;
    }
    return settings as Settings<N>;
  }

  return {
    get,

    /**
     * Stores the keys given (one transaction; omitted keys keep their values) and answers the
     * result. Given `tx`, writes inside the caller's transaction instead, so a module can record
     * what changed (an activity event) in the same transaction as the change.
     */
    async update<N extends SettingsNamespace>(
      workspaceId: string,
      namespace: N,
      changes: Partial<Settings<N>>,
      tx?: Db,
    ): Promise<Settings<N>> {
      const write = async (within: Db) => {
        const txRepo = createSettingsRepository(within);
        for (const [key, value] of Object.entries(changes)) {
          if (value !== undefined) await txRepo.put(workspaceId, `${namespace}.${key}`, value);
        }
      };
      if (tx) {
        await write(tx);
        return get(workspaceId, namespace, tx);
      }
      await inTransaction(db, write);
      return get(workspaceId, namespace);
    },

    /**
     * One setting of `namespace` in every workspace that stored a valid value for it, for
     * process-wide views (the model gateway's health counts the workspaces with providers).
     */
    async valuesAcrossWorkspaces<N extends SettingsNamespace, K extends keyof Settings<N> & string>(
      namespace: N,
      key: K,
    ): Promise<{ workspaceId: string; value: Settings<N>[K] }[]> {
      const properties: Record<string, TSchema> = SETTINGS_NAMESPACES[namespace].schema.properties;
      const property = properties[key];
      const rows = await repo.valuesOf(`${namespace}.${key}`);
      return rows
        .filter((row) => property !== undefined && Value.Check(property, row.value))
        .map((row) => ({ workspaceId: row.workspace_id, value: row.value as Settings<N>[K] }));
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
