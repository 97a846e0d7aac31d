import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCredentialsRepository } from '../../src/modules/credentials/credentials.repository.ts';
import { createCredentialsService } from '../../src/modules/credentials/credentials.service.ts';
import { type Actor, createTestApp, type TestApp } from '../helpers/test-app.ts';

const CANARY = 'canary-Secret-7f3a9c';

let t: TestApp;
let alice: Actor;
let mallory: Actor;
let types: Record<string, number>;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
  mallory = await t.newWorkspace('mallory');
  const list = await t.app.inject({ method: 'GET', url: '/api/credentials/types', headers: alice.headers });
  types = Object.fromEntries(
    list.json().items.map((type: { name: string; id: number }) => [type.name, type.id]),
  );
});
afterAll(() => t.close());

const call = (actor: Actor, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: actor.headers, ...(payload ? { payload } : {}) });

let counter = 0;
const pgData = (overrides: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: 5432,
  database: 'postgres',
  username: 'postgres',
  password: CANARY,
  ...overrides,
});

async function createCredential(actor: Actor, body: Record<string, unknown> = {}) {
  counter += 1;
  const response = await call(actor, 'POST', '/api/credentials', {
    name: `cred-${counter}`,
    credential_type_id: types.postgres_credentials,
    data: pgData(),
    ...body,
  });
  if (response.statusCode !== 201)
    throw new Error(`createCredential: ${response.statusCode} ${response.body}`);
  return response.json() as { id: number; name: string; [key: string]: unknown };
}

const auditOf = async (actor: Actor, id: number, query = '') =>
  (await call(actor, 'GET', `/api/credentials/${id}/audit-logs${query}`)).json().items as {
    id: number;
    action: string;
    metadata: Record<string, unknown>;
    user_id: string | null;
    ip_address: string | null;
  }[];

describe('credential types', () => {
  it('lists the system types, filters by category and shows one', async () => {
    for (const name of [
      'postgres_credentials',
      'redis_credentials',
      'openai_credentials',
      'anthropic_credentials',
      'api_key_credentials',
      'bearer_token_credentials',
      'basic_auth_credentials',
      'oauth2_credentials',
      'aws_credentials',
      'ssh_credentials',
    ]) {
      expect(types[name], name).toBeGreaterThan(0);
    }
    const ai = (await call(alice, 'GET', '/api/credentials/types?category=ai')).json().items;
    expect(ai.map((type: { name: string }) => type.name).sort()).toEqual([
      'anthropic_credentials',
      'openai_credentials',
    ]);
    const pg = (await call(alice, 'GET', `/api/credentials/types/${types.postgres_credentials}`)).json();
    expect(pg).toMatchObject({ is_system: true, category: 'database', test_endpoint: { kind: 'postgres' } });
    expect(pg.schema_definition.find((f: { name: string }) => f.name === 'password')).toMatchObject({
      type: 'password',
      required: true,
    });
    expect((await call(alice, 'GET', '/api/credentials/types/99999')).statusCode).toBe(404);
  });

  it('lets admins create a validated type of their own, visible to their workspace only', async () => {
    const body = {
      name: 'acme_api_credentials',
      display_name: 'Acme',
      category: 'api',
      schema_definition: [
        { name: 'token', label: 'Token', type: 'password', required: true },
        {
          name: 'region',
          label: 'Region',
          type: 'options',
          options: [{ value: 'eu' }, { value: 'us' }],
          default: 'eu',
        },
      ],
      test_endpoint: {
        kind: 'http',
        url: 'https://api.acme.test/{{region}}/me',
        headers: { Authorization: 'Bearer {{token}}' },
      },
    };
    const created = await call(alice, 'POST', '/api/credentials/types', body);
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ is_system: false, is_active: true });
    expect((await call(mallory, 'GET', `/api/credentials/types/${created.json().id}`)).statusCode).toBe(404);
    expect((await call(alice, 'POST', '/api/credentials/types', body)).statusCode).toBe(409);
    expect(
      (await call(alice, 'POST', '/api/credentials/types', { ...body, name: 'postgres_credentials' }))
        .statusCode,
    ).toBe(409);
  });

  it('refuses bad type definitions naming the field', async () => {
    const bad = await call(alice, 'POST', '/api/credentials/types', {
      name: 'broken_credentials',
      display_name: 'Broken',
      category: 'api',
      schema_definition: [
        { name: 'a', label: 'A', type: 'string' },
        { name: 'a', label: 'A', type: 'string' },
        { name: 'o', label: 'O', type: 'options', options: [] },
      ],
      test_endpoint: { kind: 'http', url: 'https://x.test/{{missing}}' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors.map((e: { field: string }) => e.field)).toEqual([
      'body.schema_definition.1.name',
      'body.schema_definition.2.options',
      'body.test_endpoint',
    ]);
    const badType = await call(alice, 'POST', '/api/credentials/types', {
      name: 'x_credentials',
      display_name: 'X',
      category: 'api',
      schema_definition: [{ name: 'a', label: 'A', type: 'secret' }],
    });
    expect(badType.json().errors[0].field).toBe('body.schema_definition.0.type');
  });
});

