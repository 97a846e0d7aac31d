import type { SwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { BODY_OPTIONAL, bodyMayBeOmitted } from './optional-body.ts';

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: 'Problem#' } } },
});

/**
 * Gives every route the shared error responses once, here, instead of by hand per
 * route: problem details for 4xx and 5xx, also used to serialise them.
 */
export function registerOpenApiConventions(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!route.schema || route.schema.hide) return;
    route.schema.response ??= {};
    const response = route.schema.response as Record<string, unknown>;
    response['4xx'] ??= problemResponse('Client error: problem details naming the field or rule at fault');
    response['5xx'] ??= problemResponse('Server error: problem details with a request_id, no internals');
    const hooks = [route.preValidation ?? []].flat();
    if (hooks.includes(bodyMayBeOmitted)) (route.schema as Record<string, unknown>)[BODY_OPTIONAL] = true;
  });
}

/** The committed form of the document (`openapi.json`): stable key order, two-space indent. */
export function renderOpenApi(app: FastifyInstance): string {
  return `${JSON.stringify(app.swagger(), null, 2)}\n`;
}

/** OpenAPI document settings: the two authentication schemes of spec section 5. */
export function swaggerOptions(authMode: 'oidc' | 'dev'): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agent Platform API',
        version: '0.1.0',
        description:
          'Multi-tenant platform for AI agents and workflows. Authenticate with a bearer token plus X-Workspace-ID, ' +
          'or a bearer token plus X-API-Key. Errors are RFC 9457 problem details with a stable `code`.' +
          (authMode === 'dev' ? ' Development mode: get a token with `npm run --silent dev-token`.' : ''),
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          workspace: { type: 'apiKey', in: 'header', name: 'X-Workspace-ID' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        },
      },
      security: [
        { bearer: [], workspace: [] },
        { bearer: [], apiKey: [] },
      ],
    },
    // @fastify/swagger marks every body required; a route that takes a missing body as {} says so.
    transformObject: (documentObject) => {
      const document = (documentObject as { openapiObject?: Record<string, unknown> }).openapiObject ?? {};
      const paths = (document.paths ?? {}) as Record<string, Record<string, Record<string, unknown>>>;
      for (const operations of Object.values(paths)) {
        for (const operation of Object.values(operations)) {
          if (!operation[BODY_OPTIONAL]) continue;
          delete operation[BODY_OPTIONAL];
          const body = operation.requestBody as { required?: boolean } | undefined;
          if (body) body.required = false;
        }
      }
      return document;
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  };
}
