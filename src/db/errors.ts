/**
 * What a database error means for the caller, decided in one place.
 *
 * A request that fails because the database connection is gone (a failover, a restart, an
 * administrator terminating backends, a network blip, a full pool) is not a bug in the
 * request: the client should retry later, so the HTTP layer answers 503
 * `database_unavailable` instead of 500. Everything else stays unexpected.
 *
 * Pure: it looks at codes and messages only, so it needs neither `pg` nor PGlite.
 *
 *   thrown error ──► DrizzleQueryError { query, params, cause }
 *                                                          │
 *                       pg DatabaseError { code: '57P01' } ◄┘   (or a Node socket error,
 *                                                                 or a pg / PGlite message)
 */

/** SQLSTATEs that mean the session is gone or cannot be had, whatever the statement was. */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, a fast shutdown
  '57P02', // crash_shutdown: another backend crashed, the server restarts
  '57P03', // cannot_connect_now: the server is starting up or in recovery
  '53300', // too_many_connections
]);

/**
 * Socket errors. Any outbound connection can fail with these, so they count only for an error
 * that came from the database: a failed statement (Drizzle wraps those) or a pool checkout.
 */
const UNAVAILABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * Messages of `pg`, `pg-pool` and PGlite that carry no code. Anchored, so that a user's value
 * quoted in some other error message cannot make it look like an outage.
 */
const UNAVAILABLE_MESSAGES = [
  // pg: the socket closed under a client ("... unexpectedly", "... due to connection timeout").
  /^Connection terminated\b/,
  // pg-pool: no client could be checked out within connectionTimeoutMillis.
  /^timeout exceeded when trying to connect$/,
  // pg: a client whose connection died was used again.
  /^Client (?:has encountered a connection error|was closed) and is not queryable$/,
  // pg-pool: the process is shutting down.
  /^Cannot use a pool after calling end on the pool$/,
  // PostgreSQL 55000 at connection time: ALTER DATABASE ... ALLOW_CONNECTIONS false.
  /^database ".*" is not currently accepting connections$/,
  // PGlite: closed (shutdown) or its WebAssembly instance aborted.
  /^PGlite is clos(?:ed|ing)$/,
  /^Aborted\(/,
];

/**
 * Thrown when no database connection could be checked out of the pool, with the reason as its
 * cause. Drizzle does not wrap the checkout of a transaction, so without this a refused
 * connection would look like any other socket error.
 */
export class DatabaseConnectionError extends Error {
  constructor(cause: unknown) {
    // The reason is in the message too: a failed start prints only the message and stack.
    // Node's AggregateError of a refused dual-stack connect has an empty message and a code.
    const reason =
      cause instanceof Error ? cause.message || (cause as { code?: string }).code : String(cause);
    super(`could not get a database connection: ${reason ?? 'unknown reason'}`, { cause });
    this.name = 'DatabaseConnectionError';
  }
}

/** Drizzle's wrapper of a failed statement (`DrizzleQueryError`), or PGlite's own errors. */
const isQueryError = (link: Record<string, unknown>): boolean =>
  typeof link.query === 'string' && 'params' in link;

/** How deep to follow `cause` links; drizzle and pg-pool add one or two levels each. */
const MAX_CAUSE_DEPTH = 6;

/** The error itself, then its causes and, for an AggregateError (happy eyeballs), its parts. */
function* chain(error: unknown, depth = 0): Generator<Record<string, unknown>> {
  if (depth > MAX_CAUSE_DEPTH || typeof error !== 'object' || error === null) return;
  const record = error as Record<string, unknown>;
  yield record;
  if (Array.isArray(record.errors)) for (const part of record.errors) yield* chain(part, depth + 1);
  if ('cause' in record) yield* chain(record.cause, depth + 1);
}

/**
 * True when the error means the database cannot be reached or dropped the connection
 * (SQLSTATE class 08, 57P01/57P02/57P03, 53300, socket errors, pool checkout timeout,
 * "Connection terminated", PGlite closed or aborted). The HTTP layer answers 503 for these;
 * whether the statement ran is unknown to the caller. A transaction whose COMMIT lost its
 * connection may have committed: `inTransaction` asks the server before reporting it failed.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const links = [...chain(error)];
  const fromDatabase = links.some((link) => isQueryError(link) || link instanceof DatabaseConnectionError);
  for (const link of links) {
    const code = typeof link.code === 'string' ? link.code : undefined;
    if (code !== undefined) {
      if (code.startsWith('08') && code.length === 5) return true;
      if (UNAVAILABLE_SQLSTATES.has(code)) return true;
      if (fromDatabase && UNAVAILABLE_SOCKET_CODES.has(code)) return true;
    }
    const message = typeof link.message === 'string' ? link.message : '';
    if (UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
  }
  return false;
}

/** Fields of a PostgreSQL error that name things but hold no row values (`detail` does). */
const SAFE_DATABASE_FIELDS = [
  'code',
  'severity',
  'schema',
  'table',
  'column',
  'constraint',
  'dataType',
  'routine',
] as const;

/** The safe copy of a database error; its type in the log says it was redacted. */
class RedactedDatabaseError extends Error {}

/**
 * A copy of an error that is safe to log: Drizzle's `DrizzleQueryError` puts the statement's
 * parameters (user data: a system prompt, a credential name) into its message and `params`,
 * PostgreSQL puts row values into `detail` ("Key (name)=(...) already exists") and, for data
 * exceptions (class 22), quotes the offending value in the message. The copy keeps the
 * statement text, the SQLSTATE, the constraint and the causes, and drops the values, so a 500
 * can be diagnosed from the log without the log becoming a copy of the data. Errors that are
 * not from the database (and have no database error as a cause) come back unchanged.
 */
export function redactDatabaseError(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error) || depth > MAX_CAUSE_DEPTH) return error;
  const record = error as unknown as Record<string, unknown>;
  const queryError = isQueryError(record);
  const isDatabaseError = typeof record.code === 'string' && 'severity' in record && 'routine' in record;
  const cause = redactDatabaseError(error.cause, depth + 1);
  if (!queryError && !isDatabaseError && cause === error.cause) return error;

  // PGlite's errors are both: the server's message plus the statement and its parameters.
  let message = error.message;
  if (isDatabaseError && (record.code as string).startsWith('22')) {
    message = message.replaceAll(/"(?:[^"]|"")*"/g, '"[redacted]"');
  } else if (queryError && !isDatabaseError) {
    message = `Failed query: ${record.query as string}`;
  }
  const copy = new RedactedDatabaseError(message, cause === undefined ? undefined : { cause });
  copy.name = error.name;
  // Only the frames: the first lines of the original stack repeat its message, values included.
  const frames = (error.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
  copy.stack = [`${error.name}: ${message}`, ...frames].join('\n');
  const fields = copy as unknown as Record<string, unknown>;
  if (queryError) fields.query = record.query;
  // A query error shows its cause's SQLSTATE and constraint at the top, where one searches for them.
  const source = isDatabaseError ? record : queryError ? (error.cause as Record<string, unknown>) : undefined;
  if (source && typeof source === 'object') {
    for (const field of SAFE_DATABASE_FIELDS) if (source[field] !== undefined) fields[field] = source[field];
  }
  if (!queryError && !isDatabaseError) {
    for (const [key, value] of Object.entries(record)) if (key !== 'cause') fields[key] = value;
  }
  return copy;
}
