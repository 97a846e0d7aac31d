import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConsole } from '../../src/http/console.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * The web console as the service serves it (a console built into a temporary folder, so the
 * test does not depend on `npm run web:build`): the page at `/` and at every client route a
 * browser navigates to, hashed assets cached for good, the security headers, and the
 * development sign-in that exists only in development mode and only on loopback.
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-'));
const PAGE =
  '<!doctype html><title>console</title><script type="module" src="/assets/index-abc123.js"></script>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;
fs.mkdirSync(path.join(dir, 'assets'));
fs.writeFileSync(path.join(dir, 'index.html'), PAGE);
fs.writeFileSync(path.join(dir, 'assets/index-abc123.js'), SCRIPT);
fs.writeFileSync(path.join(dir, 'assets/index-abc123.js.br'), zlib.brotliCompressSync(SCRIPT));

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ console: loadConsole({ dir }) });
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const page = (url: string) =>
  t.app.inject({ method: 'GET', url, headers: { accept: 'text/html,*/*;q=0.8' } });

describe('the console’s pages', () => {
  it('serves the page at / with a strict CSP, no caching and the security headers', async () => {
    const response = await page('/');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.body).toBe(PAGE);
    expect(response.headers['cache-control']).toBe('no-cache');
    const policy = String(response.headers['content-security-policy']);
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe-inline');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['referrer-policy']).toBe('same-origin');
  });

  it('answers a deep link a browser navigates to with the page', async () => {
    for (const url of [
      '/runs/5b0c6a1e-1111-4a4a-8a8a-123456789abc',
      '/agents/new',
      '/settings/members?x=1',
    ]) {
      const response = await page(url);
      expect(response.statusCode, url).toBe(200);
      expect(response.body).toBe(PAGE);
    }
  });

  it('keeps problem+json 404s for API clients and for the API, docs and asset paths', async () => {
    const plain = await t.app.inject({ method: 'GET', url: '/runs/abc' });
    expect(plain.statusCode).toBe(404);
    expect(plain.json().code).toBe('route_not_found');
    for (const url of ['/api/nothing-here', '/assets/missing-123.js', '/docs/nothing', '/metrics/x']) {
      const response = await page(url);
      expect(response.statusCode, url).toBe(404);
      expect(response.headers['content-type']).toContain('application/problem+json');
    }
    const post = await t.app.inject({ method: 'POST', url: '/runs/abc', headers: { accept: 'text/html' } });
    expect(post.statusCode).toBe(404);
  });

  it('serves hashed assets immutable for a year, precompressed when the browser accepts it', async () => {
    const response = await t.app.inject({
      method: 'GET',
      url: '/assets/index-abc123.js',
      headers: { 'accept-encoding': 'br, gzip' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(response.headers['content-encoding']).toBe('br');
    expect(zlib.brotliDecompressSync(response.rawPayload).toString()).toBe(SCRIPT);
    const identity = await t.app.inject({ method: 'GET', url: '/assets/index-abc123.js' });
    expect(identity.body).toBe(SCRIPT);
    expect(identity.headers['x-content-type-options']).toBe('nosniff');
  });

  it('does not answer pages that escape the assets folder', async () => {
    for (const url of [
      '/assets/../index.html',
      '/assets/%2e%2e/index.html',
      '/assets/..%2f..%2fpackage.json',
    ]) {
      const response = await t.app.inject({ method: 'GET', url });
      expect([403, 404], url).toContain(response.statusCode);
      expect(response.body).not.toContain('"name": "agent-platform"');
    }
  });
});

describe('signing in', () => {
  it('publishes how to sign in, publicly', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/auth/settings' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      mode: 'development',
      issuer: t.config.auth.issuer,
      audience: t.config.auth.audience,
      console_client_id: null,
    });
  });

  it('hands a development token on loopback, which the API accepts', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/auth/dev-session', payload: {} });
    expect(response.statusCode).toBe(201);
    expect(response.headers['cache-control']).toBe('no-store');
    const session = response.json();
    expect(session).toMatchObject({ token_type: 'Bearer', expires_in: 8 * 3600, user_id: 'dev-user' });
    const workspaces = await t.app.inject({
      method: 'GET',
      url: '/api/workspaces',
      headers: { authorization: `Bearer ${session.access_token}` },
    });
    expect(workspaces.statusCode).toBe(200);
    expect(workspaces.json().items.map((item: { id: string }) => item.id)).toContain(t.owner.workspaceId);

    const other = await t.app.inject({
      method: 'POST',
      url: '/api/auth/dev-session',
      payload: { user_id: 'alice' },
    });
    expect(other.json().user_id).toBe('alice');
  });

  it('refuses a development token to another machine, and a bad user id by name', async () => {
    const remote = await t.app.inject({
      method: 'POST',
      url: '/api/auth/dev-session',
      payload: {},
      remoteAddress: '192.0.2.10',
    });
    expect(remote.statusCode).toBe(403);
    expect(remote.json().code).toBe('dev_session_local_only');
    expect(remote.body).not.toContain('eyJ');

    const bad = await t.app.inject({
      method: 'POST',
      url: '/api/auth/dev-session',
      payload: { user_id: 'a b' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].field).toBe('body.user_id');
  });
});

describe('in production', () => {
  let production: TestApp;
  beforeAll(async () => {
    production = await createTestApp({
      console: loadConsole({ dir, connectOrigins: ['https://id.example.com'] }),
      env: {
        OIDC_ISSUER: 'https://id.example.com',
        OIDC_AUDIENCE: 'agent-platform',
        OIDC_JWKS_URL: 'https://id.example.com/jwks',
        OIDC_CONSOLE_CLIENT_ID: 'console',
      },
    });
  });
  afterAll(() => production?.close());

  it('has no development sign-in, and names the console’s OIDC client', async () => {
    const session = await production.app.inject({
      method: 'POST',
      url: '/api/auth/dev-session',
      payload: {},
    });
    expect(session.statusCode).toBe(404);
    const settings = await production.app.inject({ method: 'GET', url: '/api/auth/settings' });
    expect(settings.json()).toMatchObject({
      mode: 'oidc',
      issuer: 'https://id.example.com',
      console_client_id: 'console',
    });
    const response = await production.app.inject({
      method: 'GET',
      url: '/',
      headers: { accept: 'text/html' },
    });
    expect(String(response.headers['content-security-policy'])).toContain(
      "connect-src 'self' https://id.example.com",
    );
  });
});
