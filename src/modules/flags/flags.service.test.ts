import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServiceWorkspace } from '../../../tests/helpers/service-factories.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import type { SettingsActivity } from '../settings/settings.service.ts';
import { createFlagsService, ifMatchAdmits } from './flags.service.ts';

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(() => db.close());

const newCaller = () => buildServiceWorkspace(db.database.db, 'flag-user');

const recorded: unknown[] = [];
const activity: SettingsActivity = {
  async record(_tx, event) {
    recorded.push(event);
  },
};

describe('ifMatchAdmits', () => {
  it('compares strong tags, admits * for a stored flag, and nothing for one never stored', () => {
    expect(ifMatchAdmits('"3"', 3)).toBe(true);
    expect(ifMatchAdmits(' "1" , "3" ', 3)).toBe(true);
    expect(ifMatchAdmits('"2"', 3)).toBe(false);
    expect(ifMatchAdmits('W/"3"', 3)).toBe(false);
    expect(ifMatchAdmits('3', 3)).toBe(false);
    expect(ifMatchAdmits('*', 1)).toBe(true);
    expect(ifMatchAdmits('*', undefined)).toBe(false);
  });
});

describe('flags service', () => {
  it('reads a built-in flag through enabled(): its default until stored, then the stored rules', async () => {
    const flags = createFlagsService({ db: db.database.db, activity });
    const caller = await newCaller();
    const other = { ...caller, userId: 'someone-else' };
    expect(await flags.enabled(caller, 'search.keyword_only')).toBe(false);
    await flags.put(caller, 'search.keyword_only', {
      type: 'boolean',
      default: false,
      variants: { on: true },
      rules: [{ when: `user_id == "${caller.userId}"`, variant: 'on' }],
    });
    expect(await flags.enabled(caller, 'search.keyword_only')).toBe(true);
    expect(await flags.enabled(other, 'search.keyword_only')).toBe(false);
    // Another workspace keeps the platform default.
    expect(await flags.enabled(await newCaller(), 'search.keyword_only')).toBe(false);
    expect(recorded).toContainEqual(
      expect.objectContaining({ workspaceId: caller.workspaceId, subjectId: 'flags.search.keyword_only' }),
    );
  });

  it('records the activity event in the write’s transaction: if it fails, nothing is stored', async () => {
    const failing = createFlagsService({
      db: db.database.db,
      activity: {
        async record() {
          throw new Error('activity down');
        },
      },
    });
    const caller = await newCaller();
    await expect(failing.put(caller, 'tx.flag', { type: 'boolean', default: true })).rejects.toThrow(
      'activity down',
    );
    const flags = createFlagsService({ db: db.database.db, activity });
    await expect(flags.get(caller, 'tx.flag')).rejects.toMatchObject({ code: 'flag_not_found' });
    expect((await flags.list(caller, { limit: 50, offset: 0 })).total).toBe(1);
  });

  it('stores JSON null as a value, and pages the list', async () => {
    const flags = createFlagsService({ db: db.database.db, activity });
    const caller = await newCaller();
    const saved = await flags.put(caller, 'json.null', {
      type: 'json',
      default: null,
      variants: { obj: { a: 1 } },
    });
    expect(saved).toMatchObject({ default: null, variants: { obj: { a: 1 } }, version: 1 });
    expect((await flags.get(caller, 'json.null')).default).toBeNull();
    const page = await flags.list(caller, { limit: 1, offset: 1 });
    expect(page).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(page.items.map((f) => f.key)).toEqual(['search.keyword_only']);
  });
});
