import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServiceWorkspace } from '../../../tests/helpers/service-factories.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import { inTransaction } from '../../db/transaction.ts';
import { createLocalEventHub } from '../../events/event-hub.ts';
import { createSettingsService, SETTINGS_CACHE_TTL_MS, SETTINGS_TOPIC } from './settings.service.ts';

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(() => db.close());

/** A new workspace (settings rows reference one). */
const newWorkspace = () => buildServiceWorkspace(db.database.db, 'user');

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

describe('settings cache', () => {
  /** Two processes' services on one event hub, with a clock the test moves. */
  function twoProcesses() {
    const hub = createLocalEventHub();
    let now = 1_000_000;
    const clock = { now: () => now, advance: (ms: number) => (now += ms) };
    const options = { hub, now: clock.now };
    return {
      hub,
      clock,
      one: createSettingsService(db.database.db, options),
      two: createSettingsService(db.database.db, options),
    };
  }
  const writeBehindItsBack = (workspaceId: string, value: boolean) =>
    db.rows(sql`insert into workspace_settings (workspace_id, key, value)
      values (${workspaceId}, 'credentials.environment_lookup', ${JSON.stringify(value)}::jsonb)
      on conflict (workspace_id, key) do update set value = excluded.value`);

  it('answers from the cache until a change is committed, in every process on the hub', async () => {
    const { one, two } = twoProcesses();
    const a = await newWorkspace();
    expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
    expect((await two.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
    // A write that goes around the service is not seen: the read was cached.
    await writeBehindItsBack(a.workspaceId, true);
    expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
    // A change through either process empties both caches once committed.
    await two.update(a.workspaceId, 'credentials', { archive_audit_on_delete: false });
    expect(await one.get(a.workspaceId, 'credentials')).toMatchObject({
      environment_lookup: true,
      archive_audit_on_delete: false,
    });
    expect((await two.get(a.workspaceId, 'credentials')).archive_audit_on_delete).toBe(false);
  });

  it('drops nothing for a change rolled back, and drops after the commit of a change in a transaction', async () => {
    const { one } = twoProcesses();
    const a = await newWorkspace();
    await one.get(a.workspaceId, 'credentials');
    await expect(
      inTransaction(db.database.db, async (tx) => {
        await one.update(a.workspaceId, 'credentials', { environment_lookup: true }, tx);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);

    await inTransaction(db.database.db, async (tx) => {
      await one.update(a.workspaceId, 'credentials', { environment_lookup: true }, tx);
      // Inside, the transaction reads its own write; outside, the committed value is still cached.
      expect((await one.get(a.workspaceId, 'credentials', tx)).environment_lookup).toBe(true);
      expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
    });
    expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(true);
  });

  it('reads again after the TTL (a lost announcement) and after the hub reconnects', async () => {
    const { one, clock, hub } = twoProcesses();
    const a = await newWorkspace();
    await one.get(a.workspaceId, 'credentials');
    await writeBehindItsBack(a.workspaceId, true);
    clock.advance(SETTINGS_CACHE_TTL_MS - 1);
    expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
    clock.advance(2);
    expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(true);

    await writeBehindItsBack(a.workspaceId, false);
    hub.publish(SETTINGS_TOPIC, 0); // what the Redis hub does for each topic after a reconnect
    expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
  });

  it('gives each caller its own copy', async () => {
    const { one } = twoProcesses();
    const a = await newWorkspace();
    const first = await one.get(a.workspaceId, 'credentials');
    first.environment_lookup = true;
    expect((await one.get(a.workspaceId, 'credentials')).environment_lookup).toBe(false);
  });
});
