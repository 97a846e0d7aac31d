import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConnectionTestRequest,
  type ConnectionTestResult,
  testConnection,
} from './connection-tester.ts';

const CANARY = 'canary-Secret-123';
/** Private networks allowed: the probes below reach this machine's own servers on loopback. */
const OPEN = { refusePrivateNetworks: false };
const STRICT = { refusePrivateNetworks: true };
const SHORT = 300;
const messages: string[] = [];

/** Runs a test and keeps its message so the last test can scan every message for the canary. */
async function run(
  request: Omit<ConnectionTestRequest, 'policy'> & Partial<Pick<ConnectionTestRequest, 'policy'>>,
): Promise<ConnectionTestResult> {
  const result = await testConnection({ policy: OPEN, ...request });
  messages.push(result.message);
  expect(result.message).not.toContain(CANARY);
  return result;
}

/** A port nobody listens on: bind, read the port, close. */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Accepts TCP connections and never writes a byte: the case a timeout exists for. */
async function startSilentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/**
 * Speaks just enough of the PostgreSQL protocol to ask for a cleartext password and record it,
 * so the test sees exactly which password the tester sends.
 */
async function startPasswordRecorder(): Promise<{ port: number; passwords: string[]; close: () => void }> {
  const passwords: string[] = [];
  const server = createServer((socket) => {
    let startupSeen = false;
    socket.on('data', (chunk: Buffer) => {
      if (!startupSeen) {
        startupSeen = true;
        socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]));
        return;
      }
      if (chunk[0] === 0x70) {
        const length = chunk.readInt32BE(1);
        passwords.push(chunk.subarray(5, 1 + length - 1).toString('utf8'));
        socket.destroy();
      }
    });
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, passwords, close: () => server.close() };
}

function expectElapsedNear(result: ConnectionTestResult, ms: number): void {
  expect(result.duration_ms).toBeGreaterThanOrEqual(ms - 20);
  expect(result.duration_ms).toBeLessThan(ms + 700);
}

const postgres = (data: Record<string, unknown>, extra: Partial<ConnectionTestRequest> = {}) =>
  run({ kind: 'postgres', data, secretFields: ['password'], ...extra });

const redis = (data: Record<string, unknown>, extra: Partial<ConnectionTestRequest> = {}) =>
  run({ kind: 'redis', data, secretFields: ['password'], ...extra });

const pgData = {
  host: '127.0.0.1',
  port: 5432,
  database: 'postgres',
  username: 'postgres',
  password: CANARY,
};

