import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import { createWorkspacesService, type WorkspacesService } from './workspaces.service.ts';

let db: TestDb;
let workspaces: WorkspacesService;
beforeAll(async () => {
  db = await createTestDb();
  workspaces = createWorkspacesService(db.database.db);
});
afterAll(() => db.close());

describe('workspaces service', () => {
  it('lets only one of two concurrent owner demotions through', async () => {
    const service = workspaces;
    const workspace = await service.createWorkspace('owner-1', { name: 'race' });
    const owner1 = { userId: 'owner-1', workspaceId: workspace.id, role: 'owner' as const };
    await service.addMember(owner1, { user_id: 'owner-2', role: 'owner' });
    const owner2 = { ...owner1, userId: 'owner-2' };
    const results = await Promise.allSettled([
      service.changeRole(owner1, 'owner-2', 'admin'),
      service.changeRole(owner2, 'owner-1', 'admin'),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const members = await service.listMembers(owner1, { limit: 10, offset: 0 });
    expect(members.items.filter((m) => m.role === 'owner')).toHaveLength(1);
  });

  it('sees a role change made through it at once, despite the access cache', async () => {
    const service = workspaces;
    const workspace = await service.createWorkspace('boss', { name: 'cache' });
    const boss = { userId: 'boss', workspaceId: workspace.id, role: 'owner' as const };
    await service.addMember(boss, { user_id: 'temp', role: 'admin' });
    expect(await service.findMembership(workspace.id, 'temp')).toMatchObject({ role: 'admin' });
    await service.changeRole(boss, 'temp', 'viewer');
    expect(await service.findMembership(workspace.id, 'temp')).toMatchObject({ role: 'viewer' });
    await service.removeMember(boss, 'temp');
    expect(await service.findMembership(workspace.id, 'temp')).toBeUndefined();
  });

  it('refuses a cached API key once it expires, by the clock', async () => {
    let now = new Date();
    const service = createWorkspacesService(db.database.db, () => now);
    const workspace = await service.createWorkspace('keeper', { name: 'keys' });
    const actor = { userId: 'keeper', workspaceId: workspace.id, role: 'owner' as const };
    const expiresAt = new Date(now.getTime() + 60_000);
    const { key } = await service.createApiKey(actor, { name: 'k', expires_at: expiresAt.toISOString() });
    expect(await service.resolveApiKey(key)).toMatchObject({ workspaceId: workspace.id });
    now = new Date(expiresAt.getTime() - 1);
    expect(await service.resolveApiKey(key)).toMatchObject({ workspaceId: workspace.id });
    now = expiresAt;
    expect(await service.resolveApiKey(key)).toBeUndefined();
  });
});
