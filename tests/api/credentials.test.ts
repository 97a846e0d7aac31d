import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import {
  buildCredential,
  buildCredentialType,
  buildMember,
  CREDENTIAL_SECRET as CANARY,
  postgresData,
} from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let alice: Actor;
let mallory: Actor;
let types: Record<string, number>;

beforeAll(async () => {
  // A self-hosted install whose operator lets workspaces reach private networks: connection
  // tests below reach the machine's own PostgreSQL, Redis and HTTP servers on loopback, which
  // each workspace still refuses by default; alice's admin opts out.
  t = await createTestApp({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' } });
  alice = await t.newWorkspace('alice');
  mallory = await t.newWorkspace('mallory');
  const optOut = await t.call(alice, 'PUT', '/api/credentials/settings', { refuse_private_networks: false });
  if (optOut.statusCode !== 200) throw new Error(`settings: ${optOut.statusCode} ${optOut.body}`);
  const list = await t.call(alice, 'GET', '/api/credentials/types');
  types = Object.fromEntries(
    list.json().items.map((type: { name: string; id: number }) => [type.name, type.id]),
  );
});
afterAll(() => t.close());

const auditOf = async (actor: Actor, id: number, query = '') =>
  (await t.call(actor, 'GET', `/api/credentials/${id}/audit-logs${query}`)).json().items as {
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
    const ai = (await t.call(alice, 'GET', '/api/credentials/types?category=ai')).json().items;
    expect(ai.map((type: { name: string }) => type.name).sort()).toEqual([
      'anthropic_credentials',
      'openai_credentials',
    ]);
    const pg = (await t.call(alice, 'GET', `/api/credentials/types/${types.postgres_credentials}`)).json();
    expect(pg).toMatchObject({ is_system: true, category: 'database', test_endpoint: { kind: 'postgres' } });
    expect(pg.schema_definition.find((f: { name: string }) => f.name === 'password')).toMatchObject({
      type: 'password',
      required: true,
    });
    expect((await t.call(alice, 'GET', '/api/credentials/types/99999')).statusCode).toBe(404);
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
    const created = await t.call(alice, 'POST', '/api/credentials/types', body);
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ is_system: false, is_active: true });
    expect((await t.call(mallory, 'GET', `/api/credentials/types/${created.json().id}`)).statusCode).toBe(
      404,
    );
    expect((await t.call(alice, 'POST', '/api/credentials/types', body)).statusCode).toBe(409);
    expect(
      (await t.call(alice, 'POST', '/api/credentials/types', { ...body, name: 'postgres_credentials' }))
        .statusCode,
    ).toBe(409);
  });

  it('refuses bad type definitions naming the field', async () => {
    const bad = await t.call(alice, 'POST', '/api/credentials/types', {
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
    const badType = await t.call(alice, 'POST', '/api/credentials/types', {
      name: 'x_credentials',
      display_name: 'X',
      category: 'api',
      schema_definition: [{ name: 'a', label: 'A', type: 'secret' }],
    });
    expect(badType.json().errors[0].field).toBe('body.schema_definition.0.type');
  });

  it('lets a workspace store credentials of its own type, and no other workspace use it', async () => {
    const type = await buildCredentialType(t, alice);
    const credential = await buildCredential(t, alice, {
      credential_type: type.name,
      data: { token: CANARY },
    });
    expect(credential).toMatchObject({ credential_type: type.name, data: { token: '********' } });
    const borrowed = await t.call(mallory, 'POST', '/api/credentials', {
      name: 'borrowed',
      credential_type_id: type.id,
      data: { token: 'x' },
    });
    expect(borrowed.statusCode).toBe(400);
    expect(borrowed.json().errors).toEqual([
      { field: 'body.credential_type_id', message: 'does not name an active credential type' },
    ]);
  });

  it('checks test-endpoint placeholders with the pattern the connection test fills them with', async () => {
    // A dotted placeholder is no field name: refused at creation, never first at test time.
    const dotted = await t.call(alice, 'POST', '/api/credentials/types', {
      name: 'dotted_credentials',
      display_name: 'Dotted',
      category: 'api',
      schema_definition: [{ name: 'api', label: 'API key', type: 'password', required: true }],
      test_endpoint: { kind: 'http', url: 'https://x.test/me', headers: { 'X-Key': '{{api.key}}' } },
    });
    expect(dotted.statusCode).toBe(400);
    expect(dotted.json().errors).toEqual([
      { field: 'body.test_endpoint', message: 'uses {{api.key}}, which is not a field of this type' },
    ]);
  });
});

