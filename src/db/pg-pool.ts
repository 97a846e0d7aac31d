import pg from 'pg';
import { DatabaseConnectionError } from './errors.ts';

/** Options of the PostgreSQL pool that survives connections dying under it. */
export interface ResilientPoolOptions {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  /** Most connections the process holds open. */
  max: number;
  /**
   * How long a checkout may wait for a connection, from the pool or a new one, before the
   * request fails with 503 `database_unavailable`. A few seconds: a client waiting longer
   * has usually given up, and a request must not hang while the database is unreachable.
   */
  connectionTimeoutMillis: number;
  /** Idle connections are closed after this long, so a quiet service gives them back. */
  idleTimeoutMillis: number;
}

/**
 * A `pg.Pool` whose clients cannot take the process down or leak when their connection dies.
 *
 * - `pg` clients emit `'error'` when their connection dies (`pg_terminate_backend`, a failover,
 *   a network reset). The pool listens only while a client is idle; a checked-out client (one a
 *   Drizzle transaction holds) has no listener, and Node turns an unhandled `'error'` event into
 *   a crash. Every client gets a listener for its whole life: the query in flight already
 *   rejects with that error, and a dead client is never put back into the pool (pg-pool drops
 *   clients that are no longer queryable when they are released).
 * - Drizzle's `transaction()` checks a client out and sends `BEGIN` before its `try`, so when
 *   the connection dies before `BEGIN` completes the client is never released and the pool
 *   shrinks by one for good. A client whose connection ends while it is checked out is
 *   therefore released (as broken) by the pool itself; a later `release()` by its holder is a
 *   no-op.
 * - A failed checkout rejects with `DatabaseConnectionError`, so a refused connection is told
 *   apart from other socket errors (see `isDatabaseUnavailable`).
 */
export function createResilientPool(options: ResilientPoolOptions): pg.Pool {
  const pool = new ReleasingPool(options);
  pool.on('error', () => {
    // An idle client lost its connection; pg-pool already removed it and opens a new one on demand.
  });
  pool.on('connect', (client) => {
    client.on('error', () => {
      // The statement in flight on this client rejects with this error; see above.
    });
  });
  return pool;
}

class ReleasingPool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>;
  override connect(
    callback: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: unknown) => void,
    ) => void,
  ): void;
  override connect(
    callback?: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: unknown) => void,
    ) => void,
  ): Promise<pg.PoolClient> | undefined {
    // pool.query() uses the callback form and releases on every path itself.
    if (callback) {
      super.connect(callback);
      return undefined;
    }
    return super.connect().then(releaseWhenConnectionEnds, (error: unknown) => {
      throw new DatabaseConnectionError(error);
    });
  }
}

/** Makes the pool take back a client whose connection ends while someone holds it. */
function releaseWhenConnectionEnds(client: pg.PoolClient): pg.PoolClient {
  const release = client.release;
  let released = false;
  const onEnd = () =>
    releaseOnce(new Error('the database connection ended while the client was checked out'));
  const releaseOnce = (error?: Error | boolean) => {
    if (released) return;
    released = true;
    client.removeListener('end', onEnd);
    release(error);
  };
  client.once('end', onEnd);
  client.release = releaseOnce;
  return client;
}
