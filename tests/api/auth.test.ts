import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent, buildApiKey, buildMember } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let alice: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
});
afterAll(() => t.close());

/** A GET with exactly these headers: the scheme under test, not an actor's ready-made ones. */
const get = (headers: Record<string, string>, url = '/api/agents') =>
  t.call(undefined, 'GET', url, undefined, { headers });

describe('scheme A: bearer token + X-Workspace-ID', () => {
  it('accepts a valid token of a member', async () => {
    expect((await get(alice.headers)).statusCode).toBe(200);
  });

  it('answers 401 with WWW-Authenticate for a missing or malformed Authorization header', async () => {
    const cases: Record<string, string>[] = [
      { 'x-workspace-id': alice.workspaceId },
      { authorization: 'Basic abc', 'x-workspace-id': alice.workspaceId },
      { authorization: 'Bearer', 'x-workspace-id': alice.workspaceId },
      { authorization: 'Bearer not a token', 'x-workspace-id': alice.workspaceId },
      { authorization: 'Bearer abc.def.ghi', 'x-workspace-id': alice.workspaceId },
    ];
    for (const headers of cases) {
      const response = await get(headers);
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toMatch(/^Bearer realm="api"/);
      expect(response.headers['content-type']).toContain('application/problem+json');
    }
  });

  it('refuses an expired token', async () => {
    const expired = await new SignJWT({})
      .setProtectedHeader({ alg: 'EdDSA', kid: t.services.devKey?.kid })
      .setSubject('alice')
      .setIssuer('urn:agent-platform:dev')
      .setAudience('agent-platform')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(t.services.devKey?.privateKey as never);
    const response = await get({ authorization: `Bearer ${expired}`, 'x-workspace-id': alice.workspaceId });
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toBe('the access token has expired');
    expect(response.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('refuses a forged token: another key, a tampered payload, or a wrong audience or issuer', async () => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const sign = (key: unknown, claims: { iss?: string; aud?: string } = {}) =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'EdDSA', kid: t.services.devKey?.kid })
        .setSubject('alice')
        .setIssuer(claims.iss ?? 'urn:agent-platform:dev')
        .setAudience(claims.aud ?? 'agent-platform')
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(key as never);
    const devKey = t.services.devKey?.privateKey;
    const [header, , signature] = alice.token.split('.');
    const tampered = `${header}.${Buffer.from(JSON.stringify({ sub: 'admin', iss: 'urn:agent-platform:dev', aud: 'agent-platform', exp: 9999999999 })).toString('base64url')}.${signature}`;
    for (const token of [
      await sign(privateKey),
      tampered,
      await sign(devKey, { aud: 'someone-else' }),
      await sign(devKey, { iss: 'https://evil.example' }),
    ]) {
      const response = await get({ authorization: `Bearer ${token}`, 'x-workspace-id': alice.workspaceId });
      expect(response.statusCode).toBe(401);
    }
  });

  it('refuses the none algorithm and symmetric algorithms', async () => {
    const body = Buffer.from(
      JSON.stringify({ sub: 'alice', iss: 'urn:agent-platform:dev', aud: 'agent-platform', exp: 9999999999 }),
    ).toString('base64url');
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${body}.`;
    const hs = await new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('urn:agent-platform:dev')
      .setAudience('agent-platform')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('guessable-secret-guessable-secret'));
    for (const token of [none, hs]) {
      expect(
        (await get({ authorization: `Bearer ${token}`, 'x-workspace-id': alice.workspaceId })).statusCode,
      ).toBe(401);
    }
  });

  it('answers 403 for an unknown workspace or a non-member, 400 for a missing or malformed header', async () => {
    const unknown = await get({ ...alice.headers, 'x-workspace-id': '00000000-0000-4000-8000-000000000000' });
    expect(unknown.statusCode).toBe(403);
    const stranger = await t.token('stranger');
    const notMember = await get({ authorization: `Bearer ${stranger}`, 'x-workspace-id': alice.workspaceId });
    expect(notMember.statusCode).toBe(403);
    expect(notMember.json().code).toBe('workspace_forbidden');
    const missing = await get({ authorization: alice.headers.authorization as string });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors[0].field).toBe('headers.x-workspace-id');
    const malformed = await get({ ...alice.headers, 'x-workspace-id': 'nope' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().errors).toEqual([
      { field: 'headers.x-workspace-id', message: 'must be a valid UUID' },
    ]);
  });

  it('checks credentials before input, so anonymous callers learn nothing about a route', async () => {
    const response = await t.call(undefined, 'POST', '/api/agents', { nonsense: true });
    expect(response.statusCode).toBe(401);
  });
});

describe('scheme B: X-API-Key + bearer token', () => {
  it('creates a key shown once, lists it by prefix only, and authenticates with it', async () => {
    const created = await t.call(alice, 'POST', '/api/workspaces/api-keys', { name: 'deploy bot' });
    expect(created.statusCode).toBe(201);
    const { key, prefix, id } = created.json();
    expect(key).toMatch(/^apk_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43}$/);
    expect(key.startsWith(prefix)).toBe(true);

    const list = await t.call(alice, 'GET', '/api/workspaces/api-keys');
    expect(list.body).not.toContain(key);
    expect(list.json().items.find((k: { id: string }) => k.id === id)).toMatchObject({
      prefix,
      status: 'active',
    });

    const agent = await buildAgent(t, alice);
    const viaKey = await get({ authorization: alice.headers.authorization as string, 'x-api-key': key });
    expect(viaKey.statusCode).toBe(200);
    expect(viaKey.json().items.map((a: { id: string }) => a.id)).toContain(agent.id);
  });

  it('refuses a revoked key, an unknown key and a key with no bearer', async () => {
    const { key, id } = await buildApiKey(t, alice);
    expect((await get({ 'x-api-key': key })).statusCode).toBe(401);
    const revoke = await t.call(alice, 'DELETE', `/api/workspaces/api-keys/${id}`);
    expect(revoke.statusCode).toBe(204);
    const refused = await get({ authorization: alice.headers.authorization as string, 'x-api-key': key });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().code).toBe('invalid_api_key');
    const unknown = await get({
      authorization: alice.headers.authorization as string,
      'x-api-key': `${key.slice(0, -2)}xx`,
    });
    expect(unknown.statusCode).toBe(401);
  });

  it('refuses an expired key', async () => {
    const { key, id } = await buildApiKey(t, alice, {
      name: 'short',
      expires_at: new Date(Date.now() + 60_000).toISOString(),
    });
    await t.database.db.execute(
      sql`update api_keys set expires_at = now() - interval '1 second' where id = ${id}`,
    );
    expect(
      (await get({ authorization: alice.headers.authorization as string, 'x-api-key': key })).statusCode,
    ).toBe(401);
    const past = await t.call(alice, 'POST', '/api/workspaces/api-keys', {
      name: 'past',
      expires_at: '2001-01-01T00:00:00Z',
    });
    expect(past.statusCode).toBe(400);
    expect(past.json().errors[0].field).toBe('body.expires_at');
  });

  it('binds the key to its workspace: the bearer must be a member of it', async () => {
    const { key } = await buildApiKey(t, alice);
    const mallory = await t.newWorkspace('mallory');
    const response = await get({ authorization: mallory.headers.authorization as string, 'x-api-key': key });
    expect(response.statusCode).toBe(403);
    const mismatch = await get({ ...alice.headers, 'x-api-key': key, 'x-workspace-id': mallory.workspaceId });
    expect(mismatch.statusCode).toBe(400);
  });

  it('lets only admins manage keys', async () => {
    const member = await buildMember(t, alice, { user_id: 'member-mo', role: 'member' });
    const response = await t.call(member, 'POST', '/api/workspaces/api-keys', { name: 'nope' });
    expect(response.statusCode).toBe(403);
    expect(response.json().code).toBe('insufficient_role');
  });
});

describe('OpenID Connect issuer', () => {
  it('verifies RS256 tokens against the issuer’s JWKS found by discovery', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' };
    let issuer = '';
    const idp = http.createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      if (request.url === '/.well-known/openid-configuration') {
        response.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
      } else if (request.url === '/jwks') {
        response.end(JSON.stringify({ keys: [jwk] }));
      } else {
        response.statusCode = 404;
        response.end('{}');
      }
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    const oidc = await createTestApp({ env: { OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'platform-api' } });
    try {
      const workspace = await oidc.services.workspaces.createWorkspace('auth0|42', { name: 'IdP users' });
      const sign = (claims: { aud?: string; exp?: string } = {}) =>
        new SignJWT({})
          .setProtectedHeader({ alg: 'RS256', kid: 'idp-1' })
          .setSubject('auth0|42')
          .setIssuer(issuer)
          .setAudience(claims.aud ?? 'platform-api')
          .setIssuedAt()
          .setExpirationTime(claims.exp ?? '10m')
          .sign(privateKey);
      const call = (token: string) =>
        oidc.call(undefined, 'GET', '/api/workspaces/current', undefined, {
          headers: { authorization: `Bearer ${token}`, 'x-workspace-id': workspace.id },
        });
      const ok = await call(await sign());
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toMatchObject({ user_id: 'auth0|42', role: 'owner' });
      expect((await call(await sign({ aud: 'other' }))).statusCode).toBe(401);
      expect((await call(alice.token)).statusCode).toBe(401);
      expect((await oidc.call(undefined, 'GET', '/.well-known/jwks.json')).statusCode).toBe(404);
    } finally {
      await oidc.close();
      idp.close();
    }
  });
});
