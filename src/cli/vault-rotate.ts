/**
 * `npm run vault:rotate [-- --batch-size N]`: re-wraps every workspace key still wrapped
 * by a retired master key (ENCRYPTION_KEYS_PREVIOUS) under the current ENCRYPTION_KEY.
 * Batches of short transactions: resumable (run it again after an interruption) and safe
 * while the service serves traffic. Prints progress, then the keys left per key id.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { openDatabase } from '../db/client.ts';
import { DirectoryLockedError } from '../db/lock.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { createVaultKeys, loadKeyring } from '../modules/credentials/vault-keys.ts';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'batch-size': { type: 'string', default: '100' } } });
  const batchSize = Number(values['batch-size']);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new Error('--batch-size must be an integer from 1 to 10000');
  }
  const config = loadConfig();
  const { keyring } = loadKeyring({
    encryptionKey: config.encryptionKey,
    previousKeys: config.encryptionKeysPrevious,
    dataDir: config.dataDir,
  });
  const database = await openDatabase(config.database);
  try {
    await migrateDatabase(database);
    const keys = createVaultKeys(database.db, keyring);
    process.stdout.write(`rotating workspace keys to master key ${keyring.currentId}\n`);
    const result = await keys.rotate({
      batchSize,
      onBatch: ({ rotated, failed }) => process.stdout.write(`  re-wrapped ${rotated}, failed ${failed}\n`),
    });
    const status = await keys.status();
    process.stdout.write(`done: ${result.rotated} re-wrapped, ${result.failed} could not be opened\n`);
    for (const key of status.keys) {
      const note = key.current ? 'current' : key.configured ? 'retired, configured' : 'NOT CONFIGURED';
      process.stdout.write(
        `  ${key.key_id}  ${String(key.workspace_keys).padStart(8)} workspace keys  (${note})\n`,
      );
    }
    const left = status.keys.filter((key) => !key.current && key.workspace_keys > 0);
    if (left.length === 0)
      process.stdout.write('no workspace key uses a retired key: ENCRYPTION_KEYS_PREVIOUS can be emptied\n');
    if (result.failed > 0) process.exitCode = 1;
  } finally {
    await database.close();
  }
}

main().catch((error: unknown) => {
  const message =
    error instanceof DirectoryLockedError
      ? `${error.message}. With the embedded database, stop the service first (PostgreSQL deployments rotate while serving).`
      : error instanceof ConfigError || error instanceof Error
        ? error.message
        : String(error);
  process.stderr.write(`vault:rotate: ${message}\n`);
  process.exit(1);
});
