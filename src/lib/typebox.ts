import { Type } from 'typebox';

/**
 * A string enum as plain JSON Schema `enum`, which gives one clear validation message.
 * Lives in lib/ so the database schema (column types) and the HTTP schemas share it.
 */
export const StringEnum = <const T extends readonly string[]>(
  values: T,
  options: Record<string, unknown> = {},
) => Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