describe('postgres', () => {
  it('connects and runs SELECT 1 on the real server', async () => {
    const result = await postgres(pgData);
    expect(result).toMatchObject({
      passed: true,
      message: 'connected to 127.0.0.1:5432/postgres as postgres (SELECT 1 ok)',
    });
  });

  it('names the resolved address when the host is a name', async () => {
    const result = await postgres({ ...pgData, host: 'localhost' });
    expect(result.passed).toBe(true);
    expect(result.message).toMatch(
      /^connected to localhost:5432 \((127\.0\.0\.1|::1)\)\/postgres as postgres/,
    );
  });

  it('reports an authentication failure naming the user and not the password', async () => {
    const result = await postgres({ ...pgData, username: 'no_such_role_t9' });
    expect(result.passed).toBe(false);
    expect(result.message).toMatch(/^authentication failed for user no_such_role_t9: .*does not exist/);
  });

  it('scrubs a secret field even from the server error text', async () => {
    const result = await run({
      kind: 'postgres',
      data: { ...pgData, username: CANARY },
      secretFields: ['username', 'password'],
    });
    expect(result.passed).toBe(false);
    expect(result.message).toContain('authentication failed for user ***');
  });

  it('scrubs string leaves of a structured secret field', async () => {
    const result = await run({
      kind: 'postgres',
      data: { ...pgData, username: CANARY, key_file: { private_key: CANARY } },
      secretFields: ['key_file'],
    });
    expect(result.message).toContain('authentication failed for user ***');
  });

  it('reports a database that does not exist', async () => {
    const result = await postgres({ ...pgData, database: 'no_such_database_t9' });
    expect(result).toMatchObject({
      passed: false,
      message: 'database no_such_database_t9 does not exist on 127.0.0.1:5432',
    });
  });

  it('reports a closed port', async () => {
    const port = await freePort();
    const result = await postgres({ ...pgData, port });
    expect(result).toMatchObject({ passed: false, message: `connection refused on 127.0.0.1:${port}` });
  });

  it('times out at the configured limit against a server that never answers', async () => {
    const silent = await startSilentServer();
    try {
      const result = await postgres({ ...pgData, port: silent.port }, { timeouts: { databaseMs: SHORT } });
      expect(result).toMatchObject({
        passed: false,
        message: `timed out after 0.3 s connecting to 127.0.0.1:${silent.port}`,
      });
      expectElapsedNear(result, SHORT);
    } finally {
      await silent.close();
    }
  });

  it('never falls back to this server PGPASSWORD when the credential has no password', async () => {
    const recorder = await startPasswordRecorder();
    const previous = process.env.PGPASSWORD;
    process.env.PGPASSWORD = CANARY;
    try {
      const result = await postgres({ ...pgData, port: recorder.port, password: undefined });
      expect(result.passed).toBe(false);
      expect(recorder.passwords).toEqual(['']);
    } finally {
      if (previous === undefined) delete process.env.PGPASSWORD;
      else process.env.PGPASSWORD = previous;
      recorder.close();
    }
  });

  it.each(['host', 'database', 'username'])('names the missing required field %s', async (field) => {
    const result = await postgres({ ...pgData, [field]: undefined });
    expect(result).toMatchObject({ passed: false, message: `missing required field "${field}"` });
  });

  it('rejects a port that is not a port', async () => {
    const result = await postgres({ ...pgData, port: 70_000 });
    expect(result).toMatchObject({ passed: false, message: expect.stringContaining('"port"') });
  });

  it('refuses the cloud metadata address without connecting', async () => {
    const result = await postgres({ ...pgData, host: '169.254.169.254' });
    expect(result).toMatchObject({
      passed: false,
      message: 'refused: 169.254.169.254 is a link-local / cloud metadata address',
    });
    expect(result.duration_ms).toBeLessThan(100);
  });

  it('refuses loopback only when the workspace refuses private networks', async () => {
    const result = await postgres(pgData, { policy: STRICT });
    expect(result).toMatchObject({
      passed: false,
      message: expect.stringMatching(/^refused: 127\.0\.0\.1 is in the private range 127\.0\.0\.0\/8/),
    });
  });

  it('reports a host name that does not resolve', async () => {
    const result = await postgres({ ...pgData, host: 'db.invalid' });
    expect(result).toMatchObject({ passed: false, message: 'host name db.invalid could not be resolved' });
  });
});

const redisData = { host: '127.0.0.1', port: 6379 };

