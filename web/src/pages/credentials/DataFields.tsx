import { useId } from 'react';
import type { Schemas } from '../../api/client.ts';
import { ApiError } from '../../api/client.ts';

export type FieldDefinition = Schemas['CredentialType']['schema_definition'][number];
/** What the form holds for each field: text for inputs and selects, a boolean for toggles. */
export type DataValues = Record<string, string | boolean>;

/** Password and hidden fields are secrets: the API never answers them, the form never shows them. */
export const isSecret = (field: FieldDefinition) => field.type === 'password' || field.type === 'hidden';

/** The form's starting values: a credential's stored non-secret data, else the type's defaults. */
export function initialValues(
  fields: FieldDefinition[],
  stored?: Record<string, unknown> | null,
): DataValues {
  const values: DataValues = {};
  for (const field of fields) {
    if (field.type === 'hidden') continue;
    if (field.type === 'password') {
      values[field.name] = '';
      continue;
    }
    const value = stored && Object.hasOwn(stored, field.name) ? stored[field.name] : field.default;
    values[field.name] =
      field.type === 'boolean' ? value === true : value === undefined || value === null ? '' : String(value);
  }
  return values;
}

/**
 * The `data` of a create or update body: on create every filled field; on update only what
 * changed (the API merges it over the stored data), a cleared optional field as `null`, and a
 * password only when a new one was typed.
 */
export function dataBody(
  fields: FieldDefinition[],
  values: DataValues,
  initial?: DataValues,
): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const field of fields) {
    if (field.type === 'hidden') continue;
    const value = values[field.name];
    if (field.type === 'password') {
      if (typeof value === 'string' && value !== '') data[field.name] = value;
      continue;
    }
    if (initial && initial[field.name] === value) continue;
    if (field.type === 'boolean') data[field.name] = value === true;
    else if (value === '' || value === undefined) {
      if (initial) data[field.name] = null;
    } else if (field.type === 'number') data[field.name] = Number(value);
    else data[field.name] = value;
  }
  return data;
}

/**
 * The controls of a credential's data, generated from its type's `schema_definition`: text and
 * number inputs, passwords masked (never filled in from the API), options as a select, booleans
 * as a toggle, hidden fields left out (the service fills them). The API's error for a field
 * (`body.data.<name>`) is shown under it.
 */
export function DataFields({
  fields,
  values,
  onChange,
  error,
  editing,
}: {
  fields: FieldDefinition[];
  values: DataValues;
  onChange: (name: string, value: string | boolean) => void;
  error: unknown;
  /** Editing a stored credential: an empty password keeps the stored one. */
  editing: boolean;
}) {
  return (
    <fieldset className="field">
      <legend>Connection details</legend>
      {fields
        .filter((field) => field.type !== 'hidden')
        .map((field) => (
          <DataField
            key={field.name}
            field={field}
            value={values[field.name] ?? ''}
            onChange={(value) => onChange(field.name, value)}
            error={error}
            editing={editing}
          />
        ))}
    </fieldset>
  );
}

function DataField({
  field,
  value,
  onChange,
  error,
  editing,
}: {
  field: FieldDefinition;
  value: string | boolean;
  onChange: (value: string | boolean) => void;
  error: unknown;
  editing: boolean;
}) {
  const id = useId();
  const message = error instanceof ApiError ? error.fieldError(`data.${field.name}`) : undefined;
  const hint =
    field.type === 'password' && editing
      ? `Stored and never shown. Leave empty to keep it${field.description ? `; ${field.description}` : ''}.`
      : field.description;
  const describedBy = [hint ? `${id}-hint` : '', message ? `${id}-error` : ''].filter(Boolean).join(' ');
  const common = {
    id,
    'aria-invalid': Boolean(message),
    ...(describedBy ? { 'aria-describedby': describedBy } : {}),
  };
  const required = Boolean(field.required) && !(editing && field.type === 'password');
  const text = typeof value === 'string' ? value : '';

  let control: React.ReactNode;
  if (field.type === 'boolean') {
    return (
      <div className="field">
        <div className="toggle">
          <input
            {...common}
            type="checkbox"
            role="switch"
            aria-checked={value === true}
            checked={value === true}
            onChange={(event) => onChange(event.target.checked)}
          />
          <label htmlFor={id}>{field.label}</label>
        </div>
        <FieldNotes id={id} hint={hint} message={message} />
      </div>
    );
  }
  if (field.type === 'options') {
    control = (
      <select {...common} required={required} value={text} onChange={(event) => onChange(event.target.value)}>
        {!required && <option value="">—</option>}
        {required && text === '' && (
          <option value="" disabled>
            Choose…
          </option>
        )}
        {(field.options ?? []).map((option) => (
          <option key={option.value} value={option.value}>
            {option.label ?? option.value}
          </option>
        ))}
      </select>
    );
  } else {
    control = (
      <input
        {...common}
        type={field.type === 'password' ? 'password' : field.type === 'number' ? 'number' : 'text'}
        autoComplete={field.type === 'password' ? 'new-password' : 'off'}
        required={required}
        value={text}
        placeholder={field.placeholder}
        onChange={(event) => onChange(event.target.value)}
      />
    );
  }
  return (
    <div className="field">
      <label htmlFor={id}>{field.label}</label>
      {control}
      <FieldNotes id={id} hint={hint} message={message} />
    </div>
  );
}

function FieldNotes({
  id,
  hint,
  message,
}: {
  id: string;
  hint?: string | undefined;
  message?: string | undefined;
}) {
  return (
    <>
      {hint && (
        <div className="hint" id={`${id}-hint`}>
          {hint}
        </div>
      )}
      {message && (
        <div className="error" id={`${id}-error`}>
          {message}
        </div>
      )}
    </>
  );
}
