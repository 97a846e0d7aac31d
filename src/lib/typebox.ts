import { Type } from 'typebox';

/**
 * A string enum as plain JSON Schema `enum`, which gives one clear validation message.
 * Lives in lib/ so the database schema (column types) and the HTTP schemas share it.
 */
export const StringEnum = <const T extends readonly string[]>(
  values: T,
  options: Record<string, unknown> = {},
) => Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

/**
 * The keyword that names a shared shape in openapi.json: `http/openapi.ts` lifts each schema
 * that carries it into `#/components/schemas/<name>` and refers to it there, so a generated
 * client gets a named type. Not `$id`: Ajv and the serialiser refuse an `$id` that appears
 * twice in one route's schema, and a shape such as a model reference appears several times in
 * one body. Validation ignores it (an `x-` keyword is an annotation).
 */
export const COMPONENT_KEYWORD = 'x-component';

/** Schema options naming the shape as the component `name` (see `COMPONENT_KEYWORD`). */
export const component = (name: string) => ({ [COMPONENT_KEYWORD]: name });
