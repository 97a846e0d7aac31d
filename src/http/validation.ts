import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import formatsModule from 'ajv-formats/dist/formats.js';
import type { FastifySchemaCompiler } from 'fastify';
import type { FieldError } from '../errors.ts';

// ajv-formats ships CommonJS with a default export that NodeNext sees one level down.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;
const { fullFormats } = formatsModule as unknown as typeof import('ajv-formats/dist/formats.js');
const rfc3339DateTime = fullFormats['date-time'] as { validate: (text: string) => boolean };

/**
 * RFC 3339 allows what neither `Date` nor PostgreSQL can hold: a leap second
 * (`23:59:60Z`, NaN to `Date`), year 0, or a UTC instant past year 9999 after its offset.
 * Such a value is refused by the schema, not turned into a 500 (or ignored) later.
 */
export function isStorableDateTime(text: string): boolean {
  if (!rfc3339DateTime.validate(text)) return false;
  const time = Date.parse(text);
  if (!Number.isFinite(time)) return false;
  const year = new Date(time).getUTCFullYear();
  return year >= 1 && year <= 9999;
}

function createAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
  });
  addFormats(ajv);
  ajv.addFormat('date-time', { type: 'string', validate: isStorableDateTime });
  return ajv;
}

/**
 * Bodies are JSON, so a string where a number belongs is the client's mistake and is
 * rejected; query strings, path parameters and headers are text by nature and coerced.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = createAjv(false);
  const coercing = createAjv('array');
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object);
}

const PART_NAMES: Record<string, string> = {
  querystring: 'query',
  params: 'params',
  headers: 'headers',
  body: 'body',
};

/** Turns Ajv's errors into one `{field, message}` per field, named as the client sent it. */
export function toFieldErrors(errors: ErrorObject[], context: string): FieldError[] {
  const part = PART_NAMES[context] ?? context;
  const seen = new Map<string, FieldError>();
  for (const error of errors) {
    const pointer = error.instancePath
      .split('/')
      .slice(1)
      .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
    let message = error.message ?? 'is invalid';
    switch (error.keyword) {
      case 'required':
        pointer.push(String(error.params.missingProperty));
        message = 'is required';
        break;
      case 'additionalProperties':
        pointer.push(String(error.params.additionalProperty));
        message = 'is not an allowed field';
        break;
      case 'enum':
        message = `must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`;
        break;
      case 'format':
        message =
          error.params.format === 'date-time'
            ? 'must be an RFC 3339 date-time between years 1 and 9999 (no leap seconds)'
            : `must be a valid ${error.params.format === 'uuid' ? 'UUID' : error.params.format}`;
        break;
      case 'anyOf':
      case 'oneOf':
        message = 'does not match any allowed form';
        break;
      case 'false schema':
        // A field an `if`/`then` excludes given another (`LabelOrVersion` in policies).
        message = 'is not allowed together with another field sent (see its description)';
        break;
      case 'if':
        // The summary of a `then` failure, already named at its field.
        continue;
    }
    const field = [part, ...pointer].join('.');
    // The first error per field is the most specific; anyOf summaries come last.
    if (!seen.has(field)) seen.set(field, { field, message });
  }
  return [...seen.values()];
}