describe('redis', () => {
  it('answers PING with PONG on the real server', async () => {
    const result = await redis(redisData);
    expect(result).toMatchObject({ passed: true, message: 'PING to 127.0.0.1:6379 answered PONG' });
  });

  it('selects a non-zero database', async () => {
    const result = await redis({ ...redisData, database: 2 });
    expect(result).toMatchObject({
      passed: true,
      message: 'PING to 127.0.0.1:6379 answered PONG (database 2)',
    });
  });

  it('reports a database index the server does not have', async () => {
    const result = await redis({ ...redisData, database: 99_999 });
    expect(result.passed).toBe(false);
    expect(result.message).toMatch(/^database 99999 cannot be selected on 127\.0\.0\.1:6379/);
  });

  it('fails when a password is sent to a server that has none', async () => {
    const result = await redis({ ...redisData, password: CANARY });
    expect(result.passed).toBe(false);
    expect(result.message).toMatch(
      /^authentication failed for user default: 127\.0\.0\.1:6379 has no password/,
    );
  });

  it('fails for an unknown user with a password', async () => {
    const result = await redis({ ...redisData, username: 'nobody_t9', password: CANARY });
    expect(result.passed).toBe(false);
    expect(result.message).toMatch(/^authentication failed for user nobody_t9: WRONGPASS/);
  });

  it('reports a closed port', async () => {
    const port = await freePort();
    const result = await redis({ ...redisData, port });
    expect(result).toMatchObject({ passed: false, message: `connection refused on 127.0.0.1:${port}` });
  });

  it('times out at the configured limit against a server that never answers', async () => {
    const silent = await startSilentServer();
    try {
      const result = await redis({ ...redisData, port: silent.port }, { timeouts: { cacheMs: SHORT } });
      expect(result).toMatchObject({
        passed: false,
        message: `timed out after 0.3 s waiting for 127.0.0.1:${silent.port}`,
      });
      expectElapsedNear(result, SHORT);
    } finally {
      await silent.close();
    }
  });

  it('always refuses the EC2 IPv6 metadata address', async () => {
    const result = await redis({ ...redisData, host: 'fd00:ec2::254' });
    expect(result).toMatchObject({
      passed: false,
      message: 'refused: fd00:ec2::254 is a link-local / cloud metadata address',
    });
  });

  it('refuses an IPv4-mapped metadata address', async () => {
    const result = await redis({ ...redisData, host: '::ffff:169.254.169.254' });
    expect(result).toMatchObject({ passed: false, message: expect.stringContaining('cloud metadata') });
  });

  it('names the missing host', async () => {
    const result = await redis({ port: 6379 });
    expect(result).toMatchObject({ passed: false, message: 'missing required field "host"' });
  });
});

