import { fileURLToPath } from 'node:url';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { migrate as migrateNodePg } from 'drizzle-orm/node-postgres/migrator';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { Database } from './client.ts';

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url));

/** Any fixed number works; it only has to be the same in every process of this service. */
const MIGRATION_LOCK_ID = 7_340_211;

/**
 * Applies the committed SQL migrations that are not yet applied. On PostgreSQL an advisory
 * lock serialises replicas that start together, so each migration runs exactly once.
 */
export async function migrateDatabase(database: Database): Promise<void> {
  if ('pglite' in database.raw) {
    await migratePglite(drizzlePglite(database.raw.pglite), { migrationsFolder });
    return;
  }
  const client = await database.raw.pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    try {
      await migrateNodePg(drizzleNodePg(client), { migrationsFolder });
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]);
    }
  } finally {
    client.release();
  }
}
