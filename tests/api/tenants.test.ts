import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildMember } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Tenant settings through the API: who administers a tenant (a current owner of one of its
 * workspaces, its creator while it has none, a platform operator), isolation (404 and never listed for anyone else), the
 * defaults taking effect (the nightly schedule's time zone, a new workspace's default model),
 * and deletion only when empty or with the tenant's name as confirmation.
 */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** A user with a bearer token only (the tenant routes need no workspace). */
async function user(userId = `user-${randomBytes(4).toString('hex')}`) {
  const token = await t.token(userId);
  return { userId, headers: { authorization: `Bearer ${token}` } };
}

type Tenant = {
  id: string;
  name: string;
  time_zone: string | null;
  default_model: { provider: string; name: string } | null;
  workspaces: { id: string; name: string }[];
};

async function createTenant(who: { headers: Record<string, string> }, body: Record<string, unknown>) {
  const answer = await t.call(undefined, 'POST', '/api/settings/tenants', body, { headers: who.headers });
  expect(answer.statusCode, answer.body).toBe(201);
  return answer.json() as Tenant;
}

const listIds = async (who: { headers: Record<string, string> }) =>
  (
    (
      await t.call(undefined, 'GET', '/api/settings/tenants?limit=200', undefined, { headers: who.headers })
    ).json().items as Tenant[]
  ).map((tenant) => tenant.id);

