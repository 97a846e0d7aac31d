import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildMember, buildWorkspace } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let owner: Actor;

beforeAll(async () => {
  t = await createTestApp();
  owner = await t.newWorkspace('olivia');
});
afterAll(() => t.close());

describe('workspaces', () => {
  it('describes the current workspace, its tenant and my role', async () => {
    const response = await t.call(owner, 'GET', '/api/workspaces/current');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      id: owner.workspaceId,
      name: 'olivia workspace',
      role: 'owner',
      user_id: 'olivia',
      tenant: { name: 'olivia workspace' },
    });
  });

  it('creates a new tenant and workspace with only a bearer token, and lists mine', async () => {
    const token = await t.token('newcomer');
    const headers = { authorization: `Bearer ${token}` };
    const created = await t.call(
      undefined,
      'POST',
      '/api/workspaces',
      { name: 'Research', tenant_name: 'Acme' },
      { headers },
    );
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ name: 'Research', role: 'owner', tenant: { name: 'Acme' } });
    const mine = await t.call(undefined, 'GET', '/api/workspaces', undefined, { headers });
    expect(mine.json().items.map((w: { id: string }) => w.id)).toEqual([created.json().id]);
  });
});

describe('members', () => {
  it('lets an admin add, re-role and remove members', async () => {
    const added = await t.call(owner, 'POST', '/api/workspaces/members', { user_id: 'adam', role: 'admin' });
    expect(added.statusCode).toBe(201);
    const adam = await t.actor('adam', owner.workspaceId);
    expect(
      (await t.call(adam, 'POST', '/api/workspaces/members', { user_id: 'mia', role: 'member' })).statusCode,
    ).toBe(201);
    const changed = await t.call(adam, 'PUT', '/api/workspaces/members/mia', { role: 'viewer' });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toMatchObject({ user_id: 'mia', role: 'viewer' });
    const list = (await t.call(owner, 'GET', '/api/workspaces/members')).json();
    expect(list.items.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
      ['olivia', 'owner'],
      ['adam', 'admin'],
      ['mia', 'viewer'],
    ]);
    expect(list.total).toBe(3);
    expect((await t.call(adam, 'DELETE', '/api/workspaces/members/mia')).statusCode).toBe(204);
    const mia = await t.actor('mia', owner.workspaceId);
    expect((await t.call(mia, 'GET', '/api/agents')).statusCode).toBe(403);
  });

  it('refuses a duplicate member with 409', async () => {
    const response = await t.call(owner, 'POST', '/api/workspaces/members', {
      user_id: 'olivia',
      role: 'viewer',
    });
    expect(response.statusCode).toBe(409);
    expect(response.json().code).toBe('member_exists');
  });

  it('keeps the owner role for owners to give and take', async () => {
    const ada = await buildMember(t, owner, { user_id: 'ada', role: 'admin' });
    const grant = await t.call(ada, 'POST', '/api/workspaces/members', { user_id: 'oscar', role: 'owner' });
    expect(grant.statusCode).toBe(403);
    expect((await t.call(ada, 'PUT', '/api/workspaces/members/olivia', { role: 'viewer' })).statusCode).toBe(
      403,
    );
    expect((await t.call(ada, 'DELETE', '/api/workspaces/members/olivia')).statusCode).toBe(403);
  });

  it('never removes or demotes the last owner', async () => {
    const solo = await buildWorkspace(t, { userId: 'solo' });
    const remove = await t.call(solo, 'DELETE', '/api/workspaces/members/solo');
    expect(remove.statusCode).toBe(409);
    expect(remove.json().code).toBe('last_owner');
    expect((await t.call(solo, 'PUT', '/api/workspaces/members/solo', { role: 'admin' })).statusCode).toBe(
      409,
    );
    await t.call(solo, 'POST', '/api/workspaces/members', { user_id: 'second', role: 'owner' });
    expect((await t.call(solo, 'PUT', '/api/workspaces/members/solo', { role: 'admin' })).statusCode).toBe(
      200,
    );
  });

  it('keeps members and viewers out of member management, and viewers out of writes', async () => {
    const val = await buildMember(t, owner, { user_id: 'val', role: 'viewer' });
    const mo = await buildMember(t, owner, { user_id: 'mo', role: 'member' });
    expect(
      (await t.call(mo, 'POST', '/api/workspaces/members', { user_id: 'z', role: 'viewer' })).statusCode,
    ).toBe(403);
    expect((await t.call(val, 'GET', '/api/agents')).statusCode).toBe(200);
    const write = await t.call(val, 'POST', '/api/agents', {
      name: 'x',
      model: { provider: 'a', name: 'b' },
    });
    expect(write.statusCode).toBe(403);
    expect(write.json().code).toBe('insufficient_role');
    expect(
      (await t.call(mo, 'POST', '/api/agents', { name: 'x', model: { provider: 'a', name: 'b' } }))
        .statusCode,
    ).toBe(201);
  });

  it('answers 404 for an unknown member and 400 for a bad role', async () => {
    expect((await t.call(owner, 'PUT', '/api/workspaces/members/nobody', { role: 'admin' })).statusCode).toBe(
      404,
    );
    const bad = await t.call(owner, 'POST', '/api/workspaces/members', { user_id: 'x', role: 'god' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].field).toBe('body.role');
  });
});
