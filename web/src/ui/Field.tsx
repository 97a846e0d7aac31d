import { type ReactNode, useId } from 'react';
import { ApiError } from '../api/client.ts';
import { inputConstraints } from '../lib/request-schemas.ts';

export interface ControlProps {
  id: string;
  'aria-invalid': boolean;
  'aria-describedby'?: string;
  required: boolean;
  minLength?: number;
  maxLength?: number;
  min?: number;
  max?: number;
}

/**
 * A labelled control of a form that calls `operation`: the browser checks the constraints the
 * API's schema publishes for `name`, and the API's own problem+json error for the field (from
 * `error`) is shown under it and read out with it.
 */
export function Field({
  label,
  operation,
  name,
  error,
  hint,
  children,
}: {
  label: string;
  /** The operationId whose request body the field belongs to. */
  operation: string;
  /** The body field, dot-separated for nested ones. */
  name: string;
  error?: unknown;
  hint?: ReactNode;
  children: (props: ControlProps) => ReactNode;
}) {
  const id = useId();
  const message = error instanceof ApiError ? error.fieldError(name) : undefined;
  const describedBy = [hint ? `${id}-hint` : '', message ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        'aria-invalid': Boolean(message),
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
        ...inputConstraints(operation, name),
      })}
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
    </div>
  );
}
