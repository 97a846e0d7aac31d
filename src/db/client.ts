import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import type pg from 'pg';
import type { DatabaseConfig } from '../config.ts';
import { acquireDirectoryLock, type DirectoryLock } from './lock.ts';
import { createResilientPool } from './pg-pool.ts';
import * as schema from './schema/index.ts';
import type { Db } from './transaction.ts';

/** An open database: the query interface plus what the process needs to manage it. */
export interface Database {
  db: Db;
  kind: DatabaseConfig['kind'];
  /** Round-trips a trivial query; used by health checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** Present for PGlite only: the lock that keeps a second process out of the directory. */
  lock?: DirectoryLock;
  /** Internal handles, for migrations and tests. */
  raw: { pool: pg.Pool } | { pglite: PGlite };
}

/**
 * How long a request waits for a PostgreSQL connection before it fails with 503: short, so an
 * unreachable database answers quickly instead of holding requests (and their sockets) open.
 */
const CONNECT_TIMEOUT_MS = 3000;

/** The PGlite cluster lives in a sub-directory so DATA_DIR can also hold keys and the lock file. */
export const pgliteDirectory = (dataDir: string): string => path.join(dataDir, 'pgdata');

/**
 * Opens the configured engine. PGlite takes an exclusive lock on its directory first:
 * two processes writing one PGlite directory corrupt it, so the second one must fail
 * with a message that says who holds it.
 */
export async function openDatabase(
  config: DatabaseConfig,
  lockInfo: Record<string, unknown> = {},
): Promise<Database> {
  if (config.kind === 'postgres') {
    const pool = createResilientPool({
      host: config.host,
      port: config.port,
      database: config.database,
      user: config.user,
      password: config.password,
      max: config.poolMax,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
    });
    const db = drizzleNodePg(pool, { schema }) as unknown as Db;
    return {
      db,
      kind: 'postgres',
      raw: { pool },
      ping: async () => {
        await pool.query('select 1');
      },
      close: () => pool.end(),
    };
  }

  fs.mkdirSync(config.dataDir, { recursive: true });
  const lock = acquireDirectoryLock(config.dataDir, lockInfo);
  try {
    const pglite = await PGlite.create(pgliteDirectory(config.dataDir));
    const db = drizzlePglite(pglite, { schema }) as unknown as Db;
    return {
      db,
      kind: 'pglite',
      lock,
      raw: { pglite },
      ping: async () => {
        await db.execute(sql`select 1`);
      },
      close: async () => {
        try {
          await pglite.close();
        } finally {
          lock.release();
        }
      },
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}
