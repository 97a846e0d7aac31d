import { sql } from 'drizzle-orm';

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
