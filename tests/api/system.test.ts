import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Component } from '../../src/lifecycle.ts';
import { createSystemService } from '../../src/modules/system/system.service.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';
import { redisUrl } from '../helpers/test-redis.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('health', () => {
  it('serves a public liveness probe with no details', async () => {
    const response = await t.call(undefined, 'GET', '/api/health');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
  });

  it('reports components behind authentication', async () => {
    expect((await t.call(undefined, 'GET', '/api/system/health')).statusCode).toBe(401);
    const response = await t.call(t.owner, 'GET', '/api/system/health');
    expect(response.statusCode).toBe(200);
    const report = response.json();
    expect(report.status).toBe('Operational');
    expect(report.components.map((c: { name: string; status: string }) => [c.name, c.status])).toEqual([
      ['API', 'up'],
      ['Database', 'up'],
      // Redis is a row of its own once REDIS_URL is set (CI's second pass): its PING answers.
      ['Redis', redisUrl ? 'up' : 'not_configured'],
      // Keyword search works with nothing configured; vector search needs an embedding model.
      ['Vector Search', 'up'],
      ['LLM Providers', 'not_configured'],
    ]);
    const search = report.components.find((c: { name: string }) => c.name === 'Vector Search');
    expect(search.detail).toMatch(
      /^keyword search \(BM25\) on every source; vector and hybrid search \(pgvector \d+\.\d+/,
    );
    expect(search.detail).toContain('EMBEDDING_MODELS_DIR is not set');
    expect(report.uptime_seconds).toBeGreaterThanOrEqual(0);
  });

  it('needs a valid token but no workspace, so it can answer while memberships cannot be read', async () => {
    const response = await t.call(undefined, 'GET', '/api/system/health', undefined, {
      headers: { authorization: t.owner.headers.authorization as string },
    });
    expect(response.statusCode).toBe(200);
    const invalid = await t.call(undefined, 'GET', '/api/system/health', undefined, {
      headers: { authorization: 'Bearer not.a.token' },
    });
    expect(invalid.statusCode).toBe(401);
  });

  it('reports Down with 503 when the database does not answer', async () => {
    const system = createSystemService({
      pingDatabase: () => Promise.reject(new Error('connection refused')),
      databaseKind: 'postgres',
      startedAt: new Date(Date.now() - 5000),
    });
    const report = await system.health();
    expect(report.status).toBe('Down');
    expect(report.components[1]).toMatchObject({ name: 'Database', status: 'down', detail: 'query failed' });
  });

  it('builds the component rows from the components themselves: any one down is Degraded', async () => {
    const component = (name: string, health: Component['health']): Component => ({
      name,
      start: async () => {},
      stop: async () => {},
      health,
    });
    const report = async (components: Component[]) =>
      createSystemService({
        pingDatabase: async () => {},
        databaseKind: 'postgres',
        startedAt: new Date(),
        components,
        providers: {
          health: async () => ({ name: 'model gateway', status: 'up', detail: '2 configured' }),
          workspaceHealth: async () => ({ name: 'model gateway', status: 'up', detail: '1 configured' }),
        },
      }).health({ operator: true });

    const up = await report([
      component('Redis', async () => ({ name: 'Redis', status: 'up', latency_ms: 0.4 })),
    ]);
    expect(up.status).toBe('Operational');
    // The spec's rows in the spec's order, each under its row name, whatever the component calls itself.
    expect(up.components).toEqual([
      { name: 'API', status: 'up' },
      expect.objectContaining({ name: 'Database', status: 'up' }),
      { name: 'Redis', status: 'up', latency_ms: 0.4 },
      { name: 'Vector Search', status: 'not_configured' },
      { name: 'LLM Providers', status: 'up', detail: '2 configured' },
    ]);

    const redisDown = await report([
      component('Redis', async () => ({
        name: 'Redis',
        status: 'down',
        detail: 'not connected (reconnecting)',
      })),
    ]);
    expect(redisDown.status).toBe('Degraded');
    expect(redisDown.components[2]).toEqual({
      name: 'Redis',
      status: 'down',
      detail: 'not connected (reconnecting)',
    });

    // A health check that throws is a down component, never a failed report; others follow the spec's rows.
    const broken = await report([
      component('Search index', async () => {
        throw new Error('boom');
      }),
    ]);
    expect(broken.status).toBe('Degraded');
    expect(broken.components.at(-1)).toEqual({
      name: 'Search index',
      status: 'down',
      detail: 'health check failed',
    });
  });
});

describe('OpenAPI', () => {
  it('documents every route with a summary, description, tags and the shared errors', async () => {
    const response = await t.call(undefined, 'GET', '/docs/json');
    expect(response.statusCode).toBe(200);
    const doc = response.json();
    expect(doc.components.schemas.Problem).toBeDefined();
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['bearer', 'workspace', 'apiKey']);
    const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(
      ([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })),
    );
    const apiOperations = operations.filter((o) => o.path.startsWith('/api/'));
    expect(apiOperations.length).toBeGreaterThanOrEqual(20);
    for (const { path, method, op } of apiOperations) {
      expect(op.summary, `${method} ${path} summary`).toBeTruthy();
      expect(op.description, `${method} ${path} description`).toBeTruthy();
      expect(op.tags?.length, `${method} ${path} tags`).toBeGreaterThan(0);
      expect(op.responses['4XX'], `${method} ${path} 4XX`).toBeDefined();
    }
    expect(doc.paths['/api/health'].get.security).toEqual([]);
  });

  it('serves the interactive docs without authentication', async () => {
    const response = await t.call(undefined, 'GET', '/docs/');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/html');
  });
});
