import type { SQL } from 'drizzle-orm';
import { loadConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/db/client.ts';
import { migrateDatabase } from '../../src/db/migrate.ts';
import { rowsOf } from '../../src/db/rows.ts';
import { createTestDatabaseEnv } from './test-app.ts';

/** A migrated throwaway database and nothing else: the fixture of service tests. */
export interface TestDb {
  database: Database;
  /** Runs raw SQL (to inspect or tamper with stored data, as an attacker with database access would). */
  rows<T>(query: SQL): Promise<T[]>;
  /** Closes the database and drops it (or removes its PGlite directory). */
  close(): Promise<void>;
}

/**
 * Opens and migrates one throwaway database (PGlite, or a fresh database on the PostgreSQL
 * server when `POSTGRES_HOST` is set), without services or Fastify. One per test file; each test
 * makes its own workspace rather than its own database. `env` adds settings (say a longer
 * `DB_QUEUE_TIMEOUT_MS` for a test that holds PGlite's one connection on purpose).
 */
export async function createTestDb(options: { env?: NodeJS.ProcessEnv } = {}): Promise<TestDb> {
  const dbEnv = await createTestDatabaseEnv();
  const config = loadConfig({ ...dbEnv.env, ...options.env });
  const database = await openDatabase(config.database);
  try {
    await migrateDatabase(database);
  } catch (error) {
    await database.close();
    await dbEnv.drop();
    throw error;
  }
  return {
    database,
    async rows<T>(query: SQL) {
      const result = await database.db.execute(query);
      return rowsOf<T>(result);
    },
    async close() {
      await database.close();
      await dbEnv.drop();
    },
  };
}
