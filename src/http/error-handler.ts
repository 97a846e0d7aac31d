import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifyServerOptions,
} from 'fastify';
import { AppError, type ErrorCode, type FieldError } from '../errors.ts';
import { toFieldErrors } from './validation.ts';

/** RFC 9457 problem details, plus the stable `code` and the `request_id` of this service. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  request_id: string;
  errors?: FieldError[];
}

/**
 * The AppError thrown, or the one a library wrapped: drizzle wraps whatever a query throws
 * (the PGlite gate's `database_busy` included) in a DrizzleQueryError whose `cause` it is.
 */
function findAppError(error: unknown): AppError | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; depth++) {
    if (current instanceof AppError) return current;
    current = current.cause;
  }
  return undefined;
}

/** Maps anything thrown into a problem. Unknown errors become a bare 500 with no internals. */
export function toProblem(
  error: unknown,
  requestId: string,
  bodyLimit: number,
): { problem: Problem; headers?: Record<string, string> } {
  const make = (status: number, code: ErrorCode, detail: string, errors?: FieldError[]): Problem => ({
    type: 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    code,
    request_id: requestId,
    ...(errors && errors.length > 0 ? { errors } : {}),
  });

  const appError = findAppError(error);
  if (appError) {
    return {
      problem: make(appError.status, appError.code, appError.message, appError.errors),
      headers: appError.headers,
    };
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const errors = toFieldErrors(fastifyError.validation as never, fastifyError.validationContext ?? 'body');
    const detail = errors.map((e) => `${e.field} ${e.message}`).join('; ');
    return { problem: make(400, 'validation_failed', detail, errors) };
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return {
        problem: make(400, 'invalid_json', 'body is not valid JSON', [
          { field: 'body', message: 'is not valid JSON' },
        ]),
      };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return {
        problem: make(
          400,
          'validation_failed',
          'body must not be empty when Content-Type is application/json',
          [{ field: 'body', message: 'must not be empty' }],
        ),
      };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        problem: make(413, 'payload_too_large', `body is larger than the limit of ${bodyLimit} bytes`, [
          { field: 'body', message: `must be at most ${bodyLimit} bytes` },
        ]),
      };
    case 'FST_ERR_BAD_URL':
      return {
        problem: make(400, 'invalid_url', 'the URL path is not valid percent-encoding', [
          { field: 'url', message: 'is not valid percent-encoding' },
        ]),
      };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return {
        problem: make(414, 'uri_too_long', 'a path parameter is longer than the router accepts', [
          { field: 'params', message: 'is too long' },
        ]),
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        problem: make(415, 'unsupported_media_type', 'Content-Type must be application/json', [
          { field: 'headers.content-type', message: 'must be application/json' },
        ]),
      };
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { problem: make(status, 'bad_request', fastifyError.message) };
  }
  return {
    problem: make(
      500,
      'internal_error',
      'an unexpected error occurred; quote the request_id when reporting it',
    ),
  };
}

/**
 * Fastify's `frameworkErrors`: errors found by the router before any route or hook runs
 * (a path that is not valid percent-encoding, an overlong parameter) as problem details.
 */
export function frameworkErrorHandler(
  bodyLimit: number,
): NonNullable<FastifyServerOptions['frameworkErrors']> {
  return (error, request, reply) => {
    const { problem, headers } = toProblem(error, request.id, bodyLimit);
    reply.header('x-request-id', request.id);
    void sendProblem(reply, problem, headers);
  };
}

const CLIENT_ERRORS: Record<string, { status: number; code: ErrorCode; detail: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: 'headers_too_large',
    detail: 'the request line and headers exceed the allowed size',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    code: 'request_timeout',
    detail: 'the request took too long to arrive',
  },
};

