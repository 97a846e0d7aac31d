/** `npm run db:migrate`: applies pending migrations to the configured database and exits. */
import { ConfigError, loadConfig } from '../config.ts';
import { prepareModuleLoading } from '../lib/module-loading.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  // As src/main.ts: the database modules load after module loading is prepared.
  prepareModuleLoading();
  const [{ openDatabase }, { migrateDatabase }] = await Promise.all([
    import('../db/client.ts'),
    import('../db/migrate.ts'),
  ]);
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
