import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Database } from './client.ts';

/** The committed SQL migrations and drizzle's journal of them. */
export const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url));

/**
 * The extensions the migrations create (0005 and 0006), with what brings each to a PostgreSQL
 * server. PGlite loads them itself (db/client.ts).
 */
const REQUIRED_EXTENSIONS: readonly { name: string; remedy: (major: number) => string }[] = [
  {
    name: 'vector',
    remedy: (major) =>
      `PostgreSQL has no pgvector extension (vector): install the package postgresql-${major}-pgvector on the database server (Debian 12 has none for PostgreSQL 15: run bash .ci/install-pgvector as root)`,
  },
  {
    name: 'pg_trgm',
    remedy: (major) =>
      `PostgreSQL has no pg_trgm extension: install the package postgresql-contrib (postgresql-${major} on Debian) on the database server`,
  },
  {
    name: 'btree_gin',
    remedy: (major) =>
      `PostgreSQL has no btree_gin extension: install the package postgresql-contrib (postgresql-${major} on Debian) on the database server`,
  },
];

/** The server lacks an extension the migrations need: one line saying which package brings it. */
export class MissingExtensionError extends Error {}

/**
 * Refuses, before any migration runs, a PostgreSQL server on which an extension the migrations
 * create cannot be installed, naming the package that brings it. Without this the service
 * died halfway through migration 0006 with a stack trace. Vector search is required rather
 * than optional: the search index's table has a vector column, and landed migrations are never
 * edited, so the service does not run without pgvector (README "Running on PostgreSQL").
 */
export async function checkExtensions(client: Pick<pg.ClientBase, 'query'>): Promise<void> {
  const { rows } = await client.query<{ major: number; available: string[] }>(
    `select current_setting('server_version_num')::int / 10000 as major,
       array(select name::text from pg_available_extensions where name = any($1)) as available`,
    [REQUIRED_EXTENSIONS.map((extension) => extension.name)],
  );
  const { major, available } = rows[0] ?? { major: 0, available: [] };
  const missing = REQUIRED_EXTENSIONS.filter((extension) => !available.includes(extension.name));
  if (missing.length > 0) {
    throw new MissingExtensionError(
      `${missing.map((extension) => extension.remedy(major)).join('; ')}; then start again`,
    );
  }
}

/** Any fixed number works; it only has to be the same in every process of this service. */
const MIGRATION_LOCK_ID = 7_340_211;

/**
 * Applies the committed SQL migrations that are not yet applied. On PostgreSQL it first checks
 * that the extensions they need are available (`MissingExtensionError` otherwise), and an
 * advisory lock serialises replicas that start together, so each migration runs exactly once.
 */
export async function migrateDatabase(database: Database): Promise<void> {
  // Each engine's migrator is loaded with it (db/client.ts): neither loads the other's driver.
  if ('pglite' in database.raw) {
    const [{ drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
      import('drizzle-orm/pglite'),
      import('drizzle-orm/pglite/migrator'),
    ]);
    await migratePglite(drizzlePglite(database.raw.pglite), { migrationsFolder });
    return;
  }
  const [{ drizzle: drizzleNodePg }, { migrate: migrateNodePg }] = await Promise.all([
    import('drizzle-orm/node-postgres'),
    import('drizzle-orm/node-postgres/migrator'),
  ]);
  const client = await database.raw.pool.connect();
  try {
    await checkExtensions(client);
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
