import type { FastifyRequest } from 'fastify';
import { parse as secureJsonParse } from 'secure-json-parse';
import { AppError, type FieldError, invalidFields } from '../../errors.ts';
import { findUnstorableText, jsonDepthExceeds, MAX_JSON_DEPTH, textProblem } from '../../http/input-guard.ts';

/** What an upload form carries once read and checked. */
export interface UploadForm {
  filename: string;
  /** The type the client declared for the file, unless it declared none (`application/octet-stream`). */
  mediaType?: string;
  bytes: Buffer;
  sourceId?: string;
  tags: string[];
  metadata: Record<string, unknown>;
}

/** The largest `metadata` field, in bytes. */
export const MAX_METADATA_BYTES = 65_536;
const MAX_TAGS = 50;
const MAX_TAG_LENGTH = 64;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FIELDS = new Set(['file', 'source_id', 'tags', 'metadata']);
/** Control characters (C0, DEL, C1), which a name shown back to people never needs. */
const CONTROL = /\p{Cc}/gu;

/** 415 for a request to the upload route that is not a multipart form. */
export const notMultipart = (): AppError =>
  new AppError(415, 'unsupported_media_type', 'Content-Type must be multipart/form-data', [
    { field: 'headers.content-type', message: 'must be multipart/form-data' },
  ]);

/**
 * Reads an upload's multipart form: one `file` (at most `maxBytes`, else 413), and the
 * optional fields `source_id`, `tags` (repeated or comma-separated) and `metadata` (a JSON
 * object). Every refusal is a problem naming the field: a malformed form is 400
 * `invalid_multipart`, never a 500.
 */
export async function readUploadForm(request: FastifyRequest, maxBytes: number): Promise<UploadForm> {
  if (!request.isMultipart()) throw notMultipart();
  let file: Pick<UploadForm, 'filename' | 'mediaType' | 'bytes'> | undefined;
  const values: Record<'source_id' | 'tags' | 'metadata', string[]> = {
    source_id: [],
    tags: [],
    metadata: [],
  };
  const errors: FieldError[] = [];
  try {
    const parts = request.parts({
      limits: {
        fileSize: maxBytes,
        files: 1,
        fields: MAX_TAGS + 2,
        fieldSize: MAX_METADATA_BYTES,
        parts: MAX_TAGS + 3,
        headerPairs: 50,
      },
    });
    for await (const part of parts) {
      const field = `body.${printable(part.fieldname)}`;
      if (!FIELDS.has(part.fieldname) || (part.type === 'file') !== (part.fieldname === 'file')) {
        if (part.type === 'file') part.file.resume();
        const message =
          part.fieldname === 'file'
            ? 'must be a file (a part with a file name)'
            : part.type === 'file'
              ? 'is not an allowed field: the file goes in `file`'
              : 'is not an allowed field';
        errors.push({ field, message });
        continue;
      }
      if (part.type === 'file') {
        const bytes = await part.toBuffer();
        file = { filename: safeFilename(part.filename), bytes, ...declaredType(part.mimetype) };
        continue;
      }
      if (part.valueTruncated) {
        errors.push({ field, message: `must be at most ${MAX_METADATA_BYTES} bytes` });
        continue;
      }
      values[part.fieldname as keyof typeof values].push(String(part.value));
    }
  } catch (error) {
    throw formError(error, maxBytes);
  }
  if (!file) errors.push({ field: 'body.file', message: 'is required' });
  const sourceId = checkSourceId(values.source_id, errors);
  const tags = checkTags(values.tags, errors);
  const metadata = checkMetadata(values.metadata, errors);
  if (errors.length > 0 || !file) throw invalidFields(errors);
  return { ...file, ...(sourceId ? { sourceId } : {}), tags, metadata };
}

/** A multipart failure as the problem it is. */
function formError(error: unknown, maxBytes: number): unknown {
  if (error instanceof AppError) return error;
  switch ((error as { code?: string }).code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError(
        413,
        'payload_too_large',
        `the file is larger than the limit of ${maxBytes} bytes`,
        [{ field: 'body.file', message: `must be at most ${maxBytes} bytes` }],
      );
    case 'FST_FILES_LIMIT':
      return invalidFields([{ field: 'body.file', message: 'must be one file: upload files one at a time' }]);
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return new AppError(413, 'payload_too_large', 'the form has too many fields', [
        { field: 'body', message: `must have at most ${MAX_TAGS + 3} parts` },
      ]);
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return notMultipart();
    case 'FST_PROTO_VIOLATION':
      return invalidFields([{ field: 'body', message: 'must not name a field __proto__' }]);
  }
  return new AppError(400, 'invalid_multipart', 'the body is not a well-formed multipart/form-data form', [
    { field: 'body', message: 'is not a well-formed multipart/form-data form' },
  ]);
}

/** The declared type, unless it says nothing (`application/octet-stream`) or is not a media type. */
function declaredType(mimetype: string): { mediaType?: string } {
  const type = mimetype.split(';')[0]?.trim().toLowerCase() ?? '';
  return /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(type) &&
    type !== 'application/octet-stream'
    ? { mediaType: type }
    : {};
}

/**
 * The client's file name as a name only: no folders (`../../etc/passwd` is `passwd`), no
 * control characters or text PostgreSQL cannot store, at most 255 characters.
 */
export function safeFilename(raw: string | undefined): string {
  const base = (raw ?? '').split(/[\\/]/).pop() ?? '';
  const clean = base.toWellFormed().replace(CONTROL, '').trim();
  return [...clean].slice(0, 255).join('') || 'upload';
}

/** A field name shown in an error: printable, bounded. */
function printable(name: string): string {
  return [...name.toWellFormed().replace(CONTROL, '?')].slice(0, 64).join('');
}

function checkSourceId(given: string[], errors: FieldError[]): string | undefined {
  if (given.length === 0) return undefined;
  const [value] = given;
  if (given.length > 1) errors.push({ field: 'body.source_id', message: 'must be given once' });
  else if (!value || !UUID.test(value))
    errors.push({ field: 'body.source_id', message: 'must be a valid UUID' });
  else return value.toLowerCase();
  return undefined;
}

function checkTags(given: string[], errors: FieldError[]): string[] {
  const tags = [...new Set(given.flatMap((value) => value.split(',')).map((tag) => tag.trim()))].filter(
    Boolean,
  );
  for (const [index, tag] of tags.entries()) {
    const problem =
      textProblem(tag) ??
      (tag.length > MAX_TAG_LENGTH ? `must be at most ${MAX_TAG_LENGTH} characters` : undefined);
    if (problem) errors.push({ field: `body.tags.${index}`, message: problem });
  }
  if (tags.length > MAX_TAGS)
    errors.push({ field: 'body.tags', message: `must be at most ${MAX_TAGS} tags` });
  return tags;
}

function checkMetadata(given: string[], errors: FieldError[]): Record<string, unknown> {
  if (given.length === 0) return {};
  const fail = (message: string) => {
    errors.push({ field: 'body.metadata', message });
    return {};
  };
  if (given.length > 1) return fail('must be given once');
  const text = given[0] ?? '';
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH))
    return fail(`must not nest deeper than ${MAX_JSON_DEPTH} levels`);
  let value: unknown;
  try {
    value = secureJsonParse(text, { protoAction: 'error', constructorAction: 'error' });
  } catch {
    return fail('must be a JSON object');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return fail('must be a JSON object');
  const unstorable = findUnstorableText(value, 'body.metadata');
  if (unstorable.length > 0) {
    errors.push(...unstorable);
    return {};
  }
  return value as Record<string, unknown>;
}
