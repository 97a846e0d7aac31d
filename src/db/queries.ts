import { type Column, ilike, or, type SQL, sql } from 'drizzle-orm';

/** Case-insensitive substring match of `q` on any of `columns`, with LIKE wildcards escaped. */
export function matchesText(q: string, ...columns: Column[]): SQL | undefined {
  const pattern = `%${q.replace(/[\\%_]/g, '\\$&')}%`;
  return or(...columns.map((column) => ilike(column, pattern)));
}

/** `tags @> ARRAY[tag]`: served by the GIN index on the tags column. */
export const hasTag = (column: Column, tag: string): SQL => sql`${column} @> ARRAY[${tag}]::text[]`;

/** The total row count of the filtered set, computed alongside the page in one query. */
export const totalCount = () => sql<number>`count(*) over()`.mapWith(Number);

/**
 * Splits rows that carry a window `total` into `{items, total}`. A page past the end has
 * no rows to carry the total, so `countAll` answers that case.
 */
export async function toPage<Row extends { total: number }>(
  rows: Row[],
  offset: number,
  countAll: () => Promise<number>,
): Promise<{ items: Omit<Row, 'total'>[]; total: number }> {
  const first = rows[0];
  const total = first ? first.total : offset > 0 ? await countAll() : 0;
  return { items: rows.map(({ total: _total, ...item }) => item), total };
}
