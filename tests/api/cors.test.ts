import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, buildApp } from '../../src/app.ts';
import { startServices } from '../../src/boot.ts';
import { type Database, openDatabase } from '../../src/db/client.ts';
import { createServices, type ServiceOptions } from '../../src/services.ts';
import { createTestApp, onPostgres, type TestApp } from '../helpers/test-app.ts';
import { redisUrl } from '../helpers/test-redis.ts';

/**
 * The platform's CORS settings through the API, and real preflights: through `inject()`, over
 * a real port with `fetch`, and across API instances on one database (and one Redis when
 * REDIS_URL is set). The settings are one platform-wide row, so the tests run in order.
 */

let t: TestApp;
let base: string;
const extra: { app: App; stop: () => Promise<void>; database?: Database }[] = [];

const APP = 'https://app.example.com';
const REQUIRED = ['authorization', 'content-type', 'x-workspace-id', 'x-api-key', 'last-event-id'];

/** Another API-only instance on the same database, listening (as activity-instances.test.ts does). */
async function instance(options: ServiceOptions): Promise<string> {
  const database = onPostgres ? await openDatabase(t.config.database) : t.database;
  const services = await createServices({ ...t.config, runMode: 'api' }, database, options);
  const stop = await startServices(services);
  const app = await buildApp(services);
  extra.push({ app, stop, ...(onPostgres ? { database } : {}) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

/** A browser's preflight: no credentials, only the origin and what the real request will send. */
function preflight(origin: string, method = 'GET', headers = 'authorization, x-workspace-id') {
  return t.app.inject({
    method: 'OPTIONS',
    url: '/api/agents',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': headers,
    },
  });
}

/** The same preflight over HTTP with `fetch`, against the server at `at`. */
function preflightOver(at: string, origin: string) {
  return fetch(`${at}/api/agents`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, x-workspace-id, content-type',
    },
  });
}

const allowedHeaders = (value: string | null | undefined) =>
  (value ?? '').split(',').map((header) => header.trim().toLowerCase());

const putCors = (body: unknown, actor = t.owner) => t.call(actor, 'PUT', '/api/settings/cors', body);

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const address = t.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  base = `http://127.0.0.1:${address.port}`;
});
afterAll(async () => {
  for (const { app, stop, database } of extra) {
    await app.close();
    await stop();
    await database?.close();
  }
  await t.close();
});

