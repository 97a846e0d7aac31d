import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, MAX_RAW_PARAM_LENGTH } from '../../src/http/input-guard.ts';
import type { Actor, Method } from '../helpers/api-client.ts';
import { credentialTypeId } from '../helpers/factories.ts';
import { settledDocument, upload } from '../helpers/knowledge.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let alice: Actor;
let apiKeyType: number;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice-hostile');
  apiKeyType = await credentialTypeId(t, alice, 'api_key_credentials');
});
afterAll(() => t.close());

/** As alice; a string payload is sent as raw JSON text (to carry escapes no object can). */
const call = (method: Method, url: string, payload?: unknown, headers: Record<string, string> = {}) =>
  t.call(alice, method, url, payload, {
    headers: { ...(typeof payload === 'string' ? { 'content-type': 'application/json' } : {}), ...headers },
  });

function expectProblem(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  field?: string,
) {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toContain('application/problem+json');
  const body = JSON.parse(response.body);
  expect(body).toMatchObject({ status, type: 'about:blank' });
  expect(typeof body.code).toBe('string');
  expect(typeof body.request_id).toBe('string');
  if (field) expect(body.errors.map((e: { field: string }) => e.field)).toContain(field);
  return body;
}

const agentBody = (overrides: Record<string, unknown> = {}) => ({
  name: 'ok',
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  ...overrides,
});

