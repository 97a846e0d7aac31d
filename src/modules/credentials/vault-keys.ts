import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Db, inTransaction } from '../../db/transaction.ts';
import {
  deriveWorkspaceKeys,
  EnvelopeError,
  generateDataKey,
  Keyring,
  parseMasterKey,
  type WorkspaceKeys,
} from '../../lib/crypto/envelope.ts';
import { LruCache } from '../../lib/lru-cache.ts';
import { createCredentialsRepository } from './credentials.repository.ts';

const DEV_KEY_FILE = 'encryption.key';

/**
 * The master keys from the configuration. Without ENCRYPTION_KEY (development only; the
 * configuration refuses production without it) a key is generated into DATA_DIR once
 * and reused; `generated` tells the caller to warn loudly.
 */
export function loadKeyring(options: { encryptionKey?: string; previousKeys: string[]; dataDir: string }): {
  keyring: Keyring;
  source: 'environment' | 'generated' | 'data_dir';
} {
  const previous = options.previousKeys.map(parseMasterKey);
  if (options.encryptionKey)
    return { keyring: new Keyring(parseMasterKey(options.encryptionKey), previous), source: 'environment' };
  const file = path.join(options.dataDir, DEV_KEY_FILE);
  let source: 'generated' | 'data_dir' = 'data_dir';
  if (!fs.existsSync(file)) {
    fs.mkdirSync(options.dataDir, { recursive: true });
    try {
      fs.writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
      source = 'generated';
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return { keyring: new Keyring(parseMasterKey(fs.readFileSync(file, 'utf8')), previous), source };
}

/** Per-workspace data keys: created on first use, unwrapped once, cached, and rotated. */
export function createVaultKeys(db: Db, keyring: Keyring) {
  const repo = createCredentialsRepository(db);
  // The data key never changes (rotation re-wraps it), so derived keys stay valid in cache.
  const cache = new LruCache<string, WorkspaceKeys>(10_000);
  const CACHE_MS = 60 * 60 * 1000;

  return {
    keyring,

    /** The keys of a workspace, creating its data key on first use. Throws EnvelopeError. */
    async keysFor(workspaceId: string): Promise<WorkspaceKeys> {
      const cached = cache.get(workspaceId);
      if (cached) return cached;
      let row = await repo.findWorkspaceKey(workspaceId);
      if (!row) {
        const wrapped = keyring.wrapDataKey(generateDataKey(), workspaceId);
        row = await repo.insertWorkspaceKey(workspaceId, wrapped, keyring.currentId);
      }
      const keys = deriveWorkspaceKeys(keyring.unwrapDataKey(row.wrapped_key, workspaceId));
      cache.set(workspaceId, keys, Date.now() + CACHE_MS);
      return keys;
    },

    /** How many workspace keys each master key wraps, and whether that key is configured. */
    async status() {
      const counts = await repo.countWorkspaceKeysByMasterKey();
      const byId = new Map(counts.map((row) => [row.master_key_id, row.count]));
      const ids = [...new Set([...keyring.keyIds, ...byId.keys()])];
      return {
        current_key_id: keyring.currentId,
        keys: ids.map((id) => ({
          key_id: id,
          workspace_keys: byId.get(id) ?? 0,
          current: id === keyring.currentId,
          configured: keyring.has(id),
        })),
      };
    },

    /** Key ids that wrap some workspace key but are not configured: those workspaces cannot decrypt. */
    async unknownKeyIds(): Promise<string[]> {
      const counts = await repo.countWorkspaceKeysByMasterKey();
      return counts.map((row) => row.master_key_id).filter((id) => !keyring.has(id));
    },

    /**
     * Re-wraps every workspace key that a configured retired key wraps under the current
     * key, in batches of short transactions: resumable (it only looks at what is left) and
     * safe beside live traffic (readers use whichever key a value names).
     */
    async rotate(
      options: { batchSize?: number; onBatch?: (progress: { rotated: number; failed: number }) => void } = {},
    ) {
      const batchSize = options.batchSize ?? 100;
      const retired = keyring.keyIds.filter((id) => id !== keyring.currentId);
      const failedIds: string[] = [];
      let rotated = 0;
      if (retired.length === 0) return { rotated, failed: 0 };
      for (;;) {
        const size = await inTransaction(db, async (handle) => {
          const tx = createCredentialsRepository(handle);
          const rows = await tx.lockKeysUnder(retired, failedIds, batchSize);
          for (const row of rows) {
            try {
              const dataKey = keyring.unwrapDataKey(row.wrapped_key, row.workspace_id);
              await tx.rewrapWorkspaceKey(
                row.workspace_id,
                keyring.wrapDataKey(dataKey, row.workspace_id),
                keyring.currentId,
              );
              rotated += 1;
            } catch (error) {
              if (!(error instanceof EnvelopeError)) throw error;
              failedIds.push(row.workspace_id);
            }
          }
          return rows.length;
        });
        options.onBatch?.({ rotated, failed: failedIds.length });
        if (size < batchSize) break;
      }
      return { rotated, failed: failedIds.length };
    },
  };
}

export type VaultKeys = ReturnType<typeof createVaultKeys>;
