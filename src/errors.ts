import { isDatabaseUnavailable } from './db/errors.ts';

/**
 * Every stable error code the API answers, with its HTTP status. Clients switch on these,
 * so the list is closed: `AppError` accepts nothing else, README's "Error codes" table
 * documents each one, and `tests/error-catalogue.test.ts` checks the two agree both ways.
 * A new module adds its codes here (or in a `<module>.errors.ts` spread in below).
 */
export const ERROR_CODES = {
  validation_failed: 400,
  invalid_json: 400,
  invalid_url: 400,
  malformed_request: 400,
  bad_request: 400,
  invalid_multipart: 400,
  unauthorized: 401,
  invalid_api_key: 401,
  workspace_forbidden: 403,
  insufficient_role: 403,
  platform_admin_required: 403,
  dev_session_local_only: 403,
  metrics_forbidden: 403,
  credential_inactive: 403,
  credential_expired: 403,
  secret_required: 403,
  access_revoked: 403,
  destination_not_allowed: 403,
  route_not_found: 404,
  workspace_not_found: 404,
  member_not_found: 404,
  api_key_not_found: 404,
  agent_not_found: 404,
  workflow_not_found: 404,
  credential_not_found: 404,
  credential_type_not_found: 404,
  run_not_found: 404,
  conversation_not_found: 404,
  codegraph_project_not_found: 404,
  source_not_found: 404,
  document_not_found: 404,
  playbook_not_found: 404,
  mine_not_found: 404,
  tenant_not_found: 404,
  flag_not_found: 404,
  policy_not_found: 404,
  experiment_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  member_exists: 409,
  last_owner: 409,
  duplicate_credential: 409,
  confirmation_required: 409,
  duplicate_credential_type: 409,
  run_state_conflict: 409,
  workflow_not_runnable: 409,
  index_generation_stale: 409,
  sources_root_not_configured: 409,
  duplicate_source: 409,
  source_indexing: 409,
  playbook_agents_missing: 409,
  tenant_not_empty: 409,
  idempotency_in_progress: 409,
  answer_interrupted: 409,
  precondition_failed: 412,
  idempotency_key_reused: 422,
  policy_variable_missing: 422,
  archive_invalid: 422,
  archive_unsafe: 422,
  archive_too_large: 422,
  source_too_large: 422,
  no_source_files: 422,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  unsupported_document_type: 415,
  document_type_mismatch: 415,
  empty_document: 422,
  corrupt_document: 422,
  document_without_text: 422,
  document_too_large: 422,
  upgrade_required: 426,
  too_many_streams: 429,
  too_many_mines: 429,
  headers_too_large: 431,
  internal_error: 500,
  provider_error: 502,
  encryption_key_error: 500,
  database_unavailable: 503,
  database_busy: 503,
  identity_provider_unavailable: 503,
  redis_unavailable: 503,
  provider_timeout: 504,
} as const satisfies Record<string, number>;

/** A stable, documented error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

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
  readonly code: ErrorCode;
  readonly errors?: FieldError[];
  readonly headers?: Record<string, string>;

  constructor(
    status: number,
    code: ErrorCode,
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

/** What can be "not found"; each names its `<resource>_not_found` code. */
const NOT_FOUND = {
  workspace: 'workspace_not_found',
  member: 'member_not_found',
  'api key': 'api_key_not_found',
  agent: 'agent_not_found',
  workflow: 'workflow_not_found',
  credential: 'credential_not_found',
  'credential type': 'credential_type_not_found',
  run: 'run_not_found',
  conversation: 'conversation_not_found',
  'code project': 'codegraph_project_not_found',
  source: 'source_not_found',
  document: 'document_not_found',
  playbook: 'playbook_not_found',
  mine: 'mine_not_found',
  tenant: 'tenant_not_found',
  flag: 'flag_not_found',
  policy: 'policy_not_found',
  experiment: 'experiment_not_found',
} as const satisfies Record<string, ErrorCode>;

/** 404 for a resource that does not exist in the caller's workspace (or in any). */
export const notFound = (what: keyof typeof NOT_FOUND, id?: string | number): AppError =>
  new AppError(404, NOT_FOUND[what], id === undefined ? `${what} not found` : `${what} ${id} not found`);

/** 400 for one invalid input. */
export const invalid = (field: string, message: string): AppError => invalidFields([{ field, message }]);

/** 400 naming every invalid input at once, so a client can fix them all in one round. */
export const invalidFields = (errors: FieldError[]): AppError =>
  new AppError(400, 'validation_failed', errors.map((e) => `${e.field} ${e.message}`).join('; '), errors);

export const conflict = (code: ErrorCode, message: string): AppError => new AppError(409, code, message);

/**
 * 412 for a conditional write whose `If-Match` names a version that is no longer current:
 * someone changed the resource since the client read it. The client reads it again (the
 * current `ETag`) and decides whether its change still applies.
 */
export const preconditionFailed = (message: string): AppError =>
  new AppError(412, 'precondition_failed', message);

export const forbidden = (code: ErrorCode, message: string): AppError => new AppError(403, code, message);

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
export const databaseUnavailable = (cause?: unknown): AppError =>
  Object.assign(
    new AppError(
      503,
      'database_unavailable',
      'the database is unavailable; retry the request in a few seconds',
      undefined,
      { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
    ),
    cause === undefined ? {} : { cause },
  );

/** Codes that mean the platform's own infrastructure failed, not the request or a third party. */
const INFRASTRUCTURE_CODES: ReadonlySet<ErrorCode> = new Set([
  'database_unavailable',
  'database_busy',
  'redis_unavailable',
]);

/** How many wrappers deep an infrastructure failure is looked for (AI SDK, tools, drizzle). */
const MAX_WRAPPERS = 8;

/**
 * The platform's own infrastructure failure carried by `error`, as the 503 a client gets, or
 * undefined when the error is something else. Work that calls out (a provider call, a tool,
 * a policy's assembly) catches errors to report them as that work's failure: a provider
 * error, a tool error the model reads, a failed step. A database outage or a busy database
 * met inside that work is none of those: the request must answer 503 and a run must be
 * handed back to continue later. Libraries wrap what they catch (the AI SDK's `APICallError`
 * around a failed fetch, a `ToolError` around a failed read, drizzle around the PGlite gate's
 * refusal), so the cause chain is followed, and every such boundary asks this first and
 * rethrows what it returns, unwrapped.
 */
export function infrastructureFailure(error: unknown): AppError | undefined {
  let current = error;
  for (let depth = 0; current instanceof Error && depth < MAX_WRAPPERS; depth++) {
    // The first AppError decides: a provider_error that merely mentions a cause stays one.
    if (current instanceof AppError) return INFRASTRUCTURE_CODES.has(current.code) ? current : undefined;
    current = current.cause;
  }
  return isDatabaseUnavailable(error) ? databaseUnavailable(error) : undefined;
}
