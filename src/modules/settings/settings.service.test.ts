import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../tests/helpers/test-app.ts';
import { createSettingsService } from './settings.service.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('settings service', () => {
  it('answers the defaults, keeps keys a partial update leaves out, and isolates workspaces', async () => {
    const settings = createSettingsService(t.database.db);
    const a = await t.newWorkspace();
    const b = await t.newWorkspace();
    const defaults = await settings.get(a.workspaceId, 'credentials');
    expect(defaults).toEqual({
      environment_lookup: false,
      archive_audit_on_delete: true,
      refuse_private_networks: true,
    });
    await settings.update(a.workspaceId, 'credentials', { environment_lookup: true });
    const updated = await settings.update(a.workspaceId, 'credentials', { archive_audit_on_delete: false });
    expect(updated).toEqual({ ...defaults, environment_lookup: true, archive_audit_on_delete: false });
    expect(await settings.get(b.workspaceId, 'credentials')).toEqual(defaults);
  });

  it('ignores a stored value that no longer fits the namespace schema', async () => {
    const settings = createSettingsService(t.database.db);
    const a = await t.newWorkspace();
    await t.rows(sql`insert into workspace_settings (workspace_id, key, value)
      values (${a.workspaceId}, 'credentials.environment_lookup', '"yes"'::jsonb)`);
    expect((await settings.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
  });
});
