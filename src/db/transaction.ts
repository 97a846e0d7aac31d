import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { isDatabaseUnavailable } from './errors.ts';
import { rowsOf } from './rows.ts';
import type * as schema from './schema/index.ts';

/**
 * The query interface shared by both engines and by their transactions. Repositories are
 * factories over a `Db`, so the same repository runs on the pool or inside a transaction.
 */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/**
 * Work to run once the transaction it was registered in has committed, per open transaction
 * (or savepoint). Keyed by the transaction object drizzle hands to `inTransaction`'s callback.
 */
const afterCommitWork = new WeakMap<Db, Array<() => void>>();

/**
 * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
 * The one way to open a transaction, so services own their transactions and can hand the
 * same `tx` to several repositories (and to other modules' narrowed services).
 *
 * Callbacks registered with `afterCommit(tx, ...)` run once the transaction has committed,
 * and are dropped when it rolls back. Called on a transaction, it opens a savepoint whose
 * callbacks join the outer transaction's, since nothing is committed before the outer one is.
 *
 * On PostgreSQL, a transaction that wrote something notes its id before COMMIT; when the
 * connection dies during COMMIT, the outcome is asked on another connection
 * (`pg_xact_status`), so a change that committed is reported as done, not as a 503.
 */
export async function inTransaction<T>(db: Db, work: (tx: Db) => Promise<T>): Promise<T> {
  const callbacks: Array<() => void> = [];
  const resolvesCommits = commitResolvingDatabases.has(db);
  // Set once the work has finished and COMMIT is about to be sent.
  let finished: { value: T; xid: string | null } | undefined;
  let result: T;
  try {
    result = await db.transaction(async (tx) => {
      afterCommitWork.set(tx, callbacks);
      const value = await work(tx);
      finished = { value, xid: resolvesCommits ? await assignedTransactionId(tx) : null };
      return value;
    });
  } catch (error) {
    // The connection died after COMMIT was sent: the server may have committed before the
    // acknowledgement was lost. Ask it, rather than report a change that happened as failed
    // (a client would retry it and make a duplicate).
    const sent = finished as { value: T; xid: string | null } | undefined;
    if (!sent?.xid || !isDatabaseUnavailable(error)) throw error;
    if ((await commitOutcome(db, sent.xid)) !== 'committed') throw error;
    result = sent.value;
  }
  const outer = afterCommitWork.get(db);
  if (outer) outer.push(...callbacks);
  else runAfterCommit(callbacks);
  return result;
}

/**
 * Databases whose COMMIT can fail after the server has committed: a PostgreSQL server over a
 * socket, where the acknowledgement can be lost with the connection. PGlite runs in-process and
 * has no such window. Marked by `openDatabase`.
 */
const commitResolvingDatabases = new WeakSet<Db>();

/** Makes `inTransaction` on `db` resolve the outcome of a COMMIT whose connection died. */
export function resolveLostCommits(db: Db): void {
  commitResolvingDatabases.add(db);
}

/** The transaction's id if it has written anything (a read-only one has none to commit). */
async function assignedTransactionId(tx: Db): Promise<string | null> {
  const answer = await tx.execute(sql`select pg_current_xact_id_if_assigned()::text as xid`);
  const rows = rowsOf<{ xid: string | null }>(answer);
  return rows[0]?.xid ?? null;
}

/** How long to keep asking about a lost COMMIT before answering that its outcome is unknown. */
const COMMIT_OUTCOME_DEADLINE_MS = 3000;

/**
 * What became of transaction `xid`, asked on a new connection: `committed`, `aborted`, or
 * `unknown` when the server cannot say within the deadline (it is unreachable too). A backend
 * that dies mid-commit is briefly `in progress` until the server has cleaned up after it.
 */
async function commitOutcome(db: Db, xid: string): Promise<'committed' | 'aborted' | 'unknown'> {
  const deadline = performance.now() + COMMIT_OUTCOME_DEADLINE_MS;
  for (let wait = 10; performance.now() < deadline; wait = Math.min(wait * 2, 250)) {
    try {
      const answer = await db.execute(sql`select pg_xact_status(${xid}::xid8) as status`);
      const status = rowsOf<{ status: string | null }>(answer)[0]?.status;
      if (status === 'committed') return 'committed';
      if (status !== 'in progress') return 'aborted';
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  return 'unknown';
}

/** True when `db` is a transaction opened by `inTransaction` (not the pool or database itself). */
export const isTransaction = (db: Db): boolean => afterCommitWork.has(db);

/**
 * Runs `callback` after `db`'s transaction commits: at once when `db` is not a transaction
 * (the statement before it has already committed), never when the transaction rolls back.
 * This is how a change announces itself (an event hub publish, a queue hand-off) without a
 * reader ever being woken for a row it cannot see yet, or for one that was rolled back.
 * The callback must not throw: the change is committed whatever it does (an error is
 * reported as a process warning, not to the caller whose change succeeded).
 */
export function afterCommit(db: Db, callback: () => void): void {
  const pending = afterCommitWork.get(db);
  if (pending) pending.push(callback);
  else runAfterCommit([callback]);
}

function runAfterCommit(callbacks: Array<() => void>): void {
  for (const callback of callbacks) {
    try {
      callback();
    } catch (error) {
      process.emitWarning(error instanceof Error ? error : new Error(String(error)), 'AfterCommitWarning');
    }
  }
}

/**
 * Makes the appends of this transaction to the append-only stream `stream` (an activity
 * feed, a run's event log) visible in id order: a transaction-scoped advisory lock on the
 * stream, held until commit or rollback. Without it, two transactions appending to one
 * stream can commit out of id order (id 7 visible, id 6 still in flight), and a reader
 * that resumes "after the last id it saw" would skip id 6 for good. With it, an id is
 * drawn only once every earlier append to the stream has committed or rolled back.
 * Take it just before the insert, as the last write of the transaction, so the lock is
 * held for as short a time as possible and never before other row locks (no deadlock).
 * Key collisions between streams only serialise them needlessly, never break them.
 */
export async function lockAppendOrder(tx: Db, stream: string): Promise<void> {
  if (!isTransaction(tx)) throw new Error('lockAppendOrder needs a transaction opened by inTransaction');
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${stream}, 0))`);
}
