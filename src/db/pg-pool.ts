import pg from 'pg';
import { ConnectionGate } from './connection-gate.ts';
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
   * How long opening a new connection may take before the request fails with 503
   * `database_unavailable`. A few seconds: a request must not hang while the database is
   * unreachable. Waiting for a connection that others hold is not counted here (see below).
   */
  connectionTimeoutMillis: number;
  /**
   * How long a checkout may wait while every connection is in use before the request fails
   * with 503 `database_busy` (backpressure: the database is fine, the pool is full).
   */
  queueTimeoutMs: number;
  /** Checkouts that may wait at once; one more fails with 503 `database_busy` at once. */
  queueMax: number;
  /** Idle connections are closed after this long, so a quiet service gives them back. */
  idleTimeoutMillis: number;
}

/** The pool, and whether it is full with callers waiting (busy, which is not down). */
export type ResilientPool = pg.Pool & { readonly saturated: boolean };

/**
 * A `pg.Pool` whose clients cannot take the process down or leak when their connection dies,
 * and whose full pool is told apart from an unreachable database.
 *
 * - pg-pool has one timeout for a checkout, whether it waited for a connection others hold
 *   or for the server to answer, so under load a full pool was reported as an outage (503
 *   `database_unavailable`, health Down). Checkouts first wait in a `ConnectionGate` with as
 *   many places as the pool has connections: bounded (`queueMax`, `queueTimeoutMs`), served
 *   oldest request first, refused with 503 `database_busy`. A checkout that passes the gate
 *   always finds a free or a new connection, so pg-pool's own timeout measures only the
 *   server.
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
export function createResilientPool(options: ResilientPoolOptions): ResilientPool {
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
  private readonly gate: ConnectionGate;

  constructor(options: ResilientPoolOptions) {
    const { queueTimeoutMs, queueMax, ...poolOptions } = options;
    super(poolOptions);
    this.gate = new ConnectionGate({
      timeoutMs: queueTimeoutMs,
      maxQueue: queueMax,
      connections: options.max,
      what: 'the database connection pool',
    });
  }

  get saturated(): boolean {
    return this.gate.saturated;
  }

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
      this.gate.acquire().then(
        () =>
          super.connect((error, client, done) => {
            if (error || !client) {
              this.gate.release();
              callback(error, client, done);
              return;
            }
            const held = releasingPlace(client, this.gate);
            callback(undefined, held, (release?: unknown) =>
              held.release(release as Error | boolean | undefined),
            );
          }),
        (refusal: Error) => callback(refusal, undefined, () => {}),
      );
      return undefined;
    }
    return this.gate.acquire().then(() =>
      super.connect().then(
        (client) => releaseWhenConnectionEnds(releasingPlace(client, this.gate)),
        (error: unknown) => {
          this.gate.release();
          throw new DatabaseConnectionError(error);
        },
      ),
    );
  }
}

/** Gives the client's place in the gate back when the client goes back to the pool, once. */
function releasingPlace(client: pg.PoolClient, gate: ConnectionGate): pg.PoolClient {
  const release = client.release;
  let released = false;
  client.release = (error?: Error | boolean) => {
    if (!released) {
      released = true;
      gate.release();
    }
    return release(error);
  };
  return client;
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
