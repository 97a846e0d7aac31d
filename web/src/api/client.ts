import createClient from 'openapi-fetch';
import { sessionStore } from '../auth/session.ts';
import type { components, paths } from './schema';

export type Schemas = components['schemas'];
export type Problem = Schemas['Problem'];

/** An API answer that was not a success, with its RFC 9457 problem details. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  constructor(status: number, problem: Problem) {
    super(problem.detail ?? problem.title);
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
  }
  /** The message of the error on one field (`body.name`, `query.limit`, ...), if the API named it. */
  fieldError(field: string): string | undefined {
    return this.problem.errors?.find((error) => error.field === field || error.field === `body.${field}`)
      ?.message;
  }
}

/** Headers every API call carries: the signed-in user's token and the tab's workspace. */
export function authHeaders(): Record<string, string> {
  const session = sessionStore.get();
  const headers: Record<string, string> = {};
  if (session) headers.authorization = `Bearer ${session.token}`;
  if (session?.apiKey) headers['x-api-key'] = session.apiKey;
  else {
    const workspace = sessionStore.workspaceId();
    if (workspace) headers['x-workspace-id'] = workspace;
  }
  return headers;
}

/** fetch with the session's headers; a 401 ends the session, so the page asks to sign in again. */
export async function apiFetch(input: Request | string, init?: RequestInit): Promise<Response> {
  const request = new Request(input, init);
  for (const [name, value] of Object.entries(authHeaders())) {
    if (!request.headers.has(name)) request.headers.set(name, value);
  }
  const response = await fetch(request);
  if (response.status === 401 && sessionStore.get()) {
    sessionStore.end('Your session is no longer valid. Sign in again.');
  }
  return response;
}

/** The typed client, generated from the committed openapi.json (web/build.ts). */
export const api = createClient<paths>({ baseUrl: '', fetch: (request) => apiFetch(request) });

const unknownProblem = (response: Response): Problem => ({
  type: 'about:blank',
  title: response.statusText || 'Request failed',
  status: response.status,
  detail: `The service answered ${response.status}.`,
  code: 'internal_error',
  request_id: response.headers.get('x-request-id') ?? '',
});

/**
 * The data of an openapi-fetch answer, or an ApiError with its problem details: what TanStack
 * Query's `queryFn` and `mutationFn` want.
 */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const problem =
    error && typeof error === 'object' && 'status' in error ? (error as Problem) : unknownProblem(response);
  throw new ApiError(response.status, problem);
}
