/** One invalid input, named by where it came from: `body.name`, `query.limit`, `params.id`. */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * The one error type the service raises on purpose. `code` is stable and documented
 * (clients switch on it); only `http/error-handler.ts` turns it into an HTTP response.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors?: FieldError[];
  readonly headers?: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    errors?: FieldError[],
    headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.errors = errors;
    this.headers = headers;
  }
}

export const notFound = (what: string, id?: string | number): AppError =>
  new AppError(
    404,
    `${what.replaceAll(' ', '_')}_not_found`,
    id === undefined ? `${what} not found` : `${what} ${id} not found`,
  );

export const invalid = (field: string, message: string): AppError =>
  new AppError(400, 'validation_failed', `${field} ${message}`, [{ field, message }]);

export const conflict = (code: string, message: string): AppError => new AppError(409, code, message);

export const forbidden = (code: string, message: string): AppError => new AppError(403, code, message);

/** 401 with the `WWW-Authenticate` challenge RFC 6750 asks for. */
export const unauthorized = (
  message: string,
  error: 'invalid_request' | 'invalid_token' = 'invalid_token',
): AppError =>
  new AppError(401, 'unauthorized', message, undefined, {
    'WWW-Authenticate': `Bearer realm="api", error="${error}", error_description="${message.replaceAll('"', "'")}"`,
  });

/** Seconds a client should wait before retrying after a database outage. */
const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * 503 for a request that failed because the database dropped its connection or cannot be
 * reached: the request itself was fine, so the client may retry it after `Retry-After`.
 * A write that got this answer was not committed, unless its COMMIT reached the server and
 * only the answer was lost, so clients retry creates idempotently.
 */
export const databaseUnavailable = (): AppError =>
  new AppError(
    503,
    'database_unavailable',
    'the database is unavailable; retry the request in a few seconds',
    undefined,
    { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
  );