describe('http', () => {
  let server: http.Server;
  let base: string;
  const hits: Record<string, number> = {};
  const hostHeaders: string[] = [];

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://placeholder');
      hits[url.pathname] = (hits[url.pathname] ?? 0) + 1;
      switch (url.pathname) {
        case '/ok':
          hostHeaders.push(request.headers.host ?? '');
          response.writeHead(200).end('ok');
          return;
        case '/secure': {
          const authorised =
            request.headers.authorization === `Bearer ${CANARY}` &&
            url.searchParams.get('key') === CANARY &&
            url.searchParams.get('account') === 'a b&c/d';
          response.writeHead(authorised ? 200 : 401).end();
          return;
        }
        case '/basic': {
          const expected = `Basic ${Buffer.from(`admin:${CANARY}`).toString('base64')}`;
          response.writeHead(request.headers.authorization === expected ? 200 : 401).end();
          return;
        }
        case '/redirect':
          response.writeHead(302, { location: '/ok' }).end();
          return;
        case '/hang':
          return;
        default:
          response.writeHead(404).end();
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  const get = (url: string, extra: Partial<ConnectionTestRequest> = {}, data: Record<string, unknown> = {}) =>
    run({ kind: 'http', data, secretFields: ['api_key', 'password'], endpoint: { url }, ...extra });

  it('passes on 200', async () => {
    const result = await get(`${base}/ok`);
    expect(result).toMatchObject({ passed: true, message: `HTTP 200 from ${base}/ok` });
  });

  it('keeps the host name in the Host header while connecting to the vetted address', async () => {
    const port = (server.address() as AddressInfo).port;
    const result = await get(`http://localhost:${port}/ok`);
    expect(result.passed).toBe(true);
    expect(hostHeaders.at(-1)).toBe(`localhost:${port}`);
  });

  it('fills placeholders in the URL (encoded) and headers, and hides the secret query', async () => {
    const result = await run({
      kind: 'http',
      data: { api_key: CANARY, account: 'a b&c/d' },
      secretFields: ['api_key'],
      endpoint: {
        url: `${base}/secure?key={{api_key}}&account={{ account }}`,
        headers: { Authorization: 'Bearer {{api_key}}' },
      },
    });
    expect(result).toMatchObject({ passed: true, message: `HTTP 200 from ${base}/secure?…` });
  });

  it('reports 401 with the expected status and without the key', async () => {
    const result = await run({
      kind: 'http',
      data: { api_key: `${CANARY}-wrong`, account: 'a b&c/d' },
      secretFields: ['api_key'],
      endpoint: {
        url: `${base}/secure?key={{api_key}}&account={{account}}`,
        headers: { Authorization: 'Bearer {{api_key}}' },
      },
    });
    expect(result).toMatchObject({ passed: false, message: `HTTP 401 from ${base}/secure?… (expected 200)` });
  });

  it('sends URL userinfo as basic auth and never shows it', async () => {
    const result = await get(
      `http://admin:{{password}}@127.0.0.1:${(server.address() as AddressInfo).port}/basic`,
      {},
      {
        password: CANARY,
      },
    );
    expect(result).toMatchObject({ passed: true, message: `HTTP 200 from ${base}/basic` });
  });

  it('reports a redirect and does not follow it', async () => {
    const before = hits['/ok'] ?? 0;
    const result = await get(`${base}/redirect`);
    expect(result).toMatchObject({
      passed: false,
      message: `HTTP 302 from ${base}/redirect redirects to ${base}/ok; redirects are not followed (expected 200)`,
    });
    expect(hits['/ok'] ?? 0).toBe(before);
  });

  it('passes a redirect the type expects', async () => {
    const result = await run({
      kind: 'http',
      data: {},
      secretFields: [],
      endpoint: { url: `${base}/redirect`, expected_status: [301, 302] },
    });
    expect(result).toMatchObject({ passed: true, message: `HTTP 302 from ${base}/redirect` });
  });

  it('times out at the configured limit', async () => {
    const result = await get(`${base}/hang`, { timeouts: { httpMs: SHORT } });
    expect(result).toMatchObject({
      passed: false,
      message: `timed out after 0.3 s waiting for ${base}/hang`,
    });
    expectElapsedNear(result, SHORT);
  });

  it('reports a closed port', async () => {
    const port = await freePort();
    const result = await get(`http://127.0.0.1:${port}/ok`);
    expect(result).toMatchObject({
      passed: false,
      message: `connection refused on http://127.0.0.1:${port}/ok`,
    });
  });

  it('refuses the metadata address', async () => {
    const result = await get('http://169.254.169.254/latest/meta-data/');
    expect(result).toMatchObject({
      passed: false,
      message: 'refused: 169.254.169.254 is a link-local / cloud metadata address',
    });
    expect(result.duration_ms).toBeLessThan(100);
  });

  it('refuses loopback when the workspace refuses private networks', async () => {
    const result = await get(`${base}/ok`, { policy: STRICT });
    expect(result).toMatchObject({
      passed: false,
      message: expect.stringMatching(/^refused: 127\.0\.0\.1 is in/),
    });
  });

  it('names a placeholder field the credential lacks', async () => {
    const result = await get(`${base}/secure?key={{api_key}}`);
    expect(result).toMatchObject({
      passed: false,
      message: 'the test endpoint needs field "api_key", which the credential does not have',
    });
  });

  it('refuses schemes other than http and https', async () => {
    const result = await get('file:///etc/passwd');
    expect(result).toMatchObject({
      passed: false,
      message: 'the test endpoint must use http or https, not file',
    });
  });

  it('fails without an endpoint', async () => {
    const result = await run({ kind: 'http', data: {}, secretFields: [] });
    expect(result.passed).toBe(false);
  });
});

describe('https', () => {
  let server: https.Server;
  let port: number;
  let directory: string;
  const serverNames: string[] = [];

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'connection-tester-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(directory, 'key.pem'),
        '-out',
        join(directory, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
      ],
      { stdio: 'ignore' },
    );
    server = https.createServer(
      {
        key: readFileSync(join(directory, 'key.pem')),
        cert: readFileSync(join(directory, 'cert.pem')),
        SNICallback: (name, callback) => {
          serverNames.push(name);
          callback(null, undefined);
        },
      },
      (_request, response) => response.writeHead(200).end(),
    );
    server.on('tlsClientError', () => undefined);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.close();
    await once(server, 'close');
    rmSync(directory, { recursive: true, force: true });
  });

  it('keeps the host name for SNI and verifies the certificate while connecting to the vetted address', async () => {
    const result = await run({
      kind: 'http',
      data: { api_key: CANARY },
      secretFields: ['api_key'],
      endpoint: { url: `https://localhost:${port}/ok?key={{api_key}}` },
    });
    expect(result.passed).toBe(false);
    expect(result.message).toMatch(
      new RegExp(
        `^TLS certificate of https://localhost:${port}/ok\\?… was rejected: self[- ]signed certificate`,
      ),
    );
    expect(serverNames.at(-1)).toBe('localhost');
  });
});