describe('create (rule C1)', () => {
  it('encrypts the data, masks secrets and audits created', async () => {
    const response = await t.call(alice, 'POST', '/api/credentials', {
      name: 'warehouse',
      credential_type_id: types.postgres_credentials,
      data: postgresData(),
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
    const bad = await t.call(alice, 'POST', '/api/credentials', {
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
    const hidden = await t.call(alice, 'POST', '/api/credentials', {
      name: 'basic',
      credential_type_id: types.basic_auth_credentials,
      data: { username: 'u', password: 'p', basic_token: 'forged' },
    });
    expect(hidden.json().errors).toEqual([
      { field: 'body.data.basic_token', message: 'is filled in by the service and cannot be set' },
    ]);
    const unknown = await t.call(alice, 'POST', '/api/credentials', {
      name: 'x',
      credential_type_id: 99999,
      data: {},
    });
    expect(unknown.json().errors).toEqual([
      { field: 'body.credential_type_id', message: 'does not name an active credential type' },
    ]);
    const long = await t.call(alice, 'POST', '/api/credentials', {
      name: 'n'.repeat(256),
      credential_type_id: types.postgres_credentials,
      data: postgresData(),
      environment: 'e'.repeat(51),
    });
    expect(long.json().errors.map((e: { field: string }) => e.field)).toEqual([
      'body.name',
      'body.environment',
    ]);
  });

  it('refuses a duplicate active name in one environment, with exactly one winner under concurrency', async () => {
    const body = { name: 'dup', credential_type_id: types.postgres_credentials, data: postgresData() };
    const results = await Promise.all(
      Array.from({ length: 5 }, () => t.call(alice, 'POST', '/api/credentials', body)),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409, 409, 409]);
    expect(results.find((r) => r.statusCode === 409)?.json().code).toBe('duplicate_credential');
    expect(
      (await t.call(alice, 'POST', '/api/credentials', { ...body, environment: 'dev' })).statusCode,
    ).toBe(201);
    expect((await t.call(mallory, 'POST', '/api/credentials', body)).statusCode).toBe(201);
  });
});

describe('listing and details', () => {
  it('filters and never returns secrets or ciphertext', async () => {
    const owner = await t.newWorkspace();
    await buildCredential(t, owner, { name: 'a', tags: ['x'] });
    await buildCredential(t, owner, { name: 'b', environment: 'dev', description: 'Reporting DB' });
    await buildCredential(t, owner, {
      name: 'c',
      credential_type_id: types.redis_credentials,
      data: { host: '127.0.0.1', password: CANARY },
      expires_at: '2001-01-01T00:00:00Z',
    });
    const all = await t.call(owner, 'GET', '/api/credentials');
    expect(all.json()).toMatchObject({ total: 3, limit: 50, offset: 0 });
    expect(all.body).not.toContain(CANARY);
    expect(all.body).not.toContain('encrypted_data');
    const count = async (query: string) =>
      (await t.call(owner, 'GET', `/api/credentials?${query}`)).json().total;
    expect(await count(`credential_type_id=${types.redis_credentials}`)).toBe(1);
    expect(await count('environment=dev')).toBe(1);
    expect(await count('tag=x')).toBe(1);
    expect(await count('q=reporting')).toBe(1);
    expect(await count('expired=true')).toBe(1);
    expect(await count('expired=false')).toBe(2);
    expect(await count('is_active=false')).toBe(0);
    const details = await t.call(owner, 'GET', `/api/credentials/${all.json().items[0].id}`);
    expect(details.json().data).toMatchObject({ host: '127.0.0.1', password: '********' });
    expect(details.json().is_expired).toBe(true);
  });
});

describe('decrypted access (rule C2) over HTTP', () => {
  it('answers 500 encryption_key_error without internals when the stored data cannot be opened', async () => {
    // The service test covers every way a blob fails; here, what a client sees of one.
    const source = await buildCredential(t, alice);
    const target = await buildCredential(t, alice);
    await t.rows(sql`update credentials set encrypted_data = (select encrypted_data from credentials
      where id = ${source.id}) where id = ${target.id}`);
    const problem = await t.call(alice, 'POST', `/api/credentials/${target.id}/test`);
    expect(problem.statusCode).toBe(500);
    expect(problem.headers['content-type']).toContain('application/problem+json');
    expect(problem.json()).toMatchObject({ code: 'encryption_key_error' });
    expect(problem.body).not.toContain('authentication');
    expect((await auditOf(alice, target.id))[0]?.action).toBe('access_failed');
  });
});

describe('update (rule C3)', () => {
  it('merges data, re-encrypts, and audits old and new values with data field names only', async () => {
    const credential = await buildCredential(t, alice, { description: 'old', tags: ['a'] });
    const newSecret = `${CANARY}-rotated`;
    const response = await t.call(alice, 'PUT', `/api/credentials/${credential.id}`, {
      description: 'new',
      tags: ['a', 'b'],
      data: { password: newSecret, port: 5433 },
    });
    expect(response.statusCode).toBe(200);
    expect(new Date(response.json().updated_at).getTime()).toBeGreaterThanOrEqual(
      new Date(response.json().created_at).getTime(),
    );
    const data = await t.services.credentials.access({
      workspaceId: alice.workspaceId,
      id: credential.id,
      serviceName: 's',
    });
    expect(data).toMatchObject({ host: '127.0.0.1', port: 5433, password: newSecret });
    const updated = (await auditOf(alice, credential.id, '?action=updated'))[0];
    expect(updated?.metadata).toEqual({
      changes: { description: { old: 'old', new: 'new' }, tags: { old: ['a'], new: ['a', 'b'] } },
      data_fields_changed: ['password', 'port'],
    });
    const trail = JSON.stringify(await auditOf(alice, credential.id));
    expect(trail).not.toContain(CANARY);
  });

  it('re-checks the duplicate rule when reactivating or renaming', async () => {
    const first = await buildCredential(t, alice, { name: 'unique-name' });
    await t.call(alice, 'PUT', `/api/credentials/${first.id}`, { is_active: false });
    const second = await buildCredential(t, alice, { name: 'unique-name' });
    const reactivate = await t.call(alice, 'PUT', `/api/credentials/${first.id}`, { is_active: true });
    expect(reactivate.statusCode).toBe(409);
    expect(reactivate.json()).toMatchObject({
      code: 'duplicate_credential',
      detail: 'an active credential named "unique-name" already exists in environment production',
    });
    const other = await buildCredential(t, alice);
    expect(
      (await t.call(alice, 'PUT', `/api/credentials/${other.id}`, { name: 'unique-name' })).statusCode,
    ).toBe(409);
    expect(
      (await t.call(alice, 'PUT', `/api/credentials/${second.id}`, { data: { port: 'x' } })).json().errors,
    ).toEqual([{ field: 'body.data.port', message: 'must be a number' }]);
  });
});

describe('delete (rule D)', () => {
  it('audits deleted, archives the trail and removes the row with its records', async () => {
    const credential = await buildCredential(t, alice, { name: 'to-delete' });
    expect((await t.call(alice, 'DELETE', `/api/credentials/${credential.id}`)).statusCode).toBe(204);
    expect((await t.call(alice, 'GET', `/api/credentials/${credential.id}`)).statusCode).toBe(404);
    const [left] = await t.rows<{ n: number }>(
      sql`select count(*)::int as n from credential_audit_logs where credential_id = ${credential.id}`,
    );
    expect(left?.n).toBe(0);
    const archive = (
      await t.call(alice, 'GET', `/api/credentials/audit-archive?credential_id=${credential.id}`)
    ).json();
    expect(archive.items.map((r: { action: string }) => r.action)).toEqual(['deleted', 'created']);
    expect(archive.items[0]).toMatchObject({
      credential_name: 'to-delete',
      metadata: { credential_name: 'to-delete' },
    });
  });

  it('overwrites the ciphertext with an encrypted marker before the row goes', async () => {
    const credential = await buildCredential(t, alice);
    const [before] = await t.rows<{ encrypted_data: string }>(
      sql`select encrypted_data from credentials where id = ${credential.id}`,
    );
    await t.rows(sql.raw('create table if not exists overwritten (id int, encrypted_data text)'));
    await t.rows(
      sql.raw(`create or replace function capture_overwrite() returns trigger language plpgsql as $$
        begin insert into overwritten values (new.id, new.encrypted_data); return new; end $$`),
    );
    await t.rows(
      sql.raw(`create trigger capture_overwrite after update of encrypted_data on credentials
        for each row when (new.id = ${credential.id}) execute function capture_overwrite()`),
    );
    try {
      expect((await t.call(alice, 'DELETE', `/api/credentials/${credential.id}`)).statusCode).toBe(204);
      const captured = await t.rows<{ encrypted_data: string }>(
        sql`select encrypted_data from overwritten where id = ${credential.id}`,
      );
      expect(captured).toHaveLength(1);
      expect(captured[0]?.encrypted_data).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      expect(captured[0]?.encrypted_data).not.toBe(before?.encrypted_data);
    } finally {
      await t.rows(sql.raw('drop trigger capture_overwrite on credentials'));
      await t.rows(sql.raw('drop table overwritten'));
    }
  });

  it('skips the archive when the workspace turns it off, and keeps the archive for admins', async () => {
    const owner = await t.newWorkspace();
    const settings = await t.call(owner, 'PUT', '/api/credentials/settings', {
      archive_audit_on_delete: false,
    });
    expect(settings.statusCode).toBe(200);
    expect(settings.json()).toEqual({
      environment_lookup: false,
      archive_audit_on_delete: false,
      refuse_private_networks: true,
    });
    const credential = await buildCredential(t, owner);
    await t.call(owner, 'DELETE', `/api/credentials/${credential.id}`);
    expect((await t.call(owner, 'GET', '/api/credentials/audit-archive')).json().total).toBe(0);
    const member = await buildMember(t, owner, { role: 'member' });
    expect((await t.call(member, 'GET', '/api/credentials/audit-archive')).statusCode).toBe(403);
  });
});

describe('connection test (rule T)', () => {
  const testOf = async (actor: Actor, id: number) => {
    const response = await t.call(actor, 'POST', `/api/credentials/${id}/test`);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.body).not.toContain(CANARY);
    return response.json() as { status: string; message: string };
  };

  it('connects to the real PostgreSQL and stores the result', async () => {
    const credential = await buildCredential(t, alice);
    const result = await testOf(alice, credential.id);
    expect(result.status).toBe('passed');
    const details = (await t.call(alice, 'GET', `/api/credentials/${credential.id}`)).json();
    expect(details).toMatchObject({ test_status: 'passed', test_message: result.message });
    expect(details.last_tested).toBeTruthy();
    const [tested, accessed] = await auditOf(alice, credential.id);
    expect(tested).toMatchObject({
      action: 'tested',
      metadata: { status: 'passed', message: result.message },
    });
    expect(accessed).toMatchObject({ action: 'accessed', metadata: { service_name: 'connection-test' } });
  });

  it('reports a closed port and an unknown user without the secret', async () => {
    const closed = await buildCredential(t, alice, { data: postgresData({ port: 5499 }) });
    const result = await testOf(alice, closed.id);
    expect(result).toMatchObject({ status: 'failed' });
    expect(result.message).toContain('5499');
    const wrongUser = await buildCredential(t, alice, { data: postgresData({ username: 'no_such_role' }) });
    const failed = await testOf(alice, wrongUser.id);
    expect(failed.status).toBe('failed');
    expect(failed.message).toContain('no_such_role');
  });

  it('pings the real Redis', async () => {
    const credential = await buildCredential(t, alice, {
      credential_type_id: types.redis_credentials,
      data: { host: '127.0.0.1', port: 6379 },
    });
    expect((await testOf(alice, credential.id)).status).toBe('passed');
  });

  it('GETs an HTTP endpoint with the token filled in, and reports a refusal', async () => {
    const server = http.createServer((request, response) => {
      response.statusCode = request.headers.authorization === `Bearer ${CANARY}` ? 200 : 401;
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/me`;
    try {
      const good = await buildCredential(t, alice, {
        credential_type_id: types.bearer_token_credentials,
        data: { token: CANARY, test_url: url },
      });
      expect((await testOf(alice, good.id)).status).toBe('passed');
      const bad = await buildCredential(t, alice, {
        credential_type_id: types.bearer_token_credentials,
        data: { token: 'wrong', test_url: url },
      });
      const result = await testOf(alice, bad.id);
      expect(result.status).toBe('failed');
      expect(result.message).toContain('401');
    } finally {
      server.close();
    }
  });

  it('refuses cloud metadata addresses and passes OAuth tokens that are present', async () => {
    const metadata = await buildCredential(t, alice, {
      credential_type_id: types.api_key_credentials,
      data: { api_key: CANARY, test_url: 'http://169.254.169.254/latest/meta-data/' },
    });
    const refused = await testOf(alice, metadata.id);
    expect(refused.status).toBe('failed');
    expect(refused.message).toContain('169.254.169.254');
    const oauth = await buildCredential(t, alice, {
      credential_type_id: types.oauth2_credentials,
      data: { client_id: 'c', access_token: CANARY },
    });
    expect((await testOf(alice, oauth.id)).status).toBe('passed');
    const noToken = await buildCredential(t, alice, {
      credential_type_id: types.oauth2_credentials,
      data: { client_id: 'c' },
    });
    expect((await testOf(alice, noToken.id)).status).toBe('failed');
  });

  it('refuses private networks by default', async () => {
    const owner = await t.newWorkspace();
    expect((await t.call(owner, 'GET', '/api/credentials/settings')).json()).toMatchObject({
      refuse_private_networks: true,
    });
    const credential = await buildCredential(t, owner);
    const result = await testOf(owner, credential.id);
    expect(result.status).toBe('failed');
    expect(result.message).toContain('127.0.0.1');
  });

  it('goes through decrypted access: an inactive credential is refused and audited', async () => {
    const credential = await buildCredential(t, alice);
    await t.call(alice, 'PUT', `/api/credentials/${credential.id}`, { is_active: false });
    const response = await t.call(alice, 'POST', `/api/credentials/${credential.id}/test`);
    expect(response.statusCode).toBe(403);
    expect(response.json().code).toBe('credential_inactive');
    expect((await auditOf(alice, credential.id))[0]?.action).toBe('access_denied');
  });
});

describe('audit log', () => {
  it('pages by cursor: after=next_cursor gives the older records, with a filter, to the end', async () => {
    const credential = await buildCredential(t, alice);
    for (let i = 0; i < 4; i++) {
      await t.services.credentials.access({
        workspaceId: alice.workspaceId,
        id: credential.id,
        serviceName: `s${i}`,
      });
    }
    const all = (await t.call(alice, 'GET', `/api/credentials/${credential.id}/audit-logs`)).json();
    expect(all.next_cursor).toBeNull();
    const ids: number[] = [];
    let url = `/api/credentials/${credential.id}/audit-logs?action=accessed&limit=3`;
    for (;;) {
      const page = (await t.call(alice, 'GET', url)).json();
      ids.push(...page.items.map((r: { id: number }) => r.id));
      if (page.next_cursor === null) break;
      expect(page.next_cursor).toBe(page.items.at(-1).id);
      url = `/api/credentials/${credential.id}/audit-logs?action=accessed&limit=3&after=${page.next_cursor}`;
    }
    const accessed = all.items.filter((r: { action: string }) => r.action === 'accessed');
    expect(ids).toEqual(accessed.map((r: { id: number }) => r.id));
    expect(ids).toHaveLength(4);
  });

  it('pages newest first, filters by action and time, and verifies the chain', async () => {
    const credential = await buildCredential(t, alice);
    for (let i = 0; i < 3; i++) {
      await t.services.credentials.access({
        workspaceId: alice.workspaceId,
        id: credential.id,
        serviceName: `s${i}`,
      });
    }
    await t.call(alice, 'PUT', `/api/credentials/${credential.id}`, { description: 'x' });
    const page = (await t.call(alice, 'GET', `/api/credentials/${credential.id}/audit-logs?limit=2`)).json();
    expect(page).toMatchObject({ total: 5, limit: 2, offset: 0 });
    expect(page.items.map((r: { action: string }) => r.action)).toEqual(['updated', 'accessed']);
    for (const record of page.items) {
      expect(Object.keys(record).sort()).toEqual(
        [
          'action',
          'created_at',
          'credential_id',
          'hash',
          'id',
          'ip_address',
          'metadata',
          'prev_hash',
          'user_id',
        ].sort(),
      );
    }
    expect((await auditOf(alice, credential.id, '?action=accessed')).length).toBe(3);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await auditOf(alice, credential.id, `?from=${encodeURIComponent(future)}`)).length).toBe(0);
    expect((await auditOf(alice, credential.id, `?to=${encodeURIComponent(future)}`)).length).toBe(5);
    const verify = await t.call(alice, 'GET', `/api/credentials/${credential.id}/audit-logs/verify`);
    expect(verify.json()).toEqual({ intact: true, records: 5, first_broken: null });
  });

  it('reports the first tampered record', async () => {
    const credential = await buildCredential(t, alice);
    await t.services.credentials.access({
      workspaceId: alice.workspaceId,
      id: credential.id,
      serviceName: 'honest',
    });
    await t.services.credentials.access({
      workspaceId: alice.workspaceId,
      id: credential.id,
      serviceName: 'honest',
    });
    const records = await auditOf(alice, credential.id);
    const target = records[1] as { id: number };
    await t.database.db.execute(
      sql`update credential_audit_logs set metadata = jsonb_set(metadata, '{service_name}', '"forged"') where id = ${target.id}`,
    );
    const verify = (await t.call(alice, 'GET', `/api/credentials/${credential.id}/audit-logs/verify`)).json();
    expect(verify).toMatchObject({
      intact: false,
      first_broken: { id: target.id, reason: 'content does not match its hash' },
    });
    await t.database.db.execute(sql`delete from credential_audit_logs where id = ${target.id}`);
    const gap = (await t.call(alice, 'GET', `/api/credentials/${credential.id}/audit-logs/verify`)).json();
    expect(gap).toMatchObject({
      intact: false,
      first_broken: { reason: 'prev_hash does not match the record before it' },
    });
  });
});

describe('workspace isolation', () => {
  it('answers 404 for another workspace’s credential everywhere', async () => {
    const credential = await buildCredential(t, alice, { name: 'alice-only' });
    for (const [method, url, payload] of [
      ['GET', `/api/credentials/${credential.id}`],
      ['PUT', `/api/credentials/${credential.id}`, { description: 'pwned' }],
      ['DELETE', `/api/credentials/${credential.id}`],
      ['POST', `/api/credentials/${credential.id}/test`],
      ['GET', `/api/credentials/${credential.id}/audit-logs`],
      ['GET', `/api/credentials/${credential.id}/audit-logs/verify`],
    ] as const) {
      const response = await t.call(mallory, method, url, payload);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().code).toBe('credential_not_found');
    }
    expect((await t.call(mallory, 'GET', '/api/credentials?q=alice-only')).json().total).toBe(0);
    expect((await t.call(alice, 'GET', `/api/credentials/${credential.id}`)).statusCode).toBe(200);
  });

  it('requires authentication on every vault route', async () => {
    for (const url of ['/api/credentials', '/api/credentials/types', '/api/credentials/1/audit-logs']) {
      expect((await t.call(undefined, 'GET', url)).statusCode).toBe(401);
    }
  });
});

describe('the canary secret', () => {
  it('is stored only as ciphertext: not in any text column, plain, base64 or hex', async () => {
    await buildCredential(t, alice, { name: 'canary-holder' });
    const forms = [CANARY, Buffer.from(CANARY).toString('base64'), Buffer.from(CANARY).toString('hex')];
    const columns = await t.rows<{ table_name: string; column_name: string }>(sql`
      select table_name, column_name from information_schema.columns
      where table_schema = 'public' and data_type in ('text', 'character varying', 'jsonb', 'json', 'ARRAY')`);
    expect(columns.length).toBeGreaterThan(20);
    for (const { table_name, column_name } of columns) {
      for (const form of forms) {
        const [found] = await t.rows<{ n: number }>(
          sql`select count(*)::int as n from ${sql.identifier(table_name)} where ${sql.identifier(column_name)}::text like ${`%${form}%`}`,
        );
        expect(found?.n, `${table_name}.${column_name} holds the canary`).toBe(0);
      }
    }
    expect(t.rawLogs()).not.toContain(CANARY);
  });
});

describe('master keys', () => {
  it('reports workspace keys per key id to platform admins only', async () => {
    const admin = t.owner;
    const status = await t.call(admin, 'GET', '/api/credentials/encryption-keys');
    expect(status.statusCode).toBe(200);
    const current = status.json().keys.find((k: { current: boolean }) => k.current);
    expect(current).toMatchObject({ configured: true });
    expect(current.workspace_keys).toBeGreaterThanOrEqual(2);
    expect((await t.call(alice, 'GET', '/api/credentials/encryption-keys')).statusCode).toBe(403);
  });
});
