import type { ReactNode } from 'react';
import { ApiError } from '../api/client.ts';

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="muted">{children}</p>;
}

/** An API failure in words: its problem detail, and for a missing role what is needed. */
export function ProblemAlert({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const problem = error instanceof ApiError ? error.problem : undefined;
  const heading =
    title ??
    (problem?.status === 404
      ? 'Not found'
      : problem?.status === 403
        ? 'Not allowed'
        : problem?.status === 503
          ? 'The service is unavailable'
          : 'Something went wrong');
  return (
    <div className="alert" role="alert">
      <strong>{heading}</strong>
      <div>{problem ? problem.detail : error instanceof Error ? error.message : String(error)}</div>
      {problem?.errors && problem.errors.length > 0 && (
        <ul>
          {problem.errors.map((fieldError) => (
            <li key={`${fieldError.field}:${fieldError.message}`}>
              {fieldError.field}: {fieldError.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** True for an API 404: pages say "not found" rather than an error. */
export const isNotFound = (error: unknown) => error instanceof ApiError && error.status === 404;