/**
 * Node's `clientError`: requests so malformed that no request object exists (header
 * overflow, bad HTTP syntax, a timeout). The answer is written on the raw socket, as
 * Fastify's default does, but as problem details with a fresh request id.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const known = CLIENT_ERRORS[error.code ?? ''] ?? {
    status: 400,
    code: 'malformed_request',
    detail: 'the request is not valid HTTP',
  };
  const requestId = `req-${randomUUID()}`;
  const title = STATUS_CODES[known.status] ?? 'Error';
  const body = JSON.stringify({
    type: 'about:blank',
    title,
    status: known.status,
    detail: known.detail,
    code: known.code,
    request_id: requestId,
  } satisfies Problem);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${known.status} ${title}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

function sendProblem(reply: FastifyReply, problem: Problem, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  return reply.status(problem.status).type('application/problem+json').send(problem);
}

/**
 * Installs the one place where errors turn into HTTP responses, including unknown routes.
 * `translate` maps infrastructure failures the HTTP layer cannot know (a lost database
 * connection) to an `AppError`; anything it returns unchanged is handled as before.
 * `pages` answers a browser's navigation to a path no route has (the web console's own
 * routes, such as `/runs/<id>`) before it becomes a 404.
 */
export function registerErrorHandling(
  app: FastifyInstance,
  bodyLimit: number,
  translate: (error: unknown) => unknown = (error) => error,
  pages?: { sendPage(request: FastifyRequest, reply: FastifyReply): boolean },
): void {
  app.setErrorHandler((error, request: FastifyRequest, reply) => {
    const { problem, headers } = toProblem(translate(error), request.id, bodyLimit);
    // A 500 is a bug to fix; a 503 is an outage the operator sees, but it is not the request's fault.
    if (problem.status === 500) request.log.error({ err: error }, 'request failed');
    else if (problem.status > 500) request.log.warn({ err: error }, 'request failed: service unavailable');
    return sendProblem(reply, problem, headers);
  });
  const routes = createRouteTable();
  app.addHook('onRoute', (route) => routes.add(route.method, route.url));
  app.setNotFoundHandler((request, reply) => {
    if (pages?.sendPage(request, reply)) return reply;
    const path = request.url.split('?')[0] ?? '/';
    const allowed = routes.methodsOf(path);
    // A path that exists with other methods is 405 naming them (RFC 9110 15.5.6), not 404.
    const problem: Problem =
      allowed.length > 0
        ? {
            type: 'about:blank',
            title: 'Method Not Allowed',
            status: 405,
            detail: `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
            code: 'method_not_allowed',
            request_id: request.id,
          }
        : {
            type: 'about:blank',
            title: 'Not Found',
            status: 404,
            detail: `no route for ${request.method} ${path}`,
            code: 'route_not_found',
            request_id: request.id,
          };
    return sendProblem(reply, problem, allowed.length > 0 ? { allow: allowed.join(', ') } : undefined);
  });
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The methods each route path answers, to tell "no such path" (404) from "not with this
 * method" (405). Paths match as the router matches them: a `:param` is one non-empty
 * segment, a trailing slash is ignored (`ignoreTrailingSlash`); catch-all (`*`) routes,
 * such as a CORS preflight, say nothing about a path and are left out.
 */
function createRouteTable() {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  const byUrl = new Map<string, Set<string>>();
  return {
    add(method: string | string[], url: string): void {
      if (url.includes('*')) return;
      let methods = byUrl.get(url);
      if (!methods) {
        methods = new Set();
        byUrl.set(url, methods);
        const source = url
          .replace(/\/+$/, '')
          .split('/')
          .map((segment) => (segment.startsWith(':') ? '[^/]+' : escapeRegExp(segment)))
          .join('/');
        routes.push({ pattern: new RegExp(`^${source}/?$`), methods });
      }
      for (const one of [method].flat()) methods.add(one.toUpperCase());
    },
    methodsOf(path: string): string[] {
      const methods = new Set<string>();
      for (const route of routes) {
        if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
      }
      return [...methods].sort();
    },
  };
}
