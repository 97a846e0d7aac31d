import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildCredential, buildMember, postgresData } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

const CANARY = 'canary-Stored-Key-31c7';

/** A loopback HTTP server that records every X-API-Key it receives. */
async function listener() {
  const received: string[] = [];
  const server = http.createServer((request, response) => {
    received.push(String(request.headers['x-api-key'] ?? ''));
    response.writeHead(200).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/probe`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let t: TestApp;
let owner: Actor;
let member: Actor;
let admin: Actor;
let honest: Awaited<ReturnType<typeof listener>>;
let attacker: Awaited<ReturnType<typeof listener>>;

beforeAll(async () => {
  // Loopback listeners stand in for the real API and the attacker's server.
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  owner = await t.newWorkspace('vault-owner');
  member = await buildMember(t, owner, { user_id: 'vault-member', role: 'member' });
  admin = await buildMember(t, owner, { user_id: 'vault-admin', role: 'admin' });
  honest = await listener();
  attacker = await listener();
});
afterAll(async () => {
  await honest.close();
  await attacker.close();
  await t.close();
});

/** An API-key credential whose connection test sends the canary to the honest listener. */
async function apiKeyCredential() {
  const credential = await buildCredential(t, owner, {
    credential_type: 'api_key_credentials',
    data: { api_key: CANARY, test_url: honest.url },
  });
  return credential.id;
}

describe('a secret cannot be sent elsewhere by someone who cannot read it', () => {
  it('a member cannot read the key', async () => {
    const id = await apiKeyCredential();
    const details = await t.call(member, 'GET', `/api/credentials/${id}`);
    expect(details.json().data).toMatchObject({ api_key: '********', test_url: honest.url });
  });

  it('refuses a member who moves test_url without the key; the test still goes to the old address', async () => {
    const id = await apiKeyCredential();
    const refused = await t.call(member, 'PUT', `/api/credentials/${id}`, {
      data: { test_url: attacker.url },
    });
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    const problem = refused.json();
    expect(problem.code).toBe('secret_required');
    expect(problem.errors).toEqual([
      {
        field: 'body.data.api_key',
        message: expect.stringContaining('must be supplied again to change test_url'),
      },
    ]);
    expect(problem.detail).toContain('decides where');

    const tested = await t.call(member, 'POST', `/api/credentials/${id}/test`);
    expect(tested.json().status).toBe('passed');
    expect(attacker.received).toEqual([]);
    expect(honest.received).toContain(CANARY);
    const details = await t.call(owner, 'GET', `/api/credentials/${id}`);
    expect(details.json().data.test_url).toBe(honest.url);
  });

  it('lets a member move test_url when they supply the key again: only their key travels', async () => {
    const id = await apiKeyCredential();
    const moved = await t.call(member, 'PUT', `/api/credentials/${id}`, {
      data: { test_url: attacker.url, api_key: 'the-members-own-key' },
    });
    expect(moved.statusCode, moved.body).toBe(200);
    await t.call(member, 'POST', `/api/credentials/${id}/test`);
    expect(attacker.received).toEqual(['the-members-own-key']);
    attacker.received.length = 0;
  });

  it('lets a member change fields that do not decide the destination', async () => {
    const id = await apiKeyCredential();
    const renamed = await t.call(member, 'PUT', `/api/credentials/${id}`, {
      name: `renamed-${id}`,
      tags: ['x'],
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    const sameUrl = await t.call(member, 'PUT', `/api/credentials/${id}`, { data: { test_url: honest.url } });
    expect(sameUrl.statusCode, sameUrl.body).toBe(200);
  });

  it('lets an admin move test_url without the key', async () => {
    const id = await apiKeyCredential();
    const moved = await t.call(admin, 'PUT', `/api/credentials/${id}`, { data: { test_url: attacker.url } });
    expect(moved.statusCode, moved.body).toBe(200);
    await t.call(admin, 'POST', `/api/credentials/${id}/test`);
    expect(attacker.received).toEqual([CANARY]);
    attacker.received.length = 0;
  });

  it('derives the destination from the type: host, port and TLS of a database credential, base_url of an AI one', async () => {
    const pgId = (await buildCredential(t, owner, { data: postgresData({ password: CANARY, ssl: true }) }))
      .id;
    // Turning TLS off sends the password in clear text: a redirect of how it travels.
    for (const data of [{ host: 'evil.example' }, { port: 5433 }, { ssl: false }]) {
      const refused = await t.call(member, 'PUT', `/api/credentials/${pgId}`, { data });
      expect(refused.statusCode, refused.body).toBe(403);
      expect(refused.json().errors[0].field).toBe('body.data.password');
    }
    expect(
      (await t.call(member, 'PUT', `/api/credentials/${pgId}`, { data: { database: 'other' } })).statusCode,
    ).toBe(200);

    const openai = await buildCredential(t, owner, {
      credential_type: 'openai_credentials',
      data: { api_key: CANARY },
    });
    const refused = await t.call(member, 'PUT', `/api/credentials/${openai.id}`, {
      data: { base_url: attacker.url },
    });
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json().detail).toContain('base_url');
  });
});

describe('private networks', () => {
  it('are refused by default; VAULT_ALLOW_LOOPBACK admits loopback only', async () => {
    expect((await t.call(owner, 'GET', '/api/credentials/settings')).json().refuse_private_networks).toBe(
      true,
    );
    const created = await buildCredential(t, owner, {
      credential_type: 'api_key_credentials',
      data: { api_key: CANARY, test_url: 'http://10.0.0.1/probe' },
    });
    const tested = await t.call(owner, 'POST', `/api/credentials/${created.id}/test`);
    expect(tested.json()).toMatchObject({ status: 'failed' });
    expect(tested.json().message).toContain('10.0.0.0/8');
  });
});