describe('text PostgreSQL cannot store is a 400 naming the field', () => {
  it('a NUL byte in a body field, a free-form key and a nested value', async () => {
    expectProblem(await call('POST', '/api/agents', agentBody({ name: 'a\u0000b' })), 400, 'body.name');
    const key = expectProblem(
      await call('POST', '/api/agents', agentBody({ config: { 'bad\u0000key': 1 } })),
      400,
      'body.config.bad\\u0000key',
    );
    expect(key.code).toBe('validation_failed');
    expectProblem(
      await call('POST', '/api/workflows', { name: 'w', context_template: { a: [{ b: 'x\u0000' }] } }),
      400,
      'body.context_template.a.0.b',
    );
    expectProblem(
      await call('POST', '/api/workflows', { name: 'w', context_template: { '\u0000': true } }),
      400,
      'body.context_template.\\u0000',
    );
  });

  it('a lone surrogate in a body field or key (PostgreSQL refuses it in jsonb)', async () => {
    expectProblem(
      await call('POST', '/api/agents', '{"name":"\\ud800x","model":{"provider":"p","name":"n"}}'),
      400,
      'body.name',
    );
    expectProblem(
      await call(
        'POST',
        '/api/agents',
        '{"name":"n","model":{"provider":"p","name":"n"},"config":{"\\udc00":1}}',
      ),
      400,
      'body.config.\\udc00',
    );
    // A well-formed pair is ordinary text.
    expect((await call('POST', '/api/agents', agentBody({ name: 'emoji \ud83d\ude00' }))).statusCode).toBe(
      201,
    );
  });

  it('a NUL byte in path parameters, query filters and headers', async () => {
    expectProblem(
      await call('GET', '/api/agents', undefined, { 'x-api-key': 'a\u0000b' }),
      400,
      'headers.x-api-key',
    );
    expectProblem(await call('DELETE', '/api/workspaces/members/a%00b'), 400, 'params.user_id');
    expectProblem(
      await call('PUT', '/api/workspaces/members/a%00b', { role: 'viewer' }),
      400,
      'params.user_id',
    );
    expectProblem(await call('GET', '/api/agents?q=%00'), 400, 'query.q');
    expectProblem(await call('GET', '/api/agents?tag=a%00'), 400, 'query.tag');
    expectProblem(await call('GET', '/api/workflows?q=%00&tag=%00'), 400, 'query.tag');
    expectProblem(await call('GET', '/api/credentials?environment=%00'), 400, 'query.environment');
  });

  it('a token whose subject has a NUL byte or is longer than a user id', async () => {
    for (const subject of ['evil\u0000user', 'u'.repeat(256)]) {
      const token = await t.token(subject);
      const response = await t.call(undefined, 'GET', '/api/workspaces', undefined, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(expectProblem(response, 401).code).toBe('unauthorized');
    }
  });
});

describe('numbers and dates the database cannot hold', () => {
  it('integer ids beyond PostgreSQL integer', async () => {
    expectProblem(
      await call('GET', '/api/credentials?credential_type_id=2147483648'),
      400,
      'query.credential_type_id',
    );
    expectProblem(await call('GET', '/api/credentials/2147483648'), 400, 'params.id');
    expectProblem(
      await call('GET', '/api/credentials/audit-archive?credential_id=99999999999'),
      400,
      'query.credential_id',
    );
    expectProblem(
      await call('POST', '/api/credentials', { name: 'x', credential_type_id: 2147483648, data: {} }),
      400,
      'body.credential_type_id',
    );
  });

  const create = (expiresAt: string) =>
    call('POST', '/api/credentials', {
      name: `dated-${Math.random()}`,
      credential_type_id: apiKeyType,
      data: { api_key: 'k', test_url: 'https://example.com' },
      expires_at: expiresAt,
    });

  it('date-times with a leap second, year 0 or past 9999 are refused on create, update and filters', async () => {
    for (const bad of [
      '2030-06-30T23:59:60Z',
      '0000-01-01T00:00:00Z',
      '9999-12-31T23:59:59-01:00',
      '0001-01-01T00:00:00+01:00',
    ]) {
      expectProblem(await create(bad), 400, 'body.expires_at');
      expectProblem(
        await call('GET', `/api/credentials/1/audit-logs?from=${encodeURIComponent(bad)}`),
        400,
        'query.from',
      );
      expectProblem(
        await call('POST', '/api/workspaces/api-keys', { name: 'k', expires_at: bad }),
        400,
        'body.expires_at',
      );
    }
    expect((await create('9999-12-31T23:59:59Z')).statusCode).toBe(201);
  });

  it('PUT applies a new expires_at instead of silently ignoring it', async () => {
    const created = await create('2031-01-01T00:00:00Z');
    const id = created.json().id;
    expectProblem(
      await call('PUT', `/api/credentials/${id}`, { expires_at: '2030-06-30T23:59:60Z' }),
      400,
      'body.expires_at',
    );
    const moved = await call('PUT', `/api/credentials/${id}`, { expires_at: '2032-02-03T04:05:06+02:00' });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json().expires_at).toBe('2032-02-03T02:05:06.000Z');
    const cleared = await call('PUT', `/api/credentials/${id}`, { expires_at: null });
    expect(cleared.json().expires_at).toBeNull();
  });
});

