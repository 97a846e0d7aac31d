import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import { createWorkspacesService } from '../workspaces/workspaces.service.ts';
import { createSettingsService } from './settings.service.ts';

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(() => db.close());

let seq = 0;
/** A new workspace (settings rows reference one). */
async function newWorkspace() {
  seq += 1;
  const workspace = await createWorkspacesService(db.database.db).createWorkspace(`user-${seq}`, {
    name: `workspace ${seq}`,
  });
  return { workspaceId: workspace.id };
}

describe('settings service', () => {
  it('answers the defaults, keeps keys a partial update leaves out, and isolates workspaces', async () => {
    const settings = createSettingsService(db.database.db);
    const a = await newWorkspace();
    const b = await newWorkspace();
    const defaults = await settings.get(a.workspaceId, 'credentials');
    expect(defaults).toEqual({
      environment_lookup: false,
      archive_audit_on_delete: true,
      // On by default: connection tests reach only public addresses unless an admin opts out.
      refuse_private_networks: true,
    });
    await settings.update(a.workspaceId, 'credentials', { environment_lookup: true });
    const updated = await settings.update(a.workspaceId, 'credentials', { archive_audit_on_delete: false });
    expect(updated).toEqual({ ...defaults, environment_lookup: true, archive_audit_on_delete: false });
    expect(await settings.get(b.workspaceId, 'credentials')).toEqual(defaults);
  });

  it('ignores a stored value that no longer fits the namespace schema', async () => {
    const settings = createSettingsService(db.database.db);
    const a = await newWorkspace();
    await db.rows(sql`insert into workspace_settings (workspace_id, key, value)
      values (${a.workspaceId}, 'credentials.environment_lookup', '"yes"'::jsonb)`);
    expect((await settings.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
  });
});
