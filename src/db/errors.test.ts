import { DrizzleQueryError } from 'drizzle-orm/errors';
import { DatabaseError } from 'pg';
import { describe, expect, it } from 'vitest';
import { DatabaseConnectionError, isDatabaseUnavailable, redactDatabaseError } from './errors.ts';

/** A PostgreSQL error as `pg` (and PGlite) build it from the server's ErrorResponse. */
function serverError(code: string, message: string, fields: Partial<DatabaseError> = {}): DatabaseError {
  return Object.assign(new DatabaseError(message, message.length, 'error'), {
    code,
    severity: 'ERROR',
    routine: 'test',
    ...fields,
  });
}

function socketError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, syscall: 'connect' });
}

/** How Drizzle wraps every failed statement. */
const failedQuery = (cause: unknown, params: unknown[] = ['a value']) =>
  new DrizzleQueryError('insert into "agents" ("name") values ($1)', params, cause as Error);

describe('isDatabaseUnavailable', () => {
  it.each([
    [
      'terminated by an administrator',
      serverError('57P01', 'terminating connection due to administrator command'),
    ],
    [
      'crash shutdown',
      serverError('57P02', 'terminating connection because of crash of another server process'),
    ],
    ['starting up', serverError('57P03', 'the database system is starting up')],
    ['too many connections', serverError('53300', 'sorry, too many clients already')],
    ['class 08', serverError('08006', 'connection failure')],
    [
      'a database not accepting connections',
      serverError('55000', 'database "app" is not currently accepting connections'),
    ],
    ['a socket closed under a client', new Error('Connection terminated unexpectedly')],
    ['a connect timeout', new Error('Connection terminated due to connection timeout')],
    ['a pool checkout timeout', new Error('timeout exceeded when trying to connect')],
    ['a dead client used again', new Error('Client has encountered a connection error and is not queryable')],
    ['a pool that was ended', new Error('Cannot use a pool after calling end on the pool')],
    ['PGlite closed', new Error('PGlite is closed')],
    ['PGlite aborted', new Error('Aborted(). Build with -sASSERTIONS for more info.')],
  ])('is true for %s, bare or wrapped by Drizzle', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(isDatabaseUnavailable(failedQuery(error))).toBe(true);
  });

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH'])(
    'counts the socket error %s only when it came from the database',
    (code) => {
      expect(isDatabaseUnavailable(socketError(code))).toBe(false);
      expect(isDatabaseUnavailable(failedQuery(socketError(code)))).toBe(true);
      expect(isDatabaseUnavailable(new DatabaseConnectionError(socketError(code)))).toBe(true);
    },
  );

  it('looks into the parts of an AggregateError (both addresses of localhost refused)', () => {
    const refused = Object.assign(
      new AggregateError([socketError('ECONNREFUSED'), socketError('ECONNREFUSED')], ''),
      { code: 'ECONNREFUSED' },
    );
    expect(isDatabaseUnavailable(new DatabaseConnectionError(refused))).toBe(true);
    expect(new DatabaseConnectionError(refused).message).toBe(
      'could not get a database connection: ECONNREFUSED',
    );
  });

  it.each([
    ['a unique violation', serverError('23505', 'duplicate key value violates unique constraint "x"')],
    ['a check violation', serverError('23514', 'new row for relation "agents" violates check constraint')],
    ['a serialization failure', serverError('40001', 'could not serialize access')],
    ['a syntax error', serverError('42601', 'syntax error at or near "selec"')],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a message that only quotes the words', new Error('name "Connection terminated unexpectedly" is taken')],
    ['a value that is not an error', 'Connection terminated'],
    ['nothing', undefined],
  ])('is false for %s', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
    expect(isDatabaseUnavailable(failedQuery(error))).toBe(false);
  });

  it('stops following a cycle of causes', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(isDatabaseUnavailable(a)).toBe(false);
  });
});

describe('redactDatabaseError', () => {
  const secret = 'You are a secret agent 4711';

  it('keeps the statement, SQLSTATE and constraint of a failed query and drops its parameters', () => {
    const cause = serverError('23505', 'duplicate key value violates unique constraint "agents_name_key"', {
      constraint: 'agents_name_key',
      table: 'agents',
      detail: `Key (name)=(${secret}) already exists.`,
    });
    const redacted = redactDatabaseError(failedQuery(cause, [secret])) as Error & Record<string, unknown>;
    expect(redacted.message).toBe('Failed query: insert into "agents" ("name") values ($1)');
    expect(redacted).toMatchObject({
      query: 'insert into "agents" ("name") values ($1)',
      code: '23505',
      constraint: 'agents_name_key',
      table: 'agents',
    });
    expect(redacted.params).toBeUndefined();
    expect((redacted.cause as Error).message).toBe(cause.message);
    const everything = JSON.stringify({ ...redacted, cause: { ...(redacted.cause as object) } });
    expect(`${everything}${redacted.stack}${(redacted.cause as Error).stack}`).not.toContain(secret);
  });

  it('drops the statement and parameters PGlite attaches to its own errors, and quoted values of data errors', () => {
    const pgliteError = Object.assign(
      serverError('22P02', `invalid input syntax for type uuid: "${secret}"`),
      {
        query: 'select * from agents where id = $1',
        params: [secret],
      },
    );
    const redacted = redactDatabaseError(pgliteError) as Error & Record<string, unknown>;
    expect(redacted.message).toBe('invalid input syntax for type uuid: "[redacted]"');
    expect(redacted).toMatchObject({ code: '22P02', query: 'select * from agents where id = $1' });
    expect(`${JSON.stringify({ ...redacted })}${redacted.stack}`).not.toContain(secret);
  });

  it('redacts a database error found further down a chain of causes', () => {
    const wrapped = new Error('saving the agent failed', { cause: failedQuery(new Error('boom'), [secret]) });
    const redacted = redactDatabaseError(wrapped) as Error;
    expect(redacted.message).toBe('saving the agent failed');
    expect((redacted.cause as Error).message).not.toContain(secret);
  });

  it('returns other errors unchanged', () => {
    const error = new TypeError('not a database error');
    expect(redactDatabaseError(error)).toBe(error);
    expect(redactDatabaseError('text')).toBe('text');
  });
});
