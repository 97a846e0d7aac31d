import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIAL_SECRET, postgresData } from '../../../tests/helpers/factories.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import type { Role } from '../../caller.ts';
import { createSettingsService } from '../settings/settings.service.ts';
import { createWorkspacesService } from '../workspaces/workspaces.service.ts';
import type { ConnectionTestRequest } from './connection-tester.ts';
import { type AccessRequest, createCredentialsService } from './credentials.service.ts';
import { createVaultKeys, loadKeyring } from './vault-keys.ts';

/**
 * The vault's decrypted access (rule C2) and its audit chain, on a real database with the
 * services wired as `src/services.ts` wires them: an explicit generated master key, the
 * settings and workspaces services. The connection test is the one fake: it stands for a
 * remote server, and records what it was asked to reach.
 */

let db: TestDb;
let credentials: ReturnType<typeof createCredentialsService>;
let build: (clock?: () => Date) => ReturnType<typeof createCredentialsService>;
let workspaces: ReturnType<typeof createWorkspacesService>;
const probed: ConnectionTestRequest[] = [];

beforeAll(async () => {
  // Concurrent vault work on purpose: the PGlite gate's 300 ms deadline is for HTTP, not this race.
  db = await createTestDb({ env: { DB_QUEUE_TIMEOUT_MS: '30000' } });
  const { keyring, source } = loadKeyring({
    encryptionKey: randomBytes(32).toString('base64'),
    previousKeys: [],
    dataDir: os.tmpdir(),
  });
  if (source !== 'environment') throw new Error(`the vault key came from ${source}, not the test`);
  const keys = createVaultKeys(db.database.db, keyring);
  const settings = createSettingsService(db.database.db);
  workspaces = createWorkspacesService(db.database.db);
  build = (clock) =>
    createCredentialsService({
      db: db.database.db,
      settings,
      keys,
      testConnection: async (request) => {
        probed.push(request);
        return { passed: true, message: 'connected', duration_ms: 1 };
      },
      ...(clock ? { clock } : {}),
    });
  credentials = build();
});
afterAll(() => db.close());

/** A caller as the HTTP layer would hand it to the service. */
interface Owner {
  userId: string;
  workspaceId: string;
  role: Role;
  ipAddress?: string;
}

let seq = 0;
/** A new workspace, owned by `userId`, acting as its owner. */
async function newOwner(userId = `owner-${++seq}`): Promise<Owner> {
  const workspace = await workspaces.createWorkspace(userId, { name: `${userId} workspace` });
  return { userId, workspaceId: workspace.id, role: 'owner' };
}

/** A PostgreSQL credential of `owner`'s workspace holding `CREDENTIAL_SECRET`, created by the service. */
async function newCredential(owner: Owner, overrides: Record<string, unknown> = {}) {
  const types = await credentials.listTypes(owner, {});
  const type = types.find((item) => item.name === 'postgres_credentials');
  if (!type) throw new Error('the system credential types are missing');
  return credentials.create(owner, {
    name: `credential-${++seq}`,
    credential_type_id: type.id,
    data: postgresData(),
    ...overrides,
  });
}

/** The credential's audit records, newest first. */
async function auditOf(owner: Owner, id: number, action?: 'accessed' | 'access_failed') {
  const page = await credentials.auditLogs(owner, id, {
    limit: 200,
    offset: 0,
    ...(action ? { action } : {}),
  });
  return page.items;
}

let alice: Owner;
let mallory: Owner;
beforeAll(async () => {
  alice = await newOwner('alice');
  mallory = await newOwner('mallory');
});