describe('bodies and URLs that break parsers', () => {
  it(`JSON nested deeper than ${MAX_JSON_DEPTH} levels is a 400 naming the body`, async () => {
    const deep = `{"name":"n","model":{"provider":"p","name":"n"},"config":{"x":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
    const body = expectProblem(
      await call('POST', '/api/agents', deep, { 'content-type': 'application/json' }),
      400,
      'body',
    );
    expect(body.code).toBe('validation_failed');
    const fine = `${'['.repeat(MAX_JSON_DEPTH - 3)}${']'.repeat(MAX_JSON_DEPTH - 3)}`;
    expect(
      (
        await call(
          'POST',
          '/api/agents',
          `{"name":"n","model":{"provider":"p","name":"n"},"config":{"x":${fine}}}`,
        )
      ).statusCode,
    ).toBe(201);
    // Brackets inside strings do not count.
    expect((await call('POST', '/api/agents', agentBody({ name: '['.repeat(200) }))).statusCode).toBe(201);
    expect((await call('POST', '/api/agents', '{"__proto__":{"x":1}}')).statusCode).toBe(400);
  });

  it('a member whose user_id has 255 characters can be changed and removed', async () => {
    for (const userId of ['m'.repeat(255), 'é'.repeat(255), '\ud83d\ude00'.repeat(127)]) {
      const added = await call('POST', '/api/workspaces/members', { user_id: userId, role: 'member' });
      expect(added.statusCode, added.body).toBe(201);
      const path = `/api/workspaces/members/${encodeURIComponent(userId)}`;
      const changed = await call('PUT', path, { role: 'viewer' });
      expect(changed.statusCode, changed.body).toBe(200);
      expect((await call('DELETE', path)).statusCode).toBe(204);
    }
    expectProblem(await call('DELETE', `/api/workspaces/members/${'m'.repeat(256)}`), 400, 'params.user_id');
  });

  it('bad percent-encoding and overlong parameters answer problem details', async () => {
    const badUrl = expectProblem(await call('GET', '/api/agents/%ZZ'), 400);
    expect(badUrl.code).toBe('invalid_url');
    const long = expectProblem(await call('GET', `/api/agents/${'a'.repeat(MAX_RAW_PARAM_LENGTH + 1)}`), 414);
    expect(long.code).toBe('uri_too_long');
  });
});

describe('names that every JavaScript object has (`__proto__`, `constructor`, `toString`)', () => {
  const objectNames = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];

  it('as an embedding provider: a 400 naming the field on create and update', async () => {
    for (const provider of objectNames) {
      const embedding = { provider, model: 'm' };
      expectProblem(
        await call('POST', '/api/sources', { name: `Source ${provider}`, kind: 'upload', embedding }),
        400,
        'body.embedding.provider',
      );
    }
    const created = await call('POST', '/api/sources', { name: 'Prototype names', kind: 'upload' });
    expect(created.statusCode, created.body).toBe(201);
    for (const provider of objectNames) {
      expectProblem(
        await call('PUT', `/api/sources/${created.json().id}`, { embedding: { provider, model: 'm' } }),
        400,
        'body.embedding.provider',
      );
    }
  });

  it('as a file name, an extension or a media type: an ordinary text document', async () => {
    const names = ['toString', 'constructor', 'notes.constructor', 'x.__proto__', 'y.hasOwnProperty'];
    for (const [n, name] of names.entries()) {
      const response = await upload(t, alice, {
        name,
        content: `plain words ${n}`,
        ...(n % 2 === 0 ? { type: objectNames[n % objectNames.length] } : {}),
      });
      expect(response.statusCode, `${name}: ${response.body}`).toBe(201);
      const document = await settledDocument(t, alice, response.json().id);
      expect(document, name).toMatchObject({ status: 'processed', format: 'text' });
    }
  });
});

describe('errors Node answers before Fastify, through a real port', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    server = t.app.server;
    port = (server.address() as AddressInfo).port;
  });

  const raw = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.end(request));
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });

  const parse = (text: string) => {
    const [head = '', body = ''] = text.split('\r\n\r\n');
    return { status: Number(head.split(' ')[1]), head: head.toLowerCase(), body: JSON.parse(body) };
  };

  it('431 header overflow', async () => {
    const answer = parse(
      await raw(`GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
    );
    expect(answer.status).toBe(431);
    expect(answer.head).toContain('content-type: application/problem+json');
    expect(answer.body).toMatchObject({ status: 431, code: 'headers_too_large' });
    expect(answer.body.request_id).toMatch(/^req-/);
  });

  it('400 malformed request line', async () => {
    const answer = parse(await raw('THIS IS NOT HTTP\r\n\r\n'));
    expect(answer.status).toBe(400);
    expect(answer.head).toContain('content-type: application/problem+json');
    expect(answer.body).toMatchObject({ status: 400, code: 'malformed_request' });
  });

  it('400 bad URL encoding through the socket too', async () => {
    const answer = parse(await raw('GET /api/agents/%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
    expect(answer.status).toBe(400);
    expect(answer.head).toContain('content-type: application/problem+json');
    expect(answer.body.code).toBe('invalid_url');
  });
});
