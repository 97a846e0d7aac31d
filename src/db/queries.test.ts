import { and, count, eq, getTableColumns, sql } from 'drizzle-orm';
import { bigserial, pgTable, text } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPostgres } from '../../tests/helpers/test-app.ts';
import { createTestDb, type TestDb } from '../../tests/helpers/test-db.ts';
import { type CursorRequest, executePrepared, pageByCursor, paginate, totalCount } from './queries.ts';
import { rowsOf } from './rows.ts';
import { inTransaction } from './transaction.ts';

/** A stand-in for the append-only streams to come (run events, messages, activity). */
const events = pgTable('list_helper_test_events', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  stream: text('stream').notNull(),
});

let t: TestDb;

beforeAll(async () => {
  t = await createTestDb();
  await t.database.db.execute(
    sql`create table list_helper_test_events (id bigserial primary key, stream text not null)`,
  );
  // Two interleaved streams, so the cursor is seen to combine with a filter: a gets 1,3,5,...
  await t.database.db
    .insert(events)
    .values(Array.from({ length: 14 }, (_, i) => ({ stream: i % 2 === 0 ? 'a' : 'b' })));
});
afterAll(() => t.close());

const streamA = (request: CursorRequest) =>
  pageByCursor(request, events.id, ({ where, orderBy, limit }) =>
    t.database.db
      .select()
      .from(events)
      .where(and(eq(events.stream, 'a'), where))
      .orderBy(orderBy)
      .limit(limit),
  );

/** Follows next_cursor from the start to the end and returns every page's ids. */
async function walk(order: CursorRequest['order'], limit: number): Promise<number[][]> {
  const pages: number[][] = [];
  let after: number | undefined;
  for (;;) {
    const page = await streamA({ after, limit, order });
    pages.push(page.items.map((row) => row.id));
    if (page.next_cursor === null) return pages;
    after = page.next_cursor;
  }
}

describe('pageByCursor', () => {
  it('walks a stream newest first, page after page, and ends with a null cursor', async () => {
    expect(await walk('newest_first', 3)).toEqual([[13, 11, 9], [7, 5, 3], [1]]);
  });

  it('walks it oldest first', async () => {
    expect(await walk('oldest_first', 3)).toEqual([[1, 3, 5], [7, 9, 11], [13]]);
  });

  it('answers a last full page with no next cursor, and an empty page past the end', async () => {
    expect(await streamA({ limit: 7, order: 'oldest_first' })).toMatchObject({ next_cursor: null });
    expect(await streamA({ after: 13, limit: 5, order: 'oldest_first' })).toEqual({
      items: [],
      next_cursor: null,
    });
  });

  it('keeps a page stable while newer records are appended', async () => {
    const first = await streamA({ limit: 2, order: 'newest_first' });
    await t.database.db.insert(events).values({ stream: 'a' });
    const second = await streamA({ after: first.next_cursor ?? undefined, limit: 2, order: 'newest_first' });
    expect(second.items.map((row) => row.id)).toEqual([9, 7]);
    await t.database.db.delete(events).where(eq(events.id, 15));
  });
});

describe('paginate', () => {
  const page = (limit: number, offset: number) =>
    t.database.db
      .select({ ...getTableColumns(events), total: totalCount() })
      .from(events)
      .where(eq(events.stream, 'b'))
      .orderBy(events.id)
      .limit(limit)
      .offset(offset)
      .then((rows) =>
        paginate({ limit, offset }, rows, async () => {
          const [result] = await t.database.db
            .select({ value: count() })
            .from(events)
            .where(eq(events.stream, 'b'));
          return result?.value ?? 0;
        }),
      );

  it('answers {items, total, limit, offset} without the window column', async () => {
    expect(await page(2, 1)).toEqual({
      items: [
        { id: 4, stream: 'b' },
        { id: 6, stream: 'b' },
      ],
      total: 7,
      limit: 2,
      offset: 1,
    });
  });

  it('counts separately for a page past the end', async () => {
    expect(await page(5, 50)).toEqual({ items: [], total: 7, limit: 5, offset: 50 });
  });
});

describe('executePrepared', () => {
  const countOf = (stream: string) =>
    sql`select count(*)::int as n, ${stream}::text as stream from list_helper_test_events where stream = ${stream}`;

  it('answers as execute does, values bound as parameters', async () => {
    const db = t.database.db;
    for (const stream of ['a', 'b', 'none']) {
      expect(rowsOf(await executePrepared(db, countOf(stream)))).toEqual(
        rowsOf(await db.execute(countOf(stream))),
      );
    }
    expect(rowsOf(await executePrepared(db, countOf('a')))).toEqual([{ n: 7, stream: 'a' }]);
  });

  it.runIf(onPostgres)(
    'names one server-side statement per text on a connection, and reuses it',
    async () => {
      const names = await inTransaction(t.database.db, async (tx) => {
        // A transaction holds one connection: its prepared statements are listed for it.
        for (const stream of ['a', 'b', 'a']) await executePrepared(tx, countOf(stream));
        await executePrepared(tx, sql`select 1 as other_text_of_more_than_a_few_characters`);
        return rowsOf<{ name: string; statement: string }>(
          await tx.execute(sql`select name, statement from pg_prepared_statements where name like 'p\_%'`),
        );
      });
      const counted = names.filter((row) => String(row.statement).includes('list_helper_test_events'));
      expect(counted).toHaveLength(1);
      expect(names.length).toBe(2);
    },
  );
});
