import { createHash } from 'node:crypto';
import {
  type AnyColumn,
  asc,
  Column,
  count,
  desc,
  getTableColumns,
  gt,
  is,
  lt,
  type Placeholder,
  SQL,
  sql,
} from 'drizzle-orm';
import { PgArray, PgDialect, type PgTable, PgTimestamp } from 'drizzle-orm/pg-core';
import type { Page, PageRequest } from '../lib/page.ts';
import type { Db } from './transaction.ts';

export type { Page, PageRequest } from '../lib/page.ts';

/**
 * A row of `table` as a raw statement (`db.execute`) returned it, column names as the database
 * has them, mapped the way drizzle maps a query builder's rows (timestamps to `Date`, bigints
 * to numbers): for statements no builder can express, such as data-modifying CTEs.
 */
export function decodeRow<Table extends PgTable>(
  table: Table,
  raw: Record<string, unknown>,
): Table['$inferSelect'] {
  const row: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const value = raw[column.name];
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row as Table['$inferSelect'];
}

/** A jsonb value in a statement: given in JS (sent as a parameter), or an SQL expression. */
export const jsonValue = (value: Record<string, unknown> | SQL): SQL =>
  is(value, SQL) ? sql`(${value})::jsonb` : sql`${JSON.stringify(value)}::jsonb`;

const dialect = new PgDialect();
const preparedNames = new Set<string>();

/**
 * Distinct statement texts a process prepares. Past it, statements run unnamed: a caller that
 * inlined values into its text would otherwise grow every connection's cache without bound.
 */
const MAX_PREPARED_TEXTS = 256;

/**
 * Executes `query` as a named prepared statement: on PostgreSQL parsed once per connection
 * and, after five executions, planned once (the generic plan); PGlite runs it as any other.
 * For the run engine's hot path, chains of data-modifying CTEs keyed by primary keys, whose
 * plans do not depend on the values, planning was most of a statement's cost
 * (bench/RESULTS.md, "Seventh round"). The name is a digest of the text, so equal texts share
 * one statement and different texts never collide.
 */
export function executePrepared(db: Db, query: SQL): Promise<unknown> {
  const compiled = dialect.sqlToQuery(query);
  const name = `p_${createHash('sha1').update(compiled.sql).digest('base64url')}`;
  const named = preparedNames.has(name) || preparedNames.size < MAX_PREPARED_TEXTS;
  if (named) preparedNames.add(name);
  return db._.session.prepareQuery(compiled, undefined, named ? name : undefined, false).execute();
}

/** The ILIKE pattern for a substring match of `q`, with LIKE wildcards escaped. */
export const likePattern = (q: string): string => `%${q.replace(/[\\%_]/g, '\\$&')}%`;

/** Names a prepared-statement variant by which optional filters it has. */
export const variantKey = (table: string, ...present: unknown[]): string =>
  `${table}_${present.map((value) => (value === undefined || value === '' ? 0 : 1)).join('')}`;

/**
 * Prepared statements built lazily, one per variant (combination of optional filters),
 * and reused for the life of the process.
 */
export class PreparedVariants<Input, Statements> {
  private readonly built = new Map<string, Statements>();

  private readonly build: (input: Input) => Statements;
  private readonly keyOf: (input: Input) => string;

  constructor(build: (input: Input) => Statements, keyOf: (input: Input) => string) {
    this.build = build;
    this.keyOf = keyOf;
  }

  get(input: Input): Statements {
    const key = this.keyOf(input);
    let statements = this.built.get(key);
    if (!statements) {
      statements = this.build(input);
      this.built.set(key, statements);
    }
    return statements;
  }
}
/** The total row count of the filtered set, computed alongside the page in one query. */
export const totalCount = () => sql<number>`count(*) over()`.mapWith(Number);

/**
 * The one way to answer a list. `rows` is the page query's result, each row carrying the
 * filtered set's size as `total` (`totalCount()`, one round trip). A page past the end has
 * no rows to carry it, so `countAll` answers that case.
 */
export async function paginate<Row extends { total: number }>(
  request: PageRequest,
  rows: Row[],
  countAll: () => Promise<number>,
): Promise<Page<Omit<Row, 'total'>>> {
  const first = rows[0];
  const total = first ? first.total : request.offset > 0 ? await countAll() : 0;
  return {
    items: rows.map(({ total: _total, ...item }) => item),
    total,
    limit: request.limit,
    offset: request.offset,
  };
}

/**
 * A page answered as JSON text built by the database, for the hottest lists: PostgreSQL
 * writes `{items, total, limit, offset}` itself and the route sends the text as it is, so
 * Node neither parses the rows (pg's protocol and type parsers), nor maps them (drizzle),
 * nor serialises them again (fast-json-stringify). The JSON equals what the response schema
 * would print for the same rows (the API tests compare it with the single-item GET): column
 * values as PostgreSQL's JSON has them, timestamps as `Date.toISOString()` prints them. What
 * it cannot do is the schema's stripping of undeclared fields *inside* a JSON column: use
 * it for tables whose JSON columns are validated on the way in.
 */
export type PageJson = string;

/** Column types whose PostgreSQL JSON form is the one the API prints for the row drizzle maps. */
const JSON_AS_IS = new Set([
  'PgUUID',
  'PgText',
  'PgVarchar',
  'PgChar',
  'PgEnumColumn',
  'PgInteger',
  'PgSmallInt',
  'PgSerial',
  'PgSmallSerial',
  'PgBigInt53',
  'PgBigSerial53',
  'PgBoolean',
  'PgJson',
  'PgJsonb',
]);

/**
 * `Date.toISOString()`'s format in SQL: UTC with milliseconds, truncated as the driver's
 * `Date` truncates PostgreSQL's microseconds.
 */
