import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import { afterCommit, type Db, inTransaction } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { LruCache } from '../../lib/lru-cache.ts';
import type { ActivityInput } from '../activity/activity.service.ts';
import {
  createSettingsRepository,
  SETTINGS_NAMESPACES,
  type Settings,
  type SettingsNamespace,
} from './settings.repository.ts';

/** The event hub's topic on which a change of any workspace's settings is announced. */
export const SETTINGS_TOPIC = 'settings:workspace';

/**
 * How long a process reuses settings it read. A change drops them in this process after its
 * commit and is announced on the event hub (Redis pub/sub across processes), so this only
 * bounds how stale another process can be when an announcement is lost.
 */
export const SETTINGS_CACHE_TTL_MS = 30_000;

/** Workspace-namespace pairs kept read. */
const CACHE_ENTRIES = 20_000;

/**
 * The activity module's `record(tx, event)`, as far as a settings change needs it: a
 * `system.settings_changed` event written in the change's transaction (providers, flags,
 * tenants).
 */
export interface SettingsActivity {
  record(
    tx: Db,
    event: ActivityInput & { kind: 'system.settings_changed'; subjectType: 'settings' },
  ): Promise<unknown>;
}

export interface SettingsCacheOptions {
  /** Carries changes to every process (`EventHub`: Redis pub/sub when REDIS_URL is set). */
  hub: Pick<EventHub, 'publish' | 'subscribe'>;
  now?: () => number;
}

/**
 * Per-workspace settings by namespace (`credentials`, `providers`, ...). Each module reads
 * and writes its own namespace through this service, so defaults, storage and validation of
 * stored values live in one place. Given a `cache`, reads outside a transaction come from a
 * per-process cache (every chat and model call reads the provider settings): a change empties
 * it once committed, here and, through the event hub, in every other process.
 */
export function createSettingsService(db: Db, cache?: SettingsCacheOptions) {
  const repo = createSettingsRepository(db);
  const now = cache?.now ?? Date.now;
  const cached = cache ? new LruCache<string, Promise<unknown>>(CACHE_ENTRIES, now) : undefined;
  // Any change anywhere (or a reconnect of the hub, which may have lost some) empties it all:
  // settings change seldom, and a miss costs one read.
  cache?.hub.subscribe(SETTINGS_TOPIC, () => cached?.clear());

  /** The namespace's settings: each stored value that fits its schema, else the default. */
  async function read<N extends SettingsNamespace>(
    workspaceId: string,
    namespace: N,
    from: Db,
  ): Promise<Settings<N>> {
    const { schema, defaults } = SETTINGS_NAMESPACES[namespace];
    const stored = await createSettingsRepository(from).list(workspaceId, `${namespace}.`);
    const settings: Record<string, unknown> = { ...defaults };
    for (const [key, property] of Object.entries(schema.properties)) {
      const value = stored[`${namespace}.${key}`];
      if (value !== undefined && Value.Check(property, value)) settings[key] = value;
    }
    return settings as Settings<N>;
  }

  /**
   * The namespace's settings, read in `tx` when given (a transaction sees its own writes), else
   * from the cache. The cache holds the read's promise from its start, so a change committed
   * after a read began empties the entry and the next caller reads again; each caller gets its
   * own copy.
   */
  async function get<N extends SettingsNamespace>(
    workspaceId: string,
    namespace: N,
    tx?: Db,
  ): Promise<Settings<N>> {
    if (tx || !cached) return read(workspaceId, namespace, tx ?? db);
    const key = `${workspaceId}\n${namespace}`;
    let entry = cached.get(key) as Promise<Settings<N>> | undefined;
    if (!entry) {
      const reading: Promise<Settings<N>> = read(workspaceId, namespace, db).catch((error: unknown) => {
        // A failed read (the database away) is not kept: the next caller reads again.
        if (cached.get(key) === reading) cached.delete(key);
        throw error;
      });
      entry = reading;
      cached.set(key, entry, now() + SETTINGS_CACHE_TTL_MS);
    }
    return structuredClone(await entry);
  }

  /** Once `within` commits: this process's entry dropped at once, every process's cache through the hub. */
  function announceChange(within: Db, workspaceId: string, namespace: SettingsNamespace) {
    if (!cached || !cache) return;
    afterCommit(within, () => {
      cached.delete(`${workspaceId}\n${namespace}`);
      cache.hub.publish(SETTINGS_TOPIC, 0);
    });
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
        announceChange(within, workspaceId, namespace);
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
