import type { SwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { COMPONENT_KEYWORD } from '../lib/typebox.ts';
import { BODY_OPTIONAL, bodyMayBeOmitted } from './optional-body.ts';

interface QueryParameter {
  in: string;
  required?: boolean;
  schema?: { default?: unknown };
}

interface DocumentedResponse {
  content?: Record<string, { schema?: { $ref?: string; allOf?: { $ref?: string }[] } }>;
}

/** A copy of `schema` in which every named subschema is a reference to its component. */
function referNamed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(referNamed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id === 'string') return { $ref: `#/components/schemas/${id}` };
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, referNamed(value)]));
}

/**
 * See `transform` in swaggerOptions: a named JSON schema of a response, nested for the
 * document; in other media types (event streams), the named schemas they hold referenced.
 */
function documentResponse(answer: unknown): unknown {
  const { description, content, headers } = answer as {
    description?: string;
    content?: Record<string, { schema?: { $id?: unknown } }>;
    headers?: unknown;
  };
  if (!content) return answer;
  const schema = content['application/json']?.schema;
  if (Object.keys(content).length === 1 && typeof schema?.$id === 'string') {
    return { description, ...(headers ? { headers } : {}), allOf: [schema] };
  }
  const media = Object.entries(content).map(([type, { schema, ...rest }]) => [
    type,
    { ...rest, schema: Object.fromEntries(Object.entries(schema ?? {}).map(([k, v]) => [k, referNamed(v)])) },
  ]);
  return { ...(answer as object), content: Object.fromEntries(media) };
}

/**
 * Lifts every schema marked with `COMPONENT_KEYWORD` (lib/typebox.ts) into `components` under
 * its name and answers a copy of `node` that refers to it instead. The same name given to two
 * different schemas is refused, as for `$id`.
 */
function liftComponents(node: unknown, components: Record<string, unknown>): unknown {
  if (Array.isArray(node)) return node.map((item) => liftComponents(item, components));
  if (typeof node !== 'object' || node === null) return node;
  const entries = Object.entries(node).map(
    ([key, value]) => [key, liftComponents(value, components)] as const,
  );
  const name = (node as Record<string, unknown>)[COMPONENT_KEYWORD];
  if (typeof name !== 'string') return Object.fromEntries(entries);
  const schema = Object.fromEntries(entries.filter(([key]) => key !== COMPONENT_KEYWORD));
  const known = components[name];
  if (known !== undefined && JSON.stringify(known) !== JSON.stringify(schema)) {
    throw new Error(`the schema named ${name} differs from another of that name`);
  }
  components[name] = schema;
  return { $ref: `#/components/schemas/${name}` };
}

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: 'Problem#' } } },
});

/**
 * The named schemas (`$id`) nested in `schema`, each with its JSON text. openapi.json keeps
 * one component per name, so two different schemas under one name would silently document
 * one of them where the other is sent.
 */
function namedSchemas(schema: unknown, found = new Map<string, string>()): Map<string, string> {
  if (typeof schema !== 'object' || schema === null) return found;
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id === 'string') found.set(id, JSON.stringify(schema));
  for (const value of Object.values(schema)) namedSchemas(value, found);
  return found;
}

/**
 * Gives every route the shared error responses once, here, instead of by hand per
 * route: problem details for 4xx and 5xx, also used to serialise them. Refuses a
 * component name given to two different schemas.
 */
export function registerOpenApiConventions(app: FastifyInstance): void {
  const components = new Map<string, string>();
  app.addHook('onRoute', (route) => {
    if (!route.schema || route.schema.hide) return;
    for (const [id, text] of namedSchemas(route.schema)) {
      const known = components.get(id);
      if (known !== undefined && known !== text) {
        throw new Error(
          `${route.method} ${route.url}: the schema named ${id} differs from another of that name`,
        );
      }
      components.set(id, text);
    }
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
    // A JSON response whose schema is named (`$id`, see `Json` in schemas.ts) is documented
    // as a reference to its component: @fastify/swagger names the schemas nested in a
    // response schema, not the one a `content` entry holds, so the named schema is nested
    // (`allOf`) here, for the document only, and the wrapper dropped again below. The named
    // schemas an event stream's events hold are referenced (a test checks every reference
    // resolves).
    transform: ({ schema, url }) => {
      const response = (schema as { response?: Record<string, unknown> } | undefined)?.response;
      if (!response) return { schema, url };
      const documented = Object.fromEntries(
        Object.entries(response).map(([status, answer]) => [status, documentResponse(answer)]),
      );
      return { schema: { ...schema, response: documented }, url };
    },
    transformObject: (documentObject) => {
      const document = (documentObject as { openapiObject?: Record<string, unknown> }).openapiObject ?? {};
      const paths = (document.paths ?? {}) as Record<string, Record<string, Record<string, unknown>>>;
      for (const operations of Object.values(paths)) {
        for (const operation of Object.values(operations)) {
          // @fastify/swagger marks every query field that the schema does not wrap in
          // Optional as required, a defaulted one too (`limit`, `offset`): the server fills
          // in its default, so a client may leave it out.
          for (const parameter of (operation.parameters ?? []) as QueryParameter[]) {
            if (parameter.in === 'query' && parameter.schema?.default !== undefined)
              parameter.required = false;
          }
          for (const answer of Object.values(
            (operation.responses ?? {}) as Record<string, DocumentedResponse>,
          )) {
            const media = answer.content?.['application/json'];
            const named = media?.schema?.allOf?.[0];
            if (media && named?.$ref && media.schema?.allOf?.length === 1) media.schema = named;
          }
          // @fastify/swagger marks every body required; a route that takes a missing body as {} says so.
          if (!operation[BODY_OPTIONAL]) continue;
          delete operation[BODY_OPTIONAL];
          const body = operation.requestBody as { required?: boolean } | undefined;
          if (body) body.required = false;
        }
      }
      // Shared shapes marked with COMPONENT_KEYWORD become components of their own, referenced.
      document.components ??= {};
      const components = document.components as { schemas?: Record<string, unknown> };
      components.schemas ??= {};
      const named = components.schemas;
      const lifted: Record<string, unknown> = {};
      document.paths = liftComponents(document.paths, lifted);
      for (const [name, schema] of Object.entries(named)) named[name] = liftComponents(schema, lifted);
      for (const [name, schema] of Object.entries(lifted)) {
        if (name in named) throw new Error(`the component ${name} is named twice`);
        named[name] = schema;
      }
      return document;
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  };
}
