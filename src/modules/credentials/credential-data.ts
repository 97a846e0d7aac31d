import type { FieldDefinition, TestEndpoint } from '../../db/schema/credentials.ts';
import type { FieldError } from '../../errors.ts';
import { placeholdersOf } from '../../lib/placeholders.ts';

export type CredentialData = Record<string, unknown>;

/** Shown instead of a secret value. */
export const MASK = '********';
const MAX_VALUE_LENGTH = 65_536;

/** Password and hidden fields are secrets: never shown, never logged, scrubbed from messages. */
export const secretFieldNames = (fields: FieldDefinition[]): string[] =>
  fields.filter((f) => f.type === 'password' || f.type === 'hidden').map((f) => f.name);

/**
 * Values of hidden fields that the service derives from the others, by type and field.
 * A hidden field without a filler takes its definition's `default`.
 */
const HIDDEN_FILLERS: Record<string, (data: CredentialData) => unknown> = {
  'basic_auth_credentials.basic_token': (data) =>
    Buffer.from(`${String(data.username ?? '')}:${String(data.password ?? '')}`, 'utf8').toString('base64'),
};

/**
 * Checks credential data against its type (rule C1) and returns the complete data to
 * encrypt: defaults applied, hidden fields filled in. With `previous`, the input is a
 * partial update merged over it: omitted fields keep their values, `null` clears one.
 */
export function prepareCredentialData(
  typeName: string,
  fields: FieldDefinition[],
  input: CredentialData,
  previous?: CredentialData,
  fieldPrefix = 'body.data',
): { data: CredentialData; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const byName = new Map(fields.map((f) => [f.name, f]));
  const error = (name: string, message: string) => errors.push({ field: `${fieldPrefix}.${name}`, message });

  for (const [name, value] of Object.entries(input)) {
    const field = byName.get(name);
    if (!field) {
      error(name, `is not a field of ${typeName}`);
      continue;
    }
    if (field.type === 'hidden') {
      error(name, 'is filled in by the service and cannot be set');
      continue;
    }
    if (value === null) continue;
    const problem = checkValue(field, value);
    if (problem) error(name, problem);
  }

  const data: CredentialData = {};
  for (const field of fields) {
    if (field.type === 'hidden') continue;
    const given = Object.hasOwn(input, field.name) ? input[field.name] : previous?.[field.name];
    const value = given === null || given === undefined ? field.default : given;
    if (value === undefined || value === null || value === '') {
      if (field.required && !errors.some((e) => e.field === `${fieldPrefix}.${field.name}`)) {
        error(field.name, 'is required');
      }
      continue;
    }
    data[field.name] = value;
  }
  for (const field of fields) {
    if (field.type !== 'hidden') continue;
    const fill = HIDDEN_FILLERS[`${typeName}.${field.name}`];
    const value = fill ? fill(data) : field.default;
    if (value !== undefined) data[field.name] = value;
  }
  return { data, errors };
}

function checkValue(field: FieldDefinition, value: unknown): string | undefined {
  switch (field.type) {
    case 'string':
    case 'password':
      if (typeof value !== 'string') return 'must be a string';
      if (value.length > MAX_VALUE_LENGTH) return `must be at most ${MAX_VALUE_LENGTH} characters`;
      return undefined;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'options': {
      const allowed = (field.options ?? []).map((o) => o.value);
      return typeof value === 'string' && allowed.includes(value)
        ? undefined
        : `must be one of: ${allowed.join(', ')}`;
    }
    default:
      return undefined;
  }
}

/** The data with every secret replaced by the mask; what listing and details may show. */
export function maskCredentialData(fields: FieldDefinition[], data: CredentialData): CredentialData {
  const secrets = new Set(secretFieldNames(fields));
  return Object.fromEntries(
    Object.entries(data).map(([name, value]) => [name, secrets.has(name) ? MASK : value]),
  );
}

/** Names of the fields whose values differ; for audit records, which never hold values. */
export function changedFieldNames(before: CredentialData, after: CredentialData): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((name) => JSON.stringify(before[name]) !== JSON.stringify(after[name])).sort();
}

/** Checks a type's field list: unique names, allowed types, options for options fields. */
export function checkFieldDefinitions(
  fields: FieldDefinition[],
  prefix = 'body.schema_definition',
): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  fields.forEach((field, index) => {
    if (seen.has(field.name))
      errors.push({ field: `${prefix}.${index}.name`, message: `duplicates field "${field.name}"` });
    seen.add(field.name);
    if (field.type === 'options' && (!field.options || field.options.length === 0)) {
      errors.push({
        field: `${prefix}.${index}.options`,
        message: 'must list at least one option for an options field',
      });
    }
    if (field.type !== 'options' && field.options) {
      errors.push({ field: `${prefix}.${index}.options`, message: 'is only allowed on options fields' });
    }
    if (field.default !== undefined && field.default !== null) {
      const problem = checkValue(field, field.default);
      if (problem) errors.push({ field: `${prefix}.${index}.default`, message: problem });
    }
  });
  return errors;
}

/** The field names a test endpoint's URL and headers fill in (`{{field}}`), each once, in order. */
export const endpointPlaceholders = (endpoint: TestEndpoint | null | undefined): string[] => [
  ...new Set(
    [endpoint?.url ?? '', ...Object.values(endpoint?.headers ?? {})].flatMap((text) => placeholdersOf(text)),
  ),
];
