/**
 * The rows of a raw statement's result (`db.execute(sql...)`, `executePrepared`). Both engines
 * answer a raw statement with an object holding `rows` (node-postgres's `QueryResult`,
 * PGlite's `Results`), but drizzle types the answer by the driver, so without this every
 * repository would cast. `Row` is what the statement's select list names; the driver has
 * already parsed the column types it knows (numbers from `int4`, `Date` for timestamps on
 * node-postgres, strings for `int8` and `numeric`), so declare those as the driver gives them.
 */
export function rowsOf<Row>(result: unknown): Row[] {
  const rows = (result as { rows?: unknown } | null | undefined)?.rows;
  if (!Array.isArray(rows)) throw new TypeError('rowsOf: not the result of a raw statement (no rows)');
  return rows as Row[];
}
