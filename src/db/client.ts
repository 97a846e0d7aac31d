import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import type { DatabaseConfig } from '../config.ts';
import { acquireDirectoryLock, type DirectoryLock } from './lock.ts';
import { PgliteGate } from './pglite-gate.ts';
import * as schema from './schema.ts';

/** The query interface shared by both engines and by their transactions. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

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
 * PostgreSQL settings of the embedded cluster, after PGlite's own defaults. PGlite's
 * buffers live in the process's WebAssembly memory, which grows and never shrinks:
 * the default 128 MB of shared_buffers, once filled, was most of the service's resident
 * memory. The files are also in the OS page cache, so small buffers cost little: 16 MB
 * holds the working set of a workspace's lists; work_mem stays bounded for sorts.
 */
const PGLITE_START_PARAMS = [
  ...PGlite.defaultStartParams,
  '-c',
  'shared_buffers=16MB',
  '-c',
  'work_mem=2MB',
  '-c',
  'temp_buffers=2MB',
  '-c',
  'maintenance_work_mem=16MB',
];

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
    const pool = new pg.Pool({
      host: config.host,
      port: config.port,
      database: config.database,
      user: config.user,
      password: config.password,
      max: config.poolMax,
      connectionTimeoutMillis: 10_000,
      idleTimeoutMillis: 30_000,
    });
    pool.on('error', () => {
      // An idle client lost its connection; the pool replaces it on the next checkout.
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
    const pglite = await PGlite.create(pgliteDirectory(config.dataDir), { startParams: PGLITE_START_PARAMS });
    const gate = new PgliteGate({ timeoutMs: config.queueTimeoutMs, maxQueue: config.queueMax });
    const db = drizzlePglite(gated(pglite, gate), { schema }) as unknown as Db;
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

/**
 * The PGlite instance as drizzle sees it: its entry points (query, exec, transaction)
 * pass through the gate, so a caller waits a bounded time in a fair line instead of
 * PGlite's unbounded one. A transaction holds the gate from BEGIN to COMMIT, and the
 * statements inside it go through its own handle, not these entry points, so nothing
 * from outside runs in the middle of it (PGlite's own transaction mutex also ensures that).
 * Migrations use the raw instance before the service takes requests.
 */
function gated(pglite: PGlite, gate: PgliteGate): PGlite {
  const facade = Object.create(pglite) as PGlite;
  facade.query = (query, params, options) => gate.run(() => pglite.query(query, params, options));
  facade.exec = (query, options) => gate.run(() => pglite.exec(query, options));
  facade.transaction = (callback) => gate.run(() => pglite.transaction(callback));
  return facade;
}
