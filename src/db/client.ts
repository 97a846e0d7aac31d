import fs from 'node:fs';
import path from 'node:path';
import type { PGlite, QueryOptions } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import type { DatabaseConfig } from '../config.ts';
import { ConnectionGate } from './connection-gate.ts';
import { acquireDirectoryLock, type DirectoryLock } from './lock.ts';
import * as schema from './schema/index.ts';
import { type Db, resolveLostCommits } from './transaction.ts';

/** An open database: the query interface plus what the process needs to manage it. */
export interface Database {
  db: Db;
  kind: DatabaseConfig['kind'];
  /** Round-trips a trivial query; used by health checks. */
  ping(): Promise<void>;
  /**
   * True while every connection is in use and requests wait for one: the database answers,
   * it is busy (health says so instead of Down when a ping cannot get a connection in time).
   */
  busy(): boolean;
  close(): Promise<void>;
  /** Present for PGlite only: the lock that keeps a second process out of the directory. */
  lock?: DirectoryLock;
  /** Internal handles, for migrations and tests. */
  raw: { pool: pg.Pool } | { pglite: PGlite };
}

/**
 * How long opening a PostgreSQL connection may take before the request fails with 503
 * `database_unavailable`: short, so an unreachable database answers quickly instead of
 * holding requests (and their sockets) open. Waiting for a busy pool is bounded separately
 * (`DB_QUEUE_TIMEOUT_MS`, then 503 `database_busy`).
 */
const CONNECT_TIMEOUT_MS = 3000;

/**
 * Each engine's driver is loaded when that engine is opened: the embedded database never loads
 * `pg` and drizzle's node-postgres driver, a PostgreSQL deployment never loads PGlite's
 * WebAssembly build and its extensions (bench/RESULTS.md, "Start-up").
 */
const loadPostgresDriver = () =>
  Promise.all([import('drizzle-orm/node-postgres'), import('./pg-pool.ts')]).then(
    ([{ drizzle }, { createResilientPool }]) => ({ drizzle, createResilientPool }),
  );
const loadPgliteDriver = () =>
  Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/btree_gin'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('@electric-sql/pglite-pgvector'),
    import('drizzle-orm/pglite'),
    import('./pglite-template.ts'),
  ]).then(([{ PGlite }, { btree_gin }, { pg_trgm }, { vector }, { drizzle }, { copyPgliteTemplate }]) => ({
    PGlite,
    /**
     * Extensions the migrations create (`CREATE EXTENSION`), loaded into every PGlite instance:
     * pg_trgm for the code graph's fuzzy name search, pgvector for similarity search and
     * btree_gin for the workspace column inside the full-text GIN index (docs/retrieval.md).
     * PostgreSQL servers need them installed.
     */
    extensions: { pg_trgm, vector, btree_gin },
    drizzle,
    copyPgliteTemplate,
  }));

/**
 * PostgreSQL settings of the embedded cluster, added to PGlite's own defaults. PGlite's
 * buffers live in the process's WebAssembly memory, which grows and never shrinks:
 * the default 128 MB of shared_buffers, once filled, was most of the service's resident
 * memory. The files are also in the OS page cache, so small buffers cost little: 16 MB
 * holds the working set of a workspace's lists; work_mem stays bounded for sorts.
 */