describe('tenant settings', () => {
  it('creates a tenant with its first workspace, which starts with the tenant’s defaults', async () => {
    const alice = await user();
    const tenant = await createTenant(alice, {
      name: 'Acme',
      workspace_name: 'Acme research',
      time_zone: 'Europe/Paris',
      default_model: { provider: 'openai', name: 'gpt-4o-mini' },
    });
    expect(tenant).toMatchObject({
      name: 'Acme',
      time_zone: 'Europe/Paris',
      default_model: { provider: 'openai', name: 'gpt-4o-mini' },
      workspaces: [{ name: 'Acme research' }],
    });
    const workspaceId = tenant.workspaces[0]?.id as string;
    const inWorkspace: Actor = await t.actor(alice.userId, workspaceId);
    expect((await t.call(inWorkspace, 'GET', '/api/workspaces/current')).json()).toMatchObject({
      role: 'owner',
      tenant: { id: tenant.id, name: 'Acme' },
    });
    // The default model: the new workspace's provider settings start with it.
    expect((await t.call(inWorkspace, 'GET', '/api/settings/providers')).json().default_model).toEqual({
      provider: 'openai',
      name: 'gpt-4o-mini',
    });
    // The time zone: the nightly schedule runs in it, as shown and as the job reads it.
    expect((await t.call(inWorkspace, 'GET', '/api/playbooks/schedule')).json().time_zone).toBe(
      'Europe/Paris',
    );
    const jobView = (await t.services.playbooks.schedules()).find((s) => s.workspace_id === workspaceId);
    expect(jobView?.time_zone).toBe('Europe/Paris');
    // The creation is in the workspace's activity.
    const [event] = (await t.call(inWorkspace, 'GET', '/api/activity?subject_type=settings')).json().items;
    expect(event).toMatchObject({
      kind: 'system.settings_changed',
      subject_id: `tenants.${tenant.id}`,
      actor: alice.userId,
      data: { namespace: 'tenants', tenant_id: tenant.id },
    });
  });

  it('uses the tenant’s time zone until the workspace sets its own, and follows a change of it', async () => {
    const alice = await user();
    const tenant = await createTenant(alice, { name: 'Zoned', workspace_name: 'w' });
    const workspace = await t.actor(alice.userId, tenant.workspaces[0]?.id as string);
    const zoneOf = async () => (await t.call(workspace, 'GET', '/api/playbooks/schedule')).json().time_zone;
    const jobZone = async () =>
      (await t.services.playbooks.schedules()).find((s) => s.workspace_id === workspace.workspaceId)
        ?.time_zone;
    expect(await zoneOf()).toBe('UTC');
    const put = await t.call(
      undefined,
      'PUT',
      `/api/settings/tenants/${tenant.id}`,
      { time_zone: 'Asia/Tokyo' },
      {
        headers: alice.headers,
      },
    );
    expect(put.statusCode, put.body).toBe(200);
    expect(await zoneOf()).toBe('Asia/Tokyo');
    expect(await jobZone()).toBe('Asia/Tokyo');
    await t.call(workspace, 'PUT', '/api/playbooks/schedule', { time_zone: 'America/New_York' });
    expect(await zoneOf()).toBe('America/New_York');
    expect(await jobZone()).toBe('America/New_York');
    await t.call(workspace, 'PUT', '/api/playbooks/schedule', { time_zone: null });
    expect(await zoneOf()).toBe('Asia/Tokyo');
    await t.call(
      undefined,
      'PUT',
      `/api/settings/tenants/${tenant.id}`,
      { time_zone: null },
      { headers: alice.headers },
    );
    expect(await zoneOf()).toBe('UTC');
  });

  it('lists only the tenants the caller administers; platform operators see all', async () => {
    const alice = await user();
    const bob = await user();
    const a = await createTenant(alice, { name: 'Alice tenant', workspace_name: 'a' });
    const empty = await createTenant(alice, { name: 'Alice empty' });
    const b = await createTenant(bob, { name: 'Bob tenant' });
    // An owner of a workspace made by sign-up administers its tenant.
    const signUp = await t.newWorkspace();
    const signUpTenant = (await t.call(signUp, 'GET', '/api/workspaces/current')).json().tenant.id;

    expect(await listIds(alice)).toEqual([a.id, empty.id]);
    expect(await listIds(bob)).toEqual([b.id]);
    expect(await listIds(signUp)).toEqual([signUpTenant]);
    const operator = await listIds(t.owner);
    expect(operator).toEqual(expect.arrayContaining([a.id, empty.id, b.id, signUpTenant]));
    const page = (
      await t.call(undefined, 'GET', '/api/settings/tenants?limit=1&offset=1', undefined, {
        headers: alice.headers,
      })
    ).json();
    expect(page).toMatchObject({ total: 2, limit: 1, offset: 1, items: [{ id: empty.id, workspaces: [] }] });
  });

  it('hides another’s tenant (404) and refuses a member who does not administer it (403)', async () => {
    const alice = await user();
    const tenant = await createTenant(alice, { name: 'Private', workspace_name: 'p' });
    const owner = await t.actor(alice.userId, tenant.workspaces[0]?.id as string);
    const admin = await buildMember(t, owner, { role: 'admin' });
    const stranger = await t.newWorkspace();

    for (const who of [stranger, await user()]) {
      for (const [method, body] of [
        ['PUT', { name: 'Taken' }],
        ['DELETE', undefined],
      ] as const) {
        const answer = await t.call(undefined, method, `/api/settings/tenants/${tenant.id}`, body, {
          headers: { authorization: who.headers.authorization as string },
        });
        expect(answer.statusCode).toBe(404);
        expect(answer.json().code).toBe('tenant_not_found');
      }
      expect(await listIds(who)).not.toContain(tenant.id);
    }
    const refused = await t.call(admin, 'PUT', `/api/settings/tenants/${tenant.id}`, { name: 'Mine now' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('insufficient_role');
    expect(
      (await t.call(admin, 'DELETE', `/api/settings/tenants/${tenant.id}?confirm=Private`)).json().code,
    ).toBe('insufficient_role');
    expect(await listIds(admin)).not.toContain(tenant.id);
    // An unknown id is 404 too, and a malformed one 400 naming it.
    const unknown = await t.call(owner, 'PUT', '/api/settings/tenants/00000000-0000-4000-8000-000000000000', {
      name: 'x',
    });
    expect(unknown.statusCode).toBe(404);
    const malformed = await t.call(owner, 'PUT', '/api/settings/tenants/not-a-uuid', { name: 'x' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().errors[0].field).toBe('params.id');
  });

  it('follows current roles only: a creator removed from every workspace, or no longer an owner, administers nothing', async () => {
    const removed = await user();
    const demoted = await user();
    for (const [creator, fate] of [
      [removed, 'removed'],
      [demoted, 'demoted'],
    ] as const) {
      const tenant = await createTenant(creator, { name: `Shared ${fate}`, workspace_name: 'shared' });
      const creatorIn = await t.actor(creator.userId, tenant.workspaces[0]?.id as string);
      // A second owner takes over, then removes the creator or makes them a plain admin.
      const other = await buildMember(t, creatorIn, { role: 'owner' });
      const change =
        fate === 'removed'
          ? await t.call(other, 'DELETE', `/api/workspaces/members/${creator.userId}`)
          : await t.call(other, 'PUT', `/api/workspaces/members/${creator.userId}`, { role: 'admin' });
      expect(change.statusCode, change.body).toBe(fate === 'removed' ? 204 : 200);

      // Someone who no longer belongs learns nothing (404); a member who is no owner is refused (403).
      const status = fate === 'removed' ? 404 : 403;
      const code = fate === 'removed' ? 'tenant_not_found' : 'insufficient_role';
      for (const [method, url, body] of [
        ['PUT', `/api/settings/tenants/${tenant.id}`, { name: 'Taken over' }],
        ['PUT', `/api/settings/tenants/${tenant.id}`, { time_zone: 'Asia/Tokyo' }],
        [
          'DELETE',
          `/api/settings/tenants/${tenant.id}?confirm=${encodeURIComponent(tenant.name)}`,
          undefined,
        ],
        ['DELETE', `/api/settings/tenants/${tenant.id}`, undefined],
      ] as const) {
        const answer = await t.call(undefined, method, url, body, { headers: creator.headers });
        expect(answer.statusCode, `${fate} ${method} ${url}`).toBe(status);
        expect(answer.json().code).toBe(code);
      }
      expect(await listIds(creator)).not.toContain(tenant.id);
      // The tenant and its workspace are untouched, and its current owner still administers it.
      expect((await t.call(other, 'GET', '/api/workspaces/current')).json().tenant.name).toBe(tenant.name);
      expect(await listIds(other)).toContain(tenant.id);
      const renamed = await t.call(other, 'PUT', `/api/settings/tenants/${tenant.id}`, {
        name: `Kept ${fate}`,
      });
      expect(renamed.statusCode, renamed.body).toBe(200);
    }
  });

  it('renames a tenant and records it in each of its workspaces; operators may change any tenant', async () => {
    const alice = await user();
    const tenant = await createTenant(alice, { name: 'Old name', workspace_name: 'w' });
    const workspace = await t.actor(alice.userId, tenant.workspaces[0]?.id as string);
    const renamed = await t.call(workspace, 'PUT', `/api/settings/tenants/${tenant.id}`, {
      name: 'New name',
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'New name', workspaces: [{ id: workspace.workspaceId }] });
    expect((await t.call(workspace, 'GET', '/api/workspaces/current')).json().tenant.name).toBe('New name');
    const [event] = (await t.call(workspace, 'GET', '/api/activity?subject_type=settings')).json().items;
    expect(event).toMatchObject({ message: 'Tenant “Old name” renamed to “New name”', actor: alice.userId });

    const byOperator = await t.call(t.owner, 'PUT', `/api/settings/tenants/${tenant.id}`, {
      default_model: { provider: 'local', name: 'echo' },
    });
    expect(byOperator.statusCode, byOperator.body).toBe(200);
    expect(byOperator.json()).toMatchObject({
      name: 'New name',
      default_model: { provider: 'local', name: 'echo' },
    });
  });

  it('refuses bad input naming the field', async () => {
    const alice = await user();
    const tenant = await createTenant(alice, { name: 'Checked' });
    const cases: [string, string, unknown, string][] = [
      ['POST', '/api/settings/tenants', {}, 'body.name'],
      ['POST', '/api/settings/tenants', { name: '' }, 'body.name'],
      ['POST', '/api/settings/tenants', { name: 'x', time_zone: 'Mars/Olympus' }, 'body.time_zone'],
      [
        'POST',
        '/api/settings/tenants',
        { name: 'x', default_model: { provider: 'openai' } },
        'body.default_model',
      ],
      ['POST', '/api/settings/tenants', { name: 'x', owner: 'me' }, 'body.owner'],
      ['PUT', `/api/settings/tenants/${tenant.id}`, { time_zone: 'Nowhere' }, 'body.time_zone'],
      ['PUT', `/api/settings/tenants/${tenant.id}`, { name: 42 }, 'body.name'],
    ];
    for (const [method, url, body, field] of cases) {
      const answer = await t.call(undefined, method as 'POST', url, body, { headers: alice.headers });
      expect(answer.statusCode, JSON.stringify(body)).toBe(400);
      expect(
        answer
          .json()
          .errors.map((error: { field: string }) => error.field)
          .join(' '),
        JSON.stringify(body),
      ).toContain(field);
    }
    expect((await t.call(undefined, 'GET', '/api/settings/tenants')).statusCode).toBe(401);
  });

  it('deletes an empty tenant at once, and one with workspaces only with its name as confirmation', async () => {
    const alice = await user();
    const empty = await createTenant(alice, { name: 'Empty' });
    expect(
      (
        await t.call(undefined, 'DELETE', `/api/settings/tenants/${empty.id}`, undefined, {
          headers: alice.headers,
        })
      ).statusCode,
    ).toBe(204);
    expect(await listIds(alice)).not.toContain(empty.id);

    const full = await createTenant(alice, { name: 'Full', workspace_name: 'Full workspace' });
    const del = (query: string) =>
      t.call(undefined, 'DELETE', `/api/settings/tenants/${full.id}${query}`, undefined, {
        headers: alice.headers,
      });
    const refused = await del('');
    expect(refused.statusCode).toBe(409);
    expect(refused.json().code).toBe('tenant_not_empty');
    expect(refused.json().detail).toContain('“Full workspace”');
    expect(refused.json().detail).toContain('confirm');
    const wrong = await del('?confirm=full');
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().errors[0].field).toBe('query.confirm');
    expect(await listIds(alice)).toContain(full.id);

    expect((await del('?confirm=Full')).statusCode).toBe(204);
    expect(await listIds(alice)).not.toContain(full.id);
    const mine = (
      await t.call(undefined, 'GET', '/api/workspaces', undefined, { headers: alice.headers })
    ).json();
    expect(mine.items.map((w: { id: string }) => w.id)).not.toContain(full.workspaces[0]?.id);
    expect((await del('?confirm=Full')).statusCode).toBe(404);

    // The deletion is in the platform trail (the workspaces' own trails went with them).
    const exported = await t.call(t.owner, 'POST', '/api/settings/audit/export', {
      scope: 'platform',
      format: 'jsonl',
      actions: ['tenant.deleted'],
    });
    expect(exported.statusCode, exported.body).toBe(200);
    const deleted = exported.body
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line))
      .find((entry) => entry.target.id === full.id);
    expect(deleted).toMatchObject({
      action: 'tenant.deleted',
      actor: { id: alice.userId },
      changes: { name: { old: 'Full', new: null }, workspaces_removed: { old: [full.workspaces[0]?.id] } },
    });
    const info = await t.call(t.owner, 'GET', '/api/settings/audit/info?scope=platform');
    expect(info.json().chain.verified).toBe(true);
  });
});