describe('CORS settings', () => {
  it('allows no origin until configured: defaults shown, preflights answered without CORS headers', async () => {
    const alice = await t.newWorkspace();
    const read = await t.call(alice, 'GET', '/api/settings/cors');
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({ origins: [], credentials: false, version: null });
    expect(allowedHeaders(read.json().headers.join(','))).toEqual(expect.arrayContaining(REQUIRED));

    const answer = await preflight(APP);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    expect(answer.headers['access-control-allow-methods']).toBeUndefined();
    // A same-origin request (no Origin) is unaffected.
    expect((await t.call(alice, 'GET', '/api/agents')).statusCode).toBe(200);
  });

  it('is read by any authenticated user, changed by platform operators only', async () => {
    const bob = await t.newWorkspace();
    expect((await t.call(undefined, 'GET', '/api/settings/cors')).statusCode).toBe(401);
    const refused = await t.call(bob, 'PUT', '/api/settings/cors', { origins: [APP] });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('platform_admin_required');
    // Even an owner of a workspace is not an operator.
    expect((await t.call(bob, 'GET', '/api/settings/cors')).json().origins).toEqual([]);
  });

  it('refuses bad input naming the field, and * together with credentials', async () => {
    const cases: [unknown, string][] = [
      [{ origins: ['*'], credentials: true }, 'body.origins'],
      [{ origins: ['https://app.example.com/'] }, 'body.origins.0'],
      [{ origins: [APP, 'ftp://files.example.com'] }, 'body.origins.1'],
      [{ origins: ['https://App.Example.com'] }, 'body.origins.0'],
      [{ origins: ['https://app.example.com/path'] }, 'body.origins.0'],
      [{ origins: ['https://app.example.com:99999'] }, 'body.origins.0'],
      [{ origins: [APP, APP] }, 'body.origins.1'],
      [{ origins: [APP], methods: ['TRACE'] }, 'body.methods.0'],
      [{ origins: [APP], headers: ['bad header'] }, 'body.headers.0'],
      [{ origins: [APP], max_age: -1 }, 'body.max_age'],
      [{ origins: [APP], colour: 'red' }, 'body.colour'],
      [{}, 'body.origins'],
    ];
    for (const [body, field] of cases) {
      const answer = await putCors(body);
      expect(answer.statusCode, JSON.stringify(body)).toBe(400);
      expect(answer.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(
        answer.json().errors.map((error: { field: string }) => error.field),
        JSON.stringify(body),
      ).toContain(field);
    }
  });

  it('applies a PUT to the next preflight without a restart, through inject and over a real port', async () => {
    const other = await instance({ eventHub: t.services.eventHub });
    // The other instance reads (and caches) the settings before the change.
    expect((await preflightOver(other, APP)).headers.get('access-control-allow-origin')).toBeNull();

    const put = await putCors({
      origins: [APP, 'https://*.partner.example', 'http://localhost:5173'],
      headers: ['X-Request-ID'],
      credentials: true,
      max_age: 120,
    });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ version: 1, credentials: true, max_age: 120 });
    expect(allowedHeaders(put.json().headers.join(','))).toEqual([...REQUIRED, 'x-request-id']);

    const answer = await preflight(APP, 'POST');
    expect(answer.statusCode).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe(APP);
    expect(answer.headers['access-control-allow-credentials']).toBe('true');
    expect(answer.headers['access-control-max-age']).toBe('120');
    expect(String(answer.headers['access-control-allow-methods'])).toContain('POST');
    expect(allowedHeaders(answer.headers['access-control-allow-headers'] as string)).toEqual(
      expect.arrayContaining([...REQUIRED, 'x-request-id']),
    );
    expect(String(answer.headers.vary)).toMatch(/origin/i);

    for (const at of [base, other]) {
      const real = await preflightOver(at, 'https://eu.partner.example');
      expect(real.status, at).toBe(204);
      expect(real.headers.get('access-control-allow-origin')).toBe('https://eu.partner.example');
      expect(allowedHeaders(real.headers.get('access-control-allow-headers'))).toEqual(
        expect.arrayContaining(REQUIRED),
      );
    }
  });

  it('gives a disallowed origin no CORS headers, on a preflight and on an actual request', async () => {
    for (const origin of ['https://evil.example.com', 'https://partner.example', 'http://app.example.com']) {
      const answer = await preflight(origin);
      expect(answer.headers['access-control-allow-origin'], origin).toBeUndefined();
      expect(answer.headers['access-control-allow-headers'], origin).toBeUndefined();
      const real = await preflightOver(base, origin);
      expect(real.headers.get('access-control-allow-origin'), origin).toBeNull();
    }
    const alice = await t.newWorkspace();
    const actual = await t.call(alice, 'GET', '/api/agents', undefined, {
      headers: { origin: 'https://evil.example.com' },
    });
    expect(actual.statusCode).toBe(200);
    expect(actual.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('lets the browser read a 401 of an allowed origin (the dashboard’s failure)', async () => {
    const answer = await fetch(`${base}/api/analytics/overview`, { headers: { origin: APP } });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
    expect(answer.headers.get('access-control-allow-credentials')).toBe('true');
    expect(answer.headers.get('access-control-expose-headers')).toMatch(/x-request-id/i);
  });

  it('answers * for any origin when credentials are off', async () => {
    expect((await putCors({ origins: ['*'], methods: ['GET'] })).statusCode).toBe(200);
    const answer = await preflight('https://anywhere.example.org');
    expect(answer.headers['access-control-allow-origin']).toBe('*');
    expect(answer.headers['access-control-allow-credentials']).toBeUndefined();
    expect(answer.headers['access-control-allow-methods']).toBe('GET');
    // An OPTIONS that is not a full preflight is answered the same way, never a plain-text 400.
    const bare = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/agents',
      headers: { origin: 'https://x.example' },
    });
    expect(bare.statusCode).toBe(204);
    expect(bare.headers['access-control-allow-origin']).toBe('*');
    expect(allowedHeaders(answer.headers['access-control-allow-headers'] as string)).toEqual(
      expect.arrayContaining(REQUIRED),
    );
  });

  it(
    redisUrl
      ? 'reaches another process with its own hub through Redis'
      : 'reaches another instance through a shared hub (its own hub needs Redis)',
    async () => {
      const own = await instance(redisUrl ? {} : { eventHub: t.services.eventHub });
      const origin = 'https://second.example.com';
      expect((await preflightOver(own, origin)).headers.get('access-control-allow-origin')).toBe('*');
      expect((await putCors({ origins: [origin], credentials: true })).statusCode).toBe(200);
      // The announcement travels through Redis pub/sub: give it a moment.
      await expect
        .poll(async () => (await preflightOver(own, origin)).headers.get('access-control-allow-origin'), {
          timeout: 2_000,
          interval: 20,
        })
        .toBe(origin);
      expect(
        (await preflightOver(own, 'https://other.example.com')).headers.get('access-control-allow-origin'),
      ).toBeNull();
    },
  );

  it('records each change in the platform audit trail, which only platform operators read', async () => {
    const bob = await t.newWorkspace();
    const before = (await t.call(t.owner, 'GET', '/api/settings/audit/info?scope=platform')).json();
    expect((await putCors({ origins: ['https://audited.example.com'], max_age: 120 })).statusCode).toBe(200);
    const info = await t.call(t.owner, 'GET', '/api/settings/audit/info?scope=platform');
    expect(info.statusCode, info.body).toBe(200);
    expect(info.json().by_action['cors.updated']).toBe((before.by_action['cors.updated'] ?? 0) + 1);
    expect(info.json().chain.verified).toBe(true);
    const exported = await t.call(t.owner, 'POST', '/api/settings/audit/export', {
      scope: 'platform',
      format: 'jsonl',
      actions: ['cors.updated'],
    });
    const last = exported.body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .at(-1);
    expect(last).toMatchObject({
      action: 'cors.updated',
      target: { type: 'cors', id: 'platform' },
      changes: { origins: { new: ['https://audited.example.com'] }, max_age: { new: 120 } },
    });
    // Not the workspace's trail, and not for anyone else.
    const own = await t.call(t.owner, 'GET', '/api/settings/audit/info');
    expect(own.json().by_action['cors.updated']).toBeUndefined();
    const refused = await t.call(bob, 'GET', '/api/settings/audit/info?scope=platform');
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('platform_admin_required');
    const refusedExport = await t.call(bob, 'POST', '/api/settings/audit/export', {
      scope: 'platform',
      format: 'csv',
    });
    expect(refusedExport.statusCode).toBe(403);
  });
});
