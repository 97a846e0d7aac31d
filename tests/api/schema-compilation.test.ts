import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Route schemas are compiled on their first use (src/http/lazy-compilers.ts), so a start no
 * longer proves that each of them compiles: this builds the whole API with every validator and
 * serializer compiled at ready(), as Fastify does by default, and a schema that cannot compile
 * fails it.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('route schemas', () => {
  it('every route of the API compiles its validators and serializers', async () => {
    let logged = '';
    const quiet = new Writable({
      write: (chunk, _encoding, done) => {
        logged += chunk;
        done();
      },
    });
    const eager = await buildApp(t.services, { compileSchemasAtStart: true, logStream: quiet });
    try {
      await eager.ready();
      // Every validator and serializer waited for its first use until ready() compiled them.
      const line = logged.split('\n').find((text) => text.includes('route schemas compiled'));
      expect(JSON.parse(line ?? '{}').schemas).toBeGreaterThan(500);
      const health = await eager.inject({ method: 'GET', url: '/api/health' });
      expect(health.statusCode).toBe(200);
    } finally {
      await eager.close();
    }
  });

  it('a route compiled on first use answers as before: defaults, coercion, 400s', async () => {
    const list = await t.call(t.owner, 'GET', '/api/agents?limit=2');
    expect(list.statusCode).toBe(200);
    const refused = await t.call(t.owner, 'GET', '/api/agents?limit=0');
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors).toEqual([expect.objectContaining({ field: 'query.limit' })]);
  });
});
