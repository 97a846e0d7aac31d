import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type * as schema from './schema/index.ts';

/**
 * The query interface shared by both engines and by their transactions. Repositories are
 * factories over a `Db`, so the same repository runs on the pool or inside a transaction.
 */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/**
 * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
 * The one way to open a transaction, so services own their transactions and can hand the
 * same `tx` to several repositories (and to other modules' narrowed services).
 */
export function inTransaction<T>(db: Db, work: (tx: Db) => Promise<T>): Promise<T> {
  return db.transaction((tx) => work(tx));
}
