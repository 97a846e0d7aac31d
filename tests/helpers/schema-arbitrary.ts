import fc from 'fast-check';

/** A JSON Schema as the OpenAPI document holds it (the subset TypeBox emits). */
export type JsonSchema = Record<string, any>;

/** Nested arrays `depth` levels deep: past the parser's cap, and a stack-overflow probe. */
const nested = (depth: number): unknown => {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

const HOSTILE_TEXT = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udc00',
  '\ud83d\ude00',
  '\u202e\u0301',
  "' OR 1=1 --",
  '%00%ZZ',
  '../../etc/passwd',
  '{{api_key}}',
  ' ',
  '',
  '2030-06-30T23:59:60Z',
  '0000-01-01T00:00:00Z',
  '10000-01-01T00:00:00Z',
  '9999-12-31T23:59:59-01:00',
  '00000000-0000-0000-0000-000000000000',
];

/**
 * Values no schema of the API should let through to the database or the parser unchecked:
 * NUL and lone surrogates, huge strings, numbers past `integer`, impossible dates, deep
 * nesting, wrong types, and any text at all (code points including surrogate halves).
 */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...HOSTILE_TEXT),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, -1, 0, 1.5, 1e308, -0),
  fc.constantFrom('x'.repeat(70_000), '\u0000'.repeat(1000)),
  fc.constant(nested(100)),
  fc.constantFrom(null, true, false, [], {}, [null], { '\u0000': 1 }, { __proto__x: { a: 1 } }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A string satisfying the schema's format, pattern and length. */
function validString(schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return fc.uuid();
  if (schema.format === 'date-time') {
    return fc
      .date({
        min: new Date('1971-01-01T00:00:00Z'),
        max: new Date('2200-01-01T00:00:00Z'),
        noInvalidDate: true,
      })
      .map((date) => date.toISOString());
  }
  if (schema.contentMediaType === 'application/json') {
    return fc.object({ maxDepth: 2 }).map((value) => JSON.stringify(value));
  }
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 40, 40));
  if (typeof schema.pattern === 'string') {
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .filter((text) => text.length >= minLength && text.length <= (schema.maxLength ?? Infinity));
  }
  return fc.string({ minLength, maxLength });
}

/**
 * Builds values for a JSON Schema. `mix` decides what each nested value may be instead of a
 * valid one: with `hostileWeight` 0 every value is valid; above 0, any property, item or
 * leaf may be swapped for a hostile value, so one request mixes good and bad fields.
 */
export function schemaArbitrary(schema: JsonSchema, hostileWeight = 0, depth = 0): fc.Arbitrary<unknown> {
  const valid = validArbitrary(schema, hostileWeight, depth);
  if (hostileWeight === 0) return valid;
  return fc.oneof({ weight: 12, arbitrary: valid }, { weight: hostileWeight, arbitrary: hostileValue });
}

function validArbitrary(schema: JsonSchema, hostileWeight: number, depth: number): fc.Arbitrary<unknown> {
  const child = (sub: JsonSchema) => schemaArbitrary(sub, hostileWeight, depth + 1);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants)) return fc.oneof(...variants.map((variant: JsonSchema) => child(variant)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return validString(schema);
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1000, Number.MIN_SAFE_INTEGER),
        max: Math.min(schema.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER),
      });
    case 'number':
      return fc.double({
        min: schema.minimum ?? -1e6,
        max: schema.maximum ?? 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const constraints = {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 4, 4)),
      };
      const items = child(schema.items ?? {});
      return schema.uniqueItems
        ? fc.uniqueArray(items, { ...constraints, selector: (value) => JSON.stringify(value) })
        : fc.array(items, constraints);
    }
    case 'object': {
      const properties: Record<string, JsonSchema> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      const known = fc.record(
        Object.fromEntries(Object.entries(properties).map(([name, sub]) => [name, child(sub)])),
        { requiredKeys: Object.keys(properties).filter((name) => required.has(name)) },
      );
      const free = schema.patternProperties
        ? (Object.values(schema.patternProperties)[0] as JsonSchema)
        : typeof schema.additionalProperties === 'object'
          ? (schema.additionalProperties as JsonSchema)
          : undefined;
      if (!free) return known;
      const keys =
        hostileWeight > 0
          ? fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('\u0000', '\ud800'))
          : fc.string({ maxLength: 12 });
      return fc
        .tuple(known, fc.dictionary(keys, child(free), { maxKeys: depth > 2 ? 0 : 4 }))
        .map(([fixed, extra]) => ({ ...extra, ...fixed }));
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}
