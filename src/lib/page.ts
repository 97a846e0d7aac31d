/**
 * The shape of every offset list (`{items, total, limit, offset}`, CONVENTIONS "Lists: one
 * helper") and the pure ways to make one. A list read from the database is answered by
 * `paginate` or `selectJsonPage` in `db/queries.ts`, which build on these types; a list a
 * service holds in memory (built-in entries merged with stored ones) is cut by `pageOf`; a
 * service that presents its repository's rows maps the page with `mapItems`. Nothing else
 * writes the four fields by hand, so a list cannot drift from the others (the architecture
 * test checks it).
 */

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

/** The requested page of a list held in memory, all of it counted. */
export const pageOf = <Item>(all: readonly Item[], request: PageRequest): Page<Item> => ({
  items: all.slice(request.offset, request.offset + request.limit),
  total: all.length,
  limit: request.limit,
  offset: request.offset,
});

/** The same page with each item presented (a row becomes its API view). */
export const mapItems = <Item, View>(page: Page<Item>, present: (item: Item) => View): Page<View> => ({
  ...page,
  items: page.items.map(present),
});
