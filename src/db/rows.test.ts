import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../tests/helpers/test-db.ts';
import { rowsOf } from './rows.ts';

describe('rowsOf', () => {
  let database: TestDb;
  beforeAll(async () => {
    database = await createTestDb();
  });
  afterAll(async () => {
    await database.close();
  });

  it('reads the rows of a raw statement on the configured engine', async () => {
    const result = await database.database.db.execute(
      sql`select 1::int as one, 'a' as letter union all select 2, 'b'`,
    );
    expect(rowsOf<{ one: number; letter: string }>(result)).toEqual([
      { one: 1, letter: 'a' },
      { one: 2, letter: 'b' },
    ]);
  });

  it('answers no rows as an empty array', async () => {
    expect(rowsOf(await database.database.db.execute(sql`select 1 where false`))).toEqual([]);
  });

  it('refuses what is not a statement result', () => {
    expect(() => rowsOf(undefined)).toThrow(TypeError);
    expect(() => rowsOf({ rowCount: 1 })).toThrow('no rows');
  });
});
