import { type TSchema, Type } from 'typebox';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';

/** The shared problem-details schema, registered once and referenced by every route. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    // A closed enum (`errors.ts`): a client can switch on it exhaustively.
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: Object.keys(ERROR_CODES),
      description: 'stable machine-readable error code, from the catalogue in README "Error codes"',
    }),
    request_id: Type.String(),
    errors: Type.Optional(
      Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
        description: 'per-field validation failures',
      }),
    ),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details' },
);

export const Uuid = (options: Record<string, unknown> = {}) => Type.String({ format: 'uuid', ...options });

export const IdParams = Type.Object({ id: Uuid() });

/** Largest value of PostgreSQL's `integer`; a larger id is a 400, not a database error. */
const MAX_INT4 = 2_147_483_647;

/** A serial (integer) id: 1 to 2^31-1, what an `integer` column can hold. */
export const IntId = (options: Record<string, unknown> = {}) =>
  Type.Integer({ minimum: 1, maximum: MAX_INT4, ...options });

/**
 * A date-time input. The `date-time` format is checked by `http/validation.ts`: RFC 3339,
 * and an instant that `Date` and PostgreSQL can hold (years 1 to 9999, no leap second).
 */
export const DateTime = (options: Record<string, unknown> = {}) =>
  Type.String({ format: 'date-time', ...options });

/** An ISO 8601 UTC timestamp in responses; the serializer formats Date values. */
export const Timestamp = (options: Record<string, unknown> = {}) =>
  Type.Unsafe<Date | string>({ type: 'string', format: 'date-time', ...options });

/** Standard list query: `limit` 1..200 (default 50), `offset` from 0. */
export const PageQuery = {
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'page size, 1 to 200' }),
  offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0, description: 'items to skip' }),
};

/**
 * Every list answers `{items, total, limit, offset}`. A page of a named item (one with an
 * `$id`, e.g. `Agent`) is itself named `<item>Page` in openapi.json.
 */
export const Page = <T extends TSchema>(item: T) => {
  const name = (item as { $id?: unknown }).$id;
  return Type.Object(
    {
      items: Type.Array(item),
      total: Type.Integer({ description: 'items matching the query, on every page' }),
      limit: Type.Integer({ description: 'the page size used' }),
      offset: Type.Integer({ description: 'items skipped before this page' }),
    },
    typeof name === 'string' ? { $id: `${name}Page` } : {},
  );
};

/**
 * A JSON response: what it is (its description in openapi.json) and its body schema, plus
 * the response headers it sends. The body schema serialises the reply as before; one with an
 * `$id` is a named component (`#/components/schemas/<id>`), so generated clients name it.
 */
export const Json = <T extends TSchema>(
  description: string,
  schema: T,
  headers?: Record<string, TSchema>,
) => ({
  description,
  content: { 'application/json': { schema } },
  ...(headers ? { headers } : {}),
});

/**
 * A `text/event-stream` response, one schema per event name: each event is documented as
 * `{event, data, id?}` (its name, its JSON payload, and what its id is, when it has one), so a generated client gets a union it can narrow by `event`.
 * Documentation only: `http/sse.ts` writes the frames. `events` maps a name to its payload; a
 * stream whose names are open (activity kinds) passes a `Type.String()` name instead.
 */
export const EventStream = (
  description: string,
  events: { name: string | TSchema; data: TSchema; id?: string; description?: string }[],
  headers?: Record<string, TSchema>,
) => ({
  description,
  ...(headers ? { headers } : {}),
  content: {
    'text/event-stream': {
      schema: Type.Union(
        events.map(({ name, data, id, description: about }) =>
          Type.Object(
            {
              ...(id ? { id: Type.String({ description: id }) } : {}),
              event: typeof name === 'string' ? Type.Literal(name) : name,
              data,
            },
            about ? { description: about } : {},
          ),
        ),
        {
          description: 'one Server-Sent Event; a `: heartbeat` comment line every 15 s keeps the stream open',
        },
      ),
    },
  },
});

/** The last event of a stream that fails or whose access is withdrawn (`http/sse.ts`). */
export const StreamErrorEvent = {
  name: 'error',
  data: Type.Object({
    code: Type.String({ description: 'an error code of the catalogue, e.g. access_revoked' }),
    status: Type.Integer(),
    message: Type.String(),
  }),
  description: 'the stream failed or the caller’s access was withdrawn; the stream ends after it',
};

/**
 * The `Idempotency-Key` request header (the IETF httpapi draft's name, as Stripe uses it): 1 to
 * 255 printable ASCII characters chosen by the client, so a retried request is recognised.
 * A bad one is a 400 naming `headers.idempotency-key`.
 */
export const IdempotencyKeyHeader = (description: string) =>
  Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$', description }));

/** The `Idempotent-Replayed` response header: the answer is the one a repeated key first got. */
export const IdempotentReplayedHeader = (description: string) => ({
  'Idempotent-Replayed': Type.Literal('true', { description }),
});

/** A response without a body (204), and what it means. */
export const NoContent = (description: string) => Type.Null({ description });

/** The `ETag` header of a versioned resource, to send back as `If-Match`. */
export const EtagHeader = (what: string) => ({ ETag: Type.String({ description: what }) });

/** The `Location` header of a 201 or 202: where the created (or started) resource is read. */
export const LocationHeader = (what: string) => ({
  Location: Type.String({ description: `URL path of ${what}` }),
});

export const Tags = () =>
  Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, uniqueItems: true });
