import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { createLazyCompilers } from './lazy-compilers.ts';
import { createValidatorCompiler } from './validation.ts';

/** A Fastify app on the lazy compilers, counting how often a validator is really compiled. */
async function appWith(compilers = createLazyCompilers()) {
  const compiled: string[] = [];
  const validators = createValidatorCompiler();
  const app = Fastify({
    schemaController: { compilersFactory: { buildSerializer: compilers.buildSerializer } },
  });
  app.setValidatorCompiler(
    compilers.validatorCompiler((routeSchema) => {
      compiled.push(`${routeSchema.method} ${routeSchema.url} ${routeSchema.httpPart}`);
      return validators(routeSchema);
    }),
  );
  app.get(
    '/items',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 1, default: 20 },
            tags: { type: 'array', items: { type: 'string' } },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: { limit: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
          },
        },
      },
    },
    async (request) => ({ ...(request.query as object), secret: 'not declared' }),
  );
  app.post(
    '/items',
    {
      schema: {
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: { name: { type: 'string' } },
        },
      },
    },
    async (request) => request.body,
  );
  await app.ready();
  return { app, compiled, compilers };
}

describe('lazy route compilers', () => {
  it('compiles no schema at ready(), and each one once on its first use', async () => {
    const { app, compiled, compilers } = await appWith();
    expect(compiled).toEqual([]);
    await app.inject({ method: 'GET', url: '/items' });
    await app.inject({ method: 'GET', url: '/items?limit=3' });
    expect(compiled).toEqual(['GET /items querystring']);
    // The POST's validator and the GET's HEAD twin's are still waiting.
    expect(compilers.compilePending()).toBeGreaterThanOrEqual(2);
    expect(compilers.compilePending()).toBe(0);
    await app.close();
  });

  it('validates, coerces, defaults and serializes as compiled-at-start schemas do', async () => {
    const { app } = await appWith();
    const defaulted = await app.inject({ method: 'GET', url: '/items' });
    // The default fills the querystring, and the serializer drops the undeclared field.
    expect(defaulted.json()).toEqual({ limit: 20 });
    const coerced = await app.inject({ method: 'GET', url: '/items?limit=3&tags=a' });
    expect(coerced.json()).toEqual({ limit: 3, tags: ['a'] });
    const refused = await app.inject({ method: 'GET', url: '/items?limit=0' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toContain('querystring/limit must be >= 1');
    const bad = await app.inject({ method: 'POST', url: '/items', payload: { name: 1, extra: true } });
    expect(bad.statusCode).toBe(400);
    // The errors of the last call are the ones reported, call after call.
    const good = await app.inject({ method: 'POST', url: '/items', payload: { name: 'x' } });
    expect(good.json()).toEqual({ name: 'x' });
    const missing = await app.inject({ method: 'POST', url: '/items', payload: {} });
    expect(missing.json().message).toContain("must have required property 'name'");
    await app.close();
  });

  it('compilePending() reports a schema that cannot compile, as a start used to', async () => {
    const compilers = createLazyCompilers();
    const app = Fastify({
      schemaController: { compilersFactory: { buildSerializer: compilers.buildSerializer } },
    });
    app.setValidatorCompiler(compilers.validatorCompiler(createValidatorCompiler()));
    app.get(
      '/broken',
      { schema: { querystring: { type: 'object', properties: { a: { type: 'nonsense' } } } } },
      () => 'x',
    );
    await app.ready();
    expect(() => compilers.compilePending()).toThrow(/type/);
    await app.close();
  });
});