const ISO_8601 = sql.raw(`'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`);

/**
 * One item field in the page's select list, named as the API names it. Column types whose
 * JSON would differ from what the API prints (numeric, dates, intervals, bigint mode, ...)
 * are refused when the statement is built, so a new column cannot silently change format:
 * give an SQL expression for those.
 */
function pageField(name: string, field: AnyColumn | SQL): SQL.Aliased {
  if (!is(field, Column)) return sql`${field}`.as(name);
  if (is(field, PgTimestamp)) {
    const utc = field.withTimezone ? sql`${field} at time zone 'UTC'` : sql`${field}`;
    return sql`to_char(${utc}, ${ISO_8601})`.as(name);
  }
  const base = is(field, PgArray) ? field.baseColumn : field;
  if (!JSON_AS_IS.has(base.columnType)) {
    throw new Error(`selectJsonPage: field ${name} (${field.columnType}) needs an SQL expression`);
  }
  return sql`${field}`.as(name);
}

/** What `selectJsonPage` builds a page from; every SQL part may hold placeholders. */
export interface JsonPageQuery {
  /** The table the items come from. */
  from: PgTable;
  /**
   * The item's fields in the response schema's order: a column of `from`, or an SQL
   * expression (a `json`/`jsonb` one is embedded as JSON).
   */
  fields: Record<string, AnyColumn | SQL>;
  where: SQL | undefined;
  /**
   * A total order (ending with a unique column), so pages neither overlap nor skip rows, on
   * columns of `from` as drizzle writes them (qualified: an unqualified name would sort by the
   * item's field of that name, a formatted timestamp being text).
   */
  orderBy: SQL[];
  limit: Placeholder | number;
  offset: Placeholder | number;
}

/**
 * The one way to answer a list as JSON text (see `PageJson`): one statement selecting one
 * text value, `{items, total, limit, offset}`, from one snapshot. Measured on PostgreSQL 15
 * (200 rows, 20 per page), it costs the database ~50 µs more than selecting the rows, and
 * saves Node the ~100–300 µs of parsing, mapping and serialising them.
 *
 * - The items are `json_agg` over the ordered, limited page, the same construction as
 *   PostgREST's: the aggregate reads the subquery's rows in its order. Only the page's rows
 *   are read from the table (through the order's index, when there is one). The row is
 *   `page.*`: a bare `page` would mean a field of that name, if the item had one.
 * - The total is a count of the filtered set in the same statement. It is cheaper than
 *   `count(*) over()` on the page query, which carries every matching row to the window
 *   (0.17 against 0.5 ms there), and needs no second query for a page past the end.
 *
 * Prepare the result like any select; its one column is `body`.
 */
export function selectJsonPage(db: Db, query: JsonPageQuery) {
  const page = db
    .select(
      Object.fromEntries(Object.entries(query.fields).map(([name, field]) => [name, pageField(name, field)])),
    )
    .from(query.from)
    .where(query.where)
    .orderBy(...query.orderBy)
    .limit(query.limit)
    .offset(query.offset)
    .as('page');
  const matching = db
    .select({ total: count().as('total') })
    .from(query.from)
    .where(query.where)
    .as('matching');
  return db
    .select({
      body: sql<PageJson>`json_build_object(
        'items', coalesce((select json_agg(page.*) from ${page}), '[]'::json),
        'total', ${matching.total},
        'limit', ${query.limit}::int,
        'offset', ${query.offset}::int)::text`,
    })
    .from(matching);
}

/**
 * Where the next page of an offset page over a stream starts, for clients that move to
 * the cursor (`after`): the last item's id while more follow, null at the end.
 */
export const nextCursorOf = (page: Page<{ id: number }>): number | null =>
  page.offset + page.items.length < page.total ? (page.items.at(-1)?.id ?? null) : null;

/** Which end of an append-only stream comes first. */
export type StreamOrder = 'newest_first' | 'oldest_first';

/** A cursor page request over an append-only stream whose ids only grow. */
export interface CursorRequest {
  /** The last id the client has seen; the page starts just past it. Omitted: from the start. */
  after?: number;
  limit: number;
  order: StreamOrder;
}

/** A cursor page: `next_cursor` is the `after` of the next page, null at the end. */
export interface CursorPage<Item> {
  items: Item[];
  next_cursor: number | null;
}

/** The condition "past the cursor" in the stream's order; undefined without a cursor. */
export function afterCursor(id: AnyColumn, request: Pick<CursorRequest, 'after' | 'order'>): SQL | undefined {
  if (request.after === undefined) return undefined;
  return request.order === 'newest_first' ? lt(id, request.after) : gt(id, request.after);
}

/** The stream's sort on its id column. */
export const streamOrder = (id: AnyColumn, order: StreamOrder): SQL =>
  order === 'newest_first' ? desc(id) : asc(id);

/**
 * Keyset pagination for append-only streams (run events, messages, audit, activity): a
 * page never shifts when rows are added, and costs the same deep in the stream as at its
 * start, which offsets cannot promise. `id` is the stream's growing id column. `fetch` runs the query with the cursor condition,
 * order and limit given (one more row than asked, to know whether another page follows).
 */
export async function pageByCursor<Row extends { id: number }>(
  request: CursorRequest,
  id: AnyColumn,
  fetch: (query: { where: SQL | undefined; orderBy: SQL; limit: number }) => Promise<Row[]>,
): Promise<CursorPage<Row>> {
  const rows = await fetch({
    where: afterCursor(id, request),
    orderBy: streamOrder(id, request.order),
    limit: request.limit + 1,
  });
  const items = rows.slice(0, request.limit);
  const last = items.at(-1);
  return { items, next_cursor: rows.length > request.limit && last ? last.id : null };
}