const PGLITE_SETTINGS = [
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
  options: {
    /** PGlite: start a new cluster from the install-time template (db/pglite-template.ts); true by default. */
    template?: boolean;
  } = {},
): Promise<Database> {
  if (config.kind === 'postgres') {
    const { drizzle: drizzleNodePg, createResilientPool } = await loadPostgresDriver();
    const pool = createResilientPool({
      host: config.host,
      port: config.port,
      database: config.database,
      user: config.user,
      password: config.password,
      max: config.poolMax,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      queueTimeoutMs: config.queueTimeoutMs,
      queueMax: config.queueMax,
    });
    const db = drizzleNodePg(pool, { schema }) as unknown as Db;
    resolveLostCommits(db);
    return {
      db,
      kind: 'postgres',
      raw: { pool },
      ping: async () => {
        await pool.query('select 1');
      },
      busy: () => pool.saturated,
      close: () => pool.end(),
    };
  }

  const { PGlite, extensions, drizzle: drizzlePglite, copyPgliteTemplate } = await loadPgliteDriver();
  fs.mkdirSync(config.dataDir, { recursive: true });
  const lock = acquireDirectoryLock(config.dataDir, lockInfo);
  try {
    const directory = pgliteDirectory(config.dataDir);
    if (options.template !== false) copyPgliteTemplate(directory);
    const pglite = await PGlite.create(directory, {
      startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS],
      extensions,
    });
    for (const oid of DRIZZLE_TEXT_TYPES) pglite.parsers[oid] = asText;
    const gate = new ConnectionGate({ timeoutMs: config.queueTimeoutMs, maxQueue: config.queueMax });
    const db = drizzlePglite(gated(pglite, gate), { schema }) as unknown as Db;
    return {
      db,
      kind: 'pglite',
      lock,
      raw: { pglite },
      ping: async () => {
        await db.execute(sql`select 1`);
      },
      busy: () => gate.saturated,
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
 * The type OIDs drizzle-orm/pglite asks PGlite to hand back as PostgreSQL's text, with
 * identity parsers in the options of every query (drizzle-orm/pglite/session.js): timestamp,
 * timestamptz, interval, date and the arrays of numeric, timestamp, timestamptz, interval, date.
 */
const DRIZZLE_TEXT_TYPES: readonly number[] = [
  1114, // timestamp
  1184, // timestamptz
  1186, // interval
  1082, // date
  1231,
  1115,
  1185,
  1187,
  1182,
];
const DRIZZLE_TEXT_TYPE_SET = new Set(DRIZZLE_TEXT_TYPES.map(String));
const asText = (value: string): string => value;

/** Per drizzle query config: the same options without the parsers the instance already applies. */
const leanOptions = new WeakMap<QueryOptions, QueryOptions>();

/**
 * Drops `parsers` from drizzle's query options when they are only its text parsers, which
 * the instance applies by default (see openDatabase). PGlite merges a query's parsers into
 * its ~320 default ones by spreading both objects on every query: profiled at 0.1 ms a
 * statement, it made a 20-row select 2.5 times slower than the same one without them.
 */
function withoutDrizzleParsers(options: QueryOptions | undefined): QueryOptions | undefined {
  if (!options?.parsers) return options;
  let lean = leanOptions.get(options);
  if (!lean) {
    const onlyText = Object.keys(options.parsers).every((oid) => DRIZZLE_TEXT_TYPE_SET.has(oid));
    lean = onlyText ? { ...options, parsers: undefined } : options;
    leanOptions.set(options, lean);
  }
  return lean;
}

/**
 * The PGlite instance as drizzle sees it: its entry points (query, exec, transaction)
 * pass through the gate, so a caller waits a bounded time in a fair line instead of
 * PGlite's unbounded one. A transaction holds the gate from BEGIN to COMMIT, and the
 * statements inside it go through its own handle, not these entry points, so nothing
 * from outside runs in the middle of it (PGlite's own transaction mutex also ensures that).
 * Migrations use the raw instance before the service takes requests.
 */
function gated(pglite: PGlite, gate: ConnectionGate): PGlite {
  const facade = Object.create(pglite) as PGlite;
  facade.query = (query, params, options) =>
    gate.run(() => pglite.query(query, params, withoutDrizzleParsers(options)));
  facade.exec = (query, options) => gate.run(() => pglite.exec(query, options));
  facade.transaction = (callback) =>
    gate.run(() =>
      pglite.transaction((tx) => {
        const lean = Object.create(tx) as typeof tx;
        lean.query = (query, params, options) => tx.query(query, params, withoutDrizzleParsers(options));
        return callback(lean);
      }),
    );
  return facade;
}