describe('decrypted access (rule C2)', () => {
  it('returns only the requested fields and audits the access first', async () => {
    const credential = await newCredential(alice);
    const data = await credentials.access({
      workspaceId: alice.workspaceId,
      id: credential.id,
      fields: ['password', 'host'],
      serviceName: 'workflow-runner',
      userId: 'alice',
      ipAddress: '10.1.2.3',
    });
    expect(data).toEqual({ password: CREDENTIAL_SECRET, host: '127.0.0.1' });
    const [accessed] = await auditOf(alice, credential.id);
    expect(accessed).toMatchObject({
      action: 'accessed',
      user_id: 'alice',
      ip_address: '10.1.2.3',
      metadata: { service_name: 'workflow-runner', fields_accessed: ['password', 'host'] },
    });
    await expect(
      credentials.access({
        workspaceId: alice.workspaceId,
        id: credential.id,
        fields: ['nope'],
        serviceName: 's',
      }),
    ).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(
      credentials.access({ workspaceId: mallory.workspaceId, id: credential.id, serviceName: 's' }),
    ).rejects.toMatchObject({ code: 'credential_not_found', status: 404 });
  });

  it('refuses inactive credentials and audits access_denied', async () => {
    const credential = await newCredential(alice);
    await credentials.update(alice, credential.id, { is_active: false });
    await expect(
      credentials.access({ workspaceId: alice.workspaceId, id: credential.id, serviceName: 'svc' }),
    ).rejects.toMatchObject({ code: 'credential_inactive', status: 403 });
    const [denied] = await auditOf(alice, credential.id);
    expect(denied).toMatchObject({
      action: 'access_denied',
      metadata: { reason: 'inactive', service_name: 'svc' },
    });
  });

  it('refuses expired credentials from the moment expires_at is in the past', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000);
    const credential = await newCredential(alice, { expires_at: expiresAt.toISOString() });
    let now = new Date(expiresAt.getTime());
    const service = build(() => now);
    const request = { workspaceId: alice.workspaceId, id: credential.id, serviceName: 'svc' };
    await expect(service.access(request)).resolves.toMatchObject({ host: '127.0.0.1' });
    now = new Date(expiresAt.getTime() + 1);
    await expect(service.access(request)).rejects.toMatchObject({ code: 'credential_expired', status: 403 });
    const [denied] = await auditOf(alice, credential.id);
    expect(denied).toMatchObject({ action: 'access_denied', metadata: { reason: 'expired' } });
  });

  it('fails on any tampered byte, and on a blob moved to another row or workspace, auditing access_failed', async () => {
    const credential = await newCredential(alice);
    const [row] = await db.rows<{ encrypted_data: string }>(
      sql`select encrypted_data from credentials where id = ${credential.id}`,
    );
    const original = (row as { encrypted_data: string }).encrypted_data;
    const [version, nonce, sealed] = original.split('.') as [string, string, string];
    const flip = (part: string, index: number) => {
      const bytes = Buffer.from(part, 'base64url');
      bytes[index] = (bytes[index] as number) ^ 0x80;
      return bytes.toString('base64url');
    };
    const sealedLength = Buffer.from(sealed, 'base64url').length;
    const tampered = [
      `${version}.${flip(nonce, 0)}.${sealed}`,
      `${version}.${nonce}.${flip(sealed, 0)}`,
      `${version}.${nonce}.${flip(sealed, sealedLength - 1)}`,
    ];
    for (const blob of tampered) {
      await db.rows(sql`update credentials set encrypted_data = ${blob} where id = ${credential.id}`);
      await expect(
        credentials.access({ workspaceId: alice.workspaceId, id: credential.id, serviceName: 'svc' }),
      ).rejects.toMatchObject({ code: 'encryption_key_error', status: 500 });
    }
    expect(await auditOf(alice, credential.id, 'access_failed')).toHaveLength(3);

    const other = await newCredential(alice);
    const elsewhere = await newCredential(mallory);
    for (const target of [
      { owner: alice, id: other.id },
      { owner: mallory, id: elsewhere.id },
    ]) {
      await db.rows(sql`update credentials set encrypted_data = ${original} where id = ${target.id}`);
      await expect(
        credentials.access({ workspaceId: target.owner.workspaceId, id: target.id, serviceName: 'svc' }),
      ).rejects.toMatchObject({ code: 'encryption_key_error' });
      const [failed] = await auditOf(target.owner, target.id);
      expect(failed?.action).toBe('access_failed');
    }
  });

  it('fails closed: no plaintext when the access record cannot be written', async () => {
    const credential = await newCredential(alice);
    await db.rows(
      sql.raw(`create or replace function refuse_audit() returns trigger language plpgsql as $$
        begin raise exception 'audit store unavailable'; end $$`),
    );
    await db.rows(
      sql.raw(`create trigger refuse_audit before insert on credential_audit_logs
        for each row when (new.credential_id = ${credential.id}) execute function refuse_audit()`),
    );
    const request = { workspaceId: alice.workspaceId, id: credential.id, serviceName: 'svc' };
    try {
      await expect(credentials.access(request)).rejects.toMatchObject({
        cause: { message: 'audit store unavailable' },
      });
    } finally {
      await db.rows(sql.raw('drop trigger refuse_audit on credential_audit_logs'));
    }
    // The refusal came from the audit write alone: without the trigger the same access succeeds.
    await expect(credentials.access(request)).resolves.toMatchObject({ password: CREDENTIAL_SECRET });
  });

  it('looks up by name ignoring the environment unless the workspace turns environment lookup on', async () => {
    const owner = await newOwner();
    await newCredential(owner, {
      name: 'shared',
      environment: 'dev',
      data: postgresData({ host: 'dev-host' }),
    });
    const request: AccessRequest = {
      workspaceId: owner.workspaceId,
      name: 'shared',
      serviceName: 'svc',
      fields: ['host'],
    };
    expect(await credentials.access(request)).toEqual({ host: 'dev-host' });
    await credentials.updateSettings(owner, { environment_lookup: true });
    await expect(credentials.access(request)).rejects.toMatchObject({ code: 'credential_not_found' });
    expect(await credentials.access({ ...request, environment: 'dev' })).toEqual({ host: 'dev-host' });
    // The setting is the workspace's own: another workspace still ignores the environment.
    const other = await newOwner();
    await newCredential(other, {
      name: 'shared',
      environment: 'dev',
      data: postgresData({ host: 'dev-host' }),
    });
    expect(await credentials.access({ ...request, workspaceId: other.workspaceId })).toEqual({
      host: 'dev-host',
    });
  });
});

describe('audit chain', () => {
  it('keeps one unbroken chain under concurrent accesses, updates and tests', async () => {
    const credential = await newCredential(alice);
    const other = await newCredential(alice);
    probed.length = 0;
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      for (const id of [credential.id, other.id]) {
        work.push(credentials.access({ workspaceId: alice.workspaceId, id, serviceName: `s${i}` }));
      }
      if (i % 10 === 0) {
        work.push(credentials.update(alice, credential.id, { description: `d${i}` }));
        work.push(credentials.test(alice, other.id));
      }
    }
    await Promise.all(work);
    expect(probed).toHaveLength(4);
    for (const id of [credential.id, other.id]) {
      expect(await credentials.verifyAudit(alice, id)).toMatchObject({ intact: true, first_broken: null });
      expect(await auditOf(alice, id, 'accessed')).toHaveLength(id === other.id ? 44 : 40);
    }
    const actions = (await auditOf(alice, credential.id)).map((record) => record.action);
    expect(actions.filter((action) => action === 'updated')).toHaveLength(4);
    const tested = (await auditOf(alice, other.id)).filter((record) => record.action === 'tested');
    expect(tested).toHaveLength(4);
  });
});
