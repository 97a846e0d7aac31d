import { type AnyColumn, asc, desc, gt, lt, type SQL, sql } from 'drizzle-orm';

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

/** What a list asks for: `limit` 1..200 (default 50) and `offset`, validated by the route. */
export interface PageRequest {
  limit: number;
  offset: number;
}

/** What every list answers; routes return it unchanged. */
export interface Page<Item> {
  items: Item[];
  total: number;
  limit: number;
  offset: number;
}

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

/** A page with nothing in it, for filters that can match nothing. */
export const emptyPage = (request: PageRequest): Page<never> => ({
  items: [],
  total: 0,
  limit: request.limit,
  offset: request.offset,
});

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
