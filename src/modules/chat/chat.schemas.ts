import { type TSchema, Type } from 'typebox';
import { CitationSchema, MessageRoleSchema, UsageSchema } from '../../db/schema/chat.ts';
import { ToolCallRecordSchema } from '../../db/schema/runs.ts';
import { AppliedPriceSchema } from '../../db/schema/settings.ts';
import {
  EventStream,
  IdempotencyKeyHeader,
  IdempotentReplayedHeader,
  Page,
  PageQuery,
  StreamErrorEvent,
  Timestamp,
  Uuid,
} from '../../http/schemas.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

export const ChatBody = Type.Object(
  {
    message: Type.String({ minLength: 1, maxLength: 100_000, description: 'what the user says' }),
    conversation_id: Type.Optional(
      Uuid({ description: 'continue this conversation of yours; a new conversation when absent' }),
    ),
    agent_id: Type.Optional(
      Uuid({
        description:
          'talk to this agent (its model, system prompt and tools); a conversation keeps the agent it started with',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ChatHeaders = Type.Object({
  'idempotency-key': IdempotencyKeyHeader(
    'your id for this turn, unique per workspace and user: a retry with the same key replays the turn instead of asking the model again',
  ),
});

export const ConversationSchema = Type.Object(
  {
    id: Uuid(),
    workspace_id: Uuid(),
    agent_id: Nullable(Uuid()),
    user_id: Type.String(),
    title: Type.String({ description: 'the first message, on one line, cut at 80 characters' }),
    created_at: Timestamp(),
    updated_at: Timestamp(),
    last_message_at: Timestamp(),
  },
  { $id: 'Conversation' },
);

export const MessageSchema = Type.Object(
  {
    id: Type.Integer({ description: 'orders the history; the cursor of `after`' }),
    conversation_id: Uuid(),
    role: MessageRoleSchema,
    content: Type.String(),
    tool_calls: Type.Array(ToolCallRecordSchema),
    citations: Type.Array(CitationSchema, {
      description: 'the knowledge passages the answer quotes, as its `citation` events gave them',
    }),
    usage: Nullable(UsageSchema),
    cost: Nullable(
      Type.Number({ description: 'in the workspace’s price unit; 0 when the model has no price' }),
    ),
    price: Nullable(AppliedPriceSchema),
    latency_ms: Nullable(Type.Integer()),
    provider: Nullable(Type.String()),
    model: Nullable(Type.String()),
    error: Nullable(Type.String({ description: 'why an answer failed or stopped, as `<code>: <message>`' })),
    created_at: Timestamp(),
  },
  { $id: 'Message' },
);

export const ConversationPage = Page(ConversationSchema);

export const ListConversationsQuery = Type.Object({ ...PageQuery });

export const ConversationHistoryQuery = Type.Object({
  after: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'the last message id you have',
    }),
  ),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 100, description: 'messages per page, 1 to 200' }),
});

export const ConversationDetail = Type.Object(
  {
    ...ConversationSchema.properties,
    messages: Type.Array(MessageSchema, { description: 'oldest first' }),
    next_cursor: Nullable(Type.Integer({ description: 'the `after` of the next page; null at the end' })),
  },
  { $id: 'ConversationDetail' },
);

/** The documented shape of the answer stream (written by `http/sse.ts`, not serialised by this schema). */
/** One event of a chat answer: its id is its position in the answer, from 1. */
const chatEvent = (name: string, data: TSchema) => ({
  name,
  data,
  id: 'the event’s position in this answer, from 1',
});

export const ChatStreamResponse = EventStream(
  'Server-Sent Events, ids counting from 1: `start` {conversation_id, message_id}, `delta` {text}, `tool_call` {id, name, input}, `tool_result` {id, name, output, error?}, `citation` {index, document_id, title, source, heading_path, score, passage} (a knowledge passage the answer quotes as `[index]`), then `done` {message_id, usage: {input_tokens, output_tokens}, cost, price (the per-million prices the cost was computed with, or null), latency_ms, provider, model, fallbacks, degraded? (set when the built-in local provider answered because every model before it failed: which and why)} or `error` {code, message}; a `: heartbeat` comment every 15 s.',
  [
    chatEvent('start', Type.Object({ conversation_id: Uuid(), message_id: Type.Integer() })),
    chatEvent('delta', Type.Object({ text: Type.String() })),
    chatEvent('tool_call', Type.Object({ id: Type.String(), name: Type.String(), input: Type.Unknown() })),
    chatEvent(
      'tool_result',
      Type.Object({
        id: Type.String(),
        name: Type.String(),
        output: Type.Unknown(),
        error: Type.Optional(Type.String()),
      }),
    ),
    chatEvent('citation', CitationSchema),
    chatEvent(
      'done',
      Type.Object(
        {
          message_id: Type.Integer(),
          usage: UsageSchema,
          cost: Nullable(Type.Number()),
          price: Nullable(AppliedPriceSchema),
          latency_ms: Type.Integer(),
          provider: Type.String(),
          model: Type.String(),
        },
        { additionalProperties: true },
      ),
    ),
    StreamErrorEvent,
  ],
  IdempotentReplayedHeader(
    'sent when a repeated Idempotency-Key replays the turn it started (its stored events; the model is not called)',
  ),
);
