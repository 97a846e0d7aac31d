import type { FastifyRequest } from 'fastify';

/**
 * Marks, on a route's schema, a body that may be left out (`bodyMayBeOmitted`): the OpenAPI
 * document shows it (`registerOpenApiConventions`), and the JSON parser lets such a body be empty.
 */
export const BODY_OPTIONAL = 'x-body-optional';

/**
 * A `preValidation` hook for POST routes whose body fields are all optional (start a run,
 * evaluate flags, reindex): a request with no body (`curl -X POST`, or an empty one sent with
 * `Content-Type: application/json`, as a client that sets the header on every request does)
 * means `{}`, as clients expect, instead of a 400 "body must be object".
 */
export async function bodyMayBeOmitted(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {};
}

/**
 * Whether an empty body sent as JSON is taken as no body: on a route that takes no body at all
 * (cancel, pause, resume) or whose body may be omitted. Elsewhere it is a 400 naming the body.
 */
export function emptyJsonBodyAllowed(request: FastifyRequest): boolean {
  const schema = request.routeOptions.schema as Record<string, unknown> | undefined;
  return schema?.body === undefined || schema[BODY_OPTIONAL] === true;
}