describe.concurrent('default limits of spec section 8', () => {
  it('postgres gives up after 5 s', async () => {
    const silent = await startSilentServer();
    try {
      const result = await testConnection({
        kind: 'postgres',
        data: { ...pgData, port: silent.port },
        secretFields: [],
        policy: OPEN,
      });
      expect(result.message).toBe(`timed out after 5 s connecting to 127.0.0.1:${silent.port}`);
      expectElapsedNear(result, 5_000);
    } finally {
      await silent.close();
    }
  });

  it('redis gives up after 5 s', async () => {
    const silent = await startSilentServer();
    try {
      const result = await testConnection({
        kind: 'redis',
        data: { ...redisData, port: silent.port },
        secretFields: [],
        policy: OPEN,
      });
      expect(result.message).toBe(`timed out after 5 s waiting for 127.0.0.1:${silent.port}`);
      expectElapsedNear(result, 5_000);
    } finally {
      await silent.close();
    }
  });

  it('http gives up after 10 s', async () => {
    const silent = await startSilentServer();
    try {
      const url = `http://127.0.0.1:${silent.port}/`;
      const result = await testConnection({
        kind: 'http',
        data: {},
        secretFields: [],
        endpoint: { url },
        policy: OPEN,
      });
      expect(result.message).toBe(`timed out after 10 s waiting for ${url}`);
      expectElapsedNear(result, 10_000);
    } finally {
      await silent.close();
    }
  });
});

describe('oauth2 and none', () => {
  it('passes when an access token is present and never shows it', async () => {
    const result = await run({
      kind: 'oauth2',
      data: { access_token: CANARY },
      secretFields: ['access_token'],
    });
    expect(result).toMatchObject({ passed: true, message: 'access token present' });
  });

  it('fails without an access token', async () => {
    const result = await run({ kind: 'oauth2', data: { access_token: '' }, secretFields: [] });
    expect(result).toMatchObject({ passed: false, message: expect.stringContaining('no access_token') });
  });

  it('fails for a type without a test', async () => {
    const result = await run({ kind: 'none', data: { password: CANARY }, secretFields: ['password'] });
    expect(result).toEqual({
      passed: false,
      message: 'this credential type has no connection test',
      duration_ms: expect.any(Number),
    });
  });
});

describe('secrets', () => {
  it('never appear in any message of this file, raw or encoded', () => {
    expect(messages.length).toBeGreaterThan(30);
    for (const message of messages) {
      expect(message).not.toContain(CANARY);
      expect(message).not.toContain(encodeURIComponent(CANARY));
      expect(message).not.toContain(Buffer.from(CANARY).toString('base64'));
    }
  });
});
