import { asc, desc, eq, getTableColumns, type SQL, sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  integer,
  jsonb,
  numeric,
  pgTable,
  serial,
  text,
  timestamp,
  uuid,
} from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../tests/helpers/test-app.ts';
import { selectJsonPage } from './queries.ts';

/** Every column type `selectJsonPage` passes through, and both kinds of timestamp. */
const things = pgTable('json_page_test_things', {
  id: serial('id').primaryKey(),
  owner: uuid('owner').notNull(),
  name: text('name').notNull(),
  note: text('note'),
  size: integer('size'),
  big: bigint('big', { mode: 'number' }),
  flag: boolean('flag').notNull(),
  data: jsonb('data'),
  labels: text('labels').array().notNull(),
  seen_at: timestamp('seen_at', { withTimezone: true, mode: 'date' }).notNull(),
  local_at: timestamp('local_at', { mode: 'date' }),
});

const OWNER = '00000000-0000-4000-8000-000000000001';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
  await t.database.db.execute(sql`create table json_page_test_things (
    id serial primary key, owner uuid not null, name text not null, note text, size integer,
    big bigint, flag boolean not null, data jsonb, labels text[] not null,
    seen_at timestamptz not null, local_at timestamp)`);
  await t.database.db.insert(things).values([
    {
      owner: OWNER,
      name: 'plain',
      flag: true,
      labels: [],
      seen_at: new Date('2026-01-01T00:00:00.000Z'),
    },
    {
      owner: OWNER,
      name: 'quotes " and \\ backslash\nnew line\ttab \u0001 control, é, 漢字, 😀',
      note: '</script>',
      size: -7,
      big: 2 ** 53 - 1,
      flag: false,
      data: { nested: { list: [1, 0.1, -2.5e-7, 1e21, null, true, 'x'] }, empty: {}, none: null },
      labels: ['a', 'b "c"', ''],
      seen_at: new Date('0999-12-31T23:59:59.999Z'),
      local_at: new Date('2026-06-30T12:34:56.789Z'),
    },
    {
      owner: OWNER,
      name: 'json scalar',
      flag: true,
      data: 'just a string',
      labels: ['x'],
      seen_at: new Date('2026-03-01T10:00:00.000Z'),
    },
    {
      owner: '00000000-0000-4000-8000-000000000002',
      name: 'other',
      flag: true,
      labels: [],
      seen_at: new Date(),
    },
  ]);
  // Microseconds the driver truncates to milliseconds; the JSON must truncate them alike.
  await t.database.db.execute(
    sql`update json_page_test_things set seen_at = '2026-01-01 00:00:00.999999+00' where name = 'plain'`,
  );
});
afterAll(() => t.close());

const where = eq(things.owner, sql.placeholder('owner'));

/** The page as `selectJsonPage` writes it, parsed. */
async function jsonPage(limit: number, offset: number, orderBy: SQL[] = [asc(things.id)]) {
  const statement = selectJsonPage(t.database.db, {
    from: things,
    fields: getTableColumns(things),
    where,
    orderBy,
    limit: sql.placeholder('limit'),
    offset: sql.placeholder('offset'),
  });
  const [row] = await statement.execute({ owner: OWNER, limit, offset });
  return JSON.parse(row?.body ?? 'null');
}

/** The same rows as drizzle maps them, printed the way a response serialiser prints them. */
async function mappedRows(limit: number, offset: number) {
  const rows = await t.database.db
    .select()
    .from(things)
    .where(eq(things.owner, OWNER))
    .orderBy(asc(things.id))
    .limit(limit)
    .offset(offset);
  return JSON.parse(JSON.stringify(rows));
}

describe('selectJsonPage', () => {
  it('writes every field as the mapped row prints it, key by key and in order', async () => {
    const page = await jsonPage(10, 0);
    const expected = await mappedRows(10, 0);
    expect(page).toStrictEqual({ items: expected, total: 3, limit: 10, offset: 0 });
    for (const [index, item] of page.items.entries()) {
      expect(Object.keys(item)).toEqual(Object.keys(expected[index]));
    }
    expect(page.items[0].seen_at).toBe('2026-01-01T00:00:00.999Z');
    expect(page.items[1].seen_at).toBe('0999-12-31T23:59:59.999Z');
    expect(page.items[1].local_at).toBe('2026-06-30T12:34:56.789Z');
  });

  it('pages in the order given, with the total of the filtered set', async () => {
    const newestFirst = await jsonPage(2, 1, [desc(things.seen_at), desc(things.id)]);
    expect(newestFirst.items.map((item: { name: string }) => item.name)).toEqual([
      'plain',
      expect.stringMatching(/^quotes/),
    ]);
    expect(newestFirst).toMatchObject({ total: 3, limit: 2, offset: 1 });
    expect((await jsonPage(1, 2)).items).toStrictEqual(await mappedRows(1, 2));
  });

  it('answers an empty page past the end with the total, and an empty set with 0', async () => {
    expect(await jsonPage(5, 50)).toStrictEqual({ items: [], total: 3, limit: 5, offset: 50 });
    const [row] = await selectJsonPage(t.database.db, {
      from: things,
      fields: getTableColumns(things),
      where: eq(things.owner, '00000000-0000-4000-8000-00000000ffff'),
      orderBy: [asc(things.id)],
      limit: 5,
      offset: 0,
    });
    expect(JSON.parse(row?.body ?? 'null')).toStrictEqual({ items: [], total: 0, limit: 5, offset: 0 });
  });

  it('takes any field name, even the name of the page it builds', async () => {
    const [row] = await selectJsonPage(t.database.db, {
      from: things,
      fields: { page: things.name, total: things.size },
      where: eq(things.name, 'plain'),
      orderBy: [asc(things.id)],
      limit: 5,
      offset: 0,
    });
    expect(JSON.parse(row?.body ?? 'null')).toStrictEqual({
      items: [{ page: 'plain', total: null }],
      total: 1,
      limit: 5,
      offset: 0,
    });
  });

  it('refuses a column whose JSON would not be what the API prints', () => {
    const priced = pgTable('json_page_test_priced', {
      id: serial('id').primaryKey(),
      price: numeric('price'),
    });
    const build = (fields: Record<string, SQL | (typeof priced)['price']>) =>
      selectJsonPage(t.database.db, {
        from: priced,
        fields,
        where: undefined,
        orderBy: [],
        limit: 1,
        offset: 0,
      });
    expect(() => build({ price: priced.price })).toThrow(/price \(PgNumeric\) needs an SQL expression/);
    expect(() => build({ price: sql`${priced.price}::text` })).not.toThrow();
  });
});
