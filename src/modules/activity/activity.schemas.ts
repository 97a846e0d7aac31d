import { Type } from 'typebox';
import { ActivityKindSchema } from '../../db/schema/activity.ts';
import { StreamErrorEvent, Timestamp } from '../../http/schemas.ts';

/** An activity event id: the feed's growing bigint, as large as a JSON number holds exactly. */
const EventId = (options: Record<string, unknown> = {}) =>
  Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...options });

export const ActivityEventSchema = Type.Object(
  {
    id: EventId({
      minimum: 1,
      description: 'grows with each event of the workspace; the cursor of every channel',
    }),
    kind: ActivityKindSchema,
    subject_type: Type.String({ description: 'agent, workflow, run, document, source, settings or system' }),
    subject_id: Type.Union([Type.String(), Type.Null()], {
      description: 'the subject’s id, when it has one',
    }),
    message: Type.String({ description: 'human-readable, e.g. Agent “Researcher” created' }),
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'details for clients; depends on kind' }),
    actor: Type.Union([Type.String(), Type.Null()], {
      description: 'the user whose request caused the event; null for the system’s own work',
    }),
    created_at: Timestamp(),
  },
  { $id: 'ActivityEvent' },
);

/** The filters every channel of the feed accepts (list, SSE, WebSocket). */
const filterQuery = {
  kind: Type.Optional(
    Type.Array(ActivityKindSchema, {
      minItems: 1,
      maxItems: 32,
      description:
        'only these kinds; repeat the parameter for several (kind=agent.created&kind=workflow.failed)',
    }),
  ),
  subject_type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 30,
      description: 'agent, workflow, run, document, source, settings or system',
    }),
  ),
  subject_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'one subject’s events' }),
  ),
};

export const ListActivityQuery = Type.Object({
  ...filterQuery,
  before: Type.Optional(
    EventId({ minimum: 1, description: 'only events older than this id: the previous page’s next_cursor' }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'page size, 1 to 200' }),
});

export const ActivityPage = Type.Object(
  {
    items: Type.Array(ActivityEventSchema),
    limit: Type.Integer(),
    next_cursor: Type.Union([Type.Integer(), Type.Null()], {
      description: 'pass as `before` for the next (older) page; null when no event is left',
    }),
    next: Type.Union([Type.String(), Type.Null()], {
      description: 'the next page’s path and query (same filters, before=next_cursor); null at the end',
    }),
  },
  { $id: 'ActivityPage' },
);

const after = Type.Optional(
  EventId({
    description:
      'replay the events after this id, then follow live (the Last-Event-ID header wins over it); without either, only new events',
  }),
);

export const StreamActivityQuery = Type.Object({ ...filterQuery, after });

export const StreamActivityHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({ description: 'the id of the last event received, sent by EventSource on reconnect' }),
  ),
});

export const ActivitySocketQuery = Type.Object({
  ...filterQuery,
  after,
  ticket: Type.Optional(
    Type.String({
      maxLength: 100,
      description:
        'a single-use ticket from POST /api/activity/ws-ticket, for clients that cannot send headers',
    }),
  ),
});

export const WsTicketSchema = Type.Object({
  ticket: Type.String({ description: 'pass as ?ticket= to GET /api/ws; redeemable once' }),
  expires_in: Type.Integer({ description: 'seconds until the ticket expires' }),
});

/** The events of `GET /activity/stream`, as `EventStream` documents them. */
export const ActivityStreamEvents = [
  {
    name: 'ready',
    data: Type.Object({ after: Type.Integer({ description: 'the id the stream follows from' }) }),
    description: 'first: the stream is following',
  },
  {
    name: Type.String({ description: 'the event’s kind, e.g. run.completed (docs/activity.md)' }),
    id: 'the event id: send it back as Last-Event-ID to resume after it',
    data: ActivityEventSchema,
    description: 'an activity event, named by its kind',
  },
  StreamErrorEvent,
];
