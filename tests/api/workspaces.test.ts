import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let owner: Actor;

beforeAll(async () => {
  t = await createTestApp();
  owner = await t.newWorkspace('olivia');
});
afterAll(() => t.close());

const call = (actor: Actor, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: actor.headers, ...(payload ? { payload } : {}) });

/** `userId` acting in `owner`'s workspace. */
const as = async (userId: string, workspace: Actor = owner): Promise<Actor> => {
  const token = await t.token(userId);
  return {
    userId,
    workspaceId: workspace.workspaceId,
    token,
    headers: { authorization: `Bearer ${token}`, 'x-workspace-id': workspace.workspaceId },
  };
};

describe('workspaces', () => {
  it('describes the current workspace, its tenant and my role', async () => {
    const response = await call(owner, 'GET', '/api/workspaces/current');
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
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/workspaces',
      headers,
      payload: { name: 'Research', tenant_name: 'Acme' },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ name: 'Research', role: 'owner', tenant: { name: 'Acme' } });
    const mine = await t.app.inject({ method: 'GET', url: '/api/workspaces', headers });
    expect(mine.json().items.map((w: { id: string }) => w.id)).toEqual([created.json().id]);
  });
});

describe('members', () => {
  it('lets an admin add, re-role and remove members', async () => {
    const added = await call(owner, 'POST', '/api/workspaces/members', { user_id: 'adam', role: 'admin' });
    expect(added.statusCode).toBe(201);
    const adam = await as('adam');
    expect(
      (await call(adam, 'POST', '/api/workspaces/members', { user_id: 'mia', role: 'member' })).statusCode,
    ).toBe(201);
    const changed = await call(adam, 'PUT', '/api/workspaces/members/mia', { role: 'viewer' });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toMatchObject({ user_id: 'mia', role: 'viewer' });
    const list = (await call(owner, 'GET', '/api/workspaces/members')).json();
    expect(list.items.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
      ['olivia', 'owner'],
      ['adam', 'admin'],
      ['mia', 'viewer'],
    ]);
    expect(list.total).toBe(3);
    expect((await call(adam, 'DELETE', '/api/workspaces/members/mia')).statusCode).toBe(204);
    const mia = await as('mia');
    expect((await call(mia, 'GET', '/api/agents')).statusCode).toBe(403);
  });

  it('refuses a duplicate member with 409', async () => {
    const response = await call(owner, 'POST', '/api/workspaces/members', {
      user_id: 'olivia',
      role: 'viewer',
    });
    expect(response.statusCode).toBe(409);
    expect(response.json().code).toBe('member_exists');
  });

  it('keeps the owner role for owners to give and take', async () => {
    await call(owner, 'POST', '/api/workspaces/members', { user_id: 'ada', role: 'admin' });
    const ada = await as('ada');
    const grant = await call(ada, 'POST', '/api/workspaces/members', { user_id: 'oscar', role: 'owner' });
    expect(grant.statusCode).toBe(403);
    expect((await call(ada, 'PUT', '/api/workspaces/members/olivia', { role: 'viewer' })).statusCode).toBe(
      403,
    );
    expect((await call(ada, 'DELETE', '/api/workspaces/members/olivia')).statusCode).toBe(403);
  });

  it('never removes or demotes the last owner', async () => {
    const solo = await t.newWorkspace('solo');
    const remove = await call(solo, 'DELETE', '/api/workspaces/members/solo');
    expect(remove.statusCode).toBe(409);
    expect(remove.json().code).toBe('last_owner');
    expect((await call(solo, 'PUT', '/api/workspaces/members/solo', { role: 'admin' })).statusCode).toBe(409);
    await call(solo, 'POST', '/api/workspaces/members', { user_id: 'second', role: 'owner' });
    expect((await call(solo, 'PUT', '/api/workspaces/members/solo', { role: 'admin' })).statusCode).toBe(200);
  });

  it('keeps members and viewers out of member management, and viewers out of writes', async () => {
    await call(owner, 'POST', '/api/workspaces/members', { user_id: 'val', role: 'viewer' });
    await call(owner, 'POST', '/api/workspaces/members', { user_id: 'mo', role: 'member' });
    const val = await as('val');
    const mo = await as('mo');
    expect(
      (await call(mo, 'POST', '/api/workspaces/members', { user_id: 'z', role: 'viewer' })).statusCode,
    ).toBe(403);
    expect((await call(val, 'GET', '/api/agents')).statusCode).toBe(200);
    const write = await call(val, 'POST', '/api/agents', { name: 'x', model: { provider: 'a', name: 'b' } });
    expect(write.statusCode).toBe(403);
    expect(write.json().code).toBe('insufficient_role');
    expect(
      (await call(mo, 'POST', '/api/agents', { name: 'x', model: { provider: 'a', name: 'b' } })).statusCode,
    ).toBe(201);
  });

  it('answers 404 for an unknown member and 400 for a bad role', async () => {
    expect((await call(owner, 'PUT', '/api/workspaces/members/nobody', { role: 'admin' })).statusCode).toBe(
      404,
    );
    const bad = await call(owner, 'POST', '/api/workspaces/members', { user_id: 'x', role: 'god' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].field).toBe('body.role');
  });
});