describe('create (rule C1)', () => {
  it('encrypts the data, masks secrets and audits created', async () => {
    const response = await call(alice, 'POST', '/api/credentials', {
      name: 'warehouse',
      credential_type_id: types.postgres_credentials,
      data: pgData(),
      environment: 'staging',
      description: 'analytics warehouse',
      tags: ['db'],
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({
      name: 'warehouse',
      environment: 'staging',
      is_active: true,
      credential_type: 'postgres_credentials',
      data: { host: '127.0.0.1', port: 5432, password: '********', ssl: false },
    });
    expect(body).not.toHaveProperty('encrypted_data');
    expect(response.body).not.toContain(CANARY);
    const [created] = await auditOf(alice, body.id);
    expect(created).toMatchObject({
      action: 'created',
      user_id: 'alice',
      metadata: { credential_type: 'postgres_credentials', environment: 'staging' },
    });
  });

  it('rejects missing, mistyped, unknown and hidden fields, and unknown types', async () => {
    const bad = await call(alice, 'POST', '/api/credentials', {
      name: 'bad',
      credential_type_id: types.postgres_credentials,
      data: { host: 'h', port: '5432', ssl: 'yes', nope: 1 },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toEqual([
      { field: 'body.data.port', message: 'must be a number' },
      { field: 'body.data.ssl', message: 'must be a boolean' },
      { field: 'body.data.nope', message: 'is not a field of postgres_credentials' },
      { field: 'body.data.database', message: 'is required' },
      { field: 'body.data.username', message: 'is required' },
      { field: 'body.data.password', message: 'is required' },
    ]);
    const hidden = await call(alice, 'POST', '/api/credentials', {
      name: 'basic',
      credential_type_id: types.basic_auth_credentials,
      data: { username: 'u', password: 'p', basic_token: 'forged' },
    });
    expect(hidden.json().errors).toEqual([
      { field: 'body.data.basic_token', message: 'is filled in by the service and cannot be set' },
    ]);
    const unknown = await call(alice, 'POST', '/api/credentials', {
      name: 'x',
      credential_type_id: 99999,
      data: {},
    });
    expect(unknown.json().errors).toEqual([
      { field: 'body.credential_type_id', message: 'does not name an active credential type' },
    ]);
    const long = await call(alice, 'POST', '/api/credentials', {
      name: 'n'.repeat(256),
      credential_type_id: types.postgres_credentials,
      data: pgData(),
      environment: 'e'.repeat(51),
    });
    expect(long.json().errors.map((e: { field: string }) => e.field)).toEqual([
      'body.name',
      'body.environment',
    ]);
  });

  it('refuses a duplicate active name in one environment, with exactly one winner under concurrency', async () => {
    const body = { name: 'dup', credential_type_id: types.postgres_credentials, data: pgData() };
    const results = await Promise.all(
      Array.from({ length: 5 }, () => call(alice, 'POST', '/api/credentials', body)),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409, 409, 409]);
    expect(results.find((r) => r.statusCode === 409)?.json().code).toBe('duplicate_credential');
    expect((await call(alice, 'POST', '/api/credentials', { ...body, environment: 'dev' })).statusCode).toBe(
      201,
    );
    expect((await call(mallory, 'POST', '/api/credentials', body)).statusCode).toBe(201);
  });
});
