/** `npm run db:migrate`: applies pending migrations to the configured database and exits. */
import { ConfigError, loadConfig } from '../config.ts';
import { openDatabase } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase(config.database);
  try {
    await migrateDatabase(database);
  } finally {
    await database.close();
  }
  const where =
    config.database.kind === 'pglite'
      ? `PGlite in ${config.database.dataDir}`
      : `PostgreSQL ${config.database.host}:${config.database.port}/${config.database.database}`;
  process.stdout.write(`migrations applied (${where})\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `db:migrate: ${error instanceof ConfigError || error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
