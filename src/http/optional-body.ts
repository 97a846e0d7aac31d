import type { FastifyRequest } from 'fastify';

/**
 * A `preValidation` hook for POST routes whose body fields are all optional (start a run,
 * evaluate flags, reindex): a request with no body at all (`curl -X POST`) means `{}`, as
 * clients expect, instead of a 400 "body must be object". An empty body sent as JSON is still
 * refused, naming the body.
 */
export async function bodyMayBeOmitted(request: FastifyRequest): Promise<void> {
  if (request.body === undefined && request.headers['content-type'] === undefined) request.body = {};
}
