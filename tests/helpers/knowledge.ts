import type { Actor } from './api-client.ts';
import type { TestApp } from './test-app.ts';

/** A file for an upload: its name, its bytes (text is UTF-8), and the type the client declares. */
export interface UploadFile {
  name: string;
  content: string | Uint8Array;
  type?: string;
}

/**
 * Uploads `file` through `POST /api/documents/upload` as a browser would (multipart/form-data,
 * encoded by the platform's FormData), with any other form fields given (`source_id`, `tags`,
 * `metadata`; an array repeats the field). Answers the raw response: tests of refusals read it.
 */
export function upload(
  t: TestApp,
  actor: Actor,
  file: UploadFile | undefined,
  fields: Record<string, string | string[]> = {},
) {
  const form = new FormData();
  if (file) {
    const bytes = typeof file.content === 'string' ? new TextEncoder().encode(file.content) : file.content;
    form.append('file', new Blob([bytes], file.type ? { type: file.type } : {}), file.name);
  }
  for (const [name, value] of Object.entries(fields)) {
    for (const item of Array.isArray(value) ? value : [value]) form.append(name, item);
  }
  return t.call(actor, 'POST', '/api/documents/upload', form);
}

type Row = Record<string, any>;

/** Reads `url` until `done` holds for its JSON (or `timeoutMs` passes, failing with what it last saw). */
export async function pollUntil(
  t: TestApp,
  actor: Actor,
  url: string,
  done: (body: Row) => boolean,
  timeoutMs = 20_000,
): Promise<Row> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const response = await t.call(actor, 'GET', url);
    const body = response.json();
    if (response.statusCode === 200 && done(body)) return body;
    if (Date.now() > until) throw new Error(`${url} did not settle: ${response.statusCode} ${response.body}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The document once it is no longer `processing`. */
export const settledDocument = (t: TestApp, actor: Actor, id: string) =>
  pollUntil(t, actor, `/api/documents/${id}`, (document) => document.status !== 'processing');

/** The source once its run is neither queued nor running. */
export const settledSource = (t: TestApp, actor: Actor, id: string) =>
  pollUntil(
    t,
    actor,
    `/api/sources/${id}`,
    (source) => !['queued', 'running'].includes(source.indexing.status),
  );
