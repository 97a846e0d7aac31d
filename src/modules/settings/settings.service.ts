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

  /** The namespace's settings: each stored value that fits its schema, else the default. */
  async function get<N extends SettingsNamespace>(workspaceId: string, namespace: N): Promise<Settings<N>> {
    const { schema, defaults } = SETTINGS_NAMESPACES[namespace];
    const stored = await repo.list(workspaceId, `${namespace}.`);
    const settings: Record<string, unknown> = { ...defaults };
    for (const [key, property] of Object.entries(schema.properties)) {
      const value = stored[`${namespace}.${key}`];
      if (value !== undefined && Value.Check(property, value)) settings[key] = value;
    }
    return settings as Settings<N>;
  }

  return {
    get,

    /** Stores the keys given (one transaction; omitted keys keep their values) and answers the result. */
    async update<N extends SettingsNamespace>(
      workspaceId: string,
      namespace: N,
      changes: Partial<Settings<N>>,
    ): Promise<Settings<N>> {
      await inTransaction(db, async (tx) => {
        const txRepo = createSettingsRepository(tx);
        for (const [key, value] of Object.entries(changes)) {
          if (value !== undefined) await txRepo.put(workspaceId, `${namespace}.${key}`, value);
        }
      });
      return get(workspaceId, namespace);
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
