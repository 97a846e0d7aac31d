import {
  bigint,
  bigserial,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { type Static, Type } from 'typebox';
import { StringEnum } from '../../lib/typebox.ts';
import { agents } from './agents.ts';
import { createdAt, updatedAt } from './columns.ts';
import type { ToolCallRecord } from './runs.ts';
import type { AppliedPrice } from './settings.ts';
import { workspaces } from './workspaces.ts';

export const MessageRoleSchema = StringEnum(['user', 'assistant'] as const);
export type MessageRole = Static<typeof MessageRoleSchema>;

/** Tokens of one model answer. */
export const UsageSchema = Type.Object({
  input_tokens: Type.Integer({ minimum: 0 }),
  output_tokens: Type.Integer({ minimum: 0 }),
});
export type Usage = Static<typeof UsageSchema>;

/** A passage of the workspace's knowledge that an answer quotes, numbered as the answer cites it. */
export const CitationSchema = Type.Object({
  index: Type.Integer({ minimum: 1, description: 'the number the answer cites it by, `[1]`' }),
  document_id: Type.String({ format: 'uuid' }),
  title: Type.String(),
  source: Type.String({ description: 'the name of the knowledge source' }),
  heading_path: Type.Array(Type.String(), { description: 'the headings the passage sits under' }),
  score: Type.Number({ description: 'the search score (scale per mode)' }),
  passage: Type.String({ description: 'the quoted text, cut to 600 characters' }),
});
export type Citation = Static<typeof CitationSchema>;

/** A chat thread of one user in one workspace, optionally with one agent. */
export const conversations = pgTable(
  'conversations',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    agent_id: uuid('agent_id').references(() => agents.id, { onDelete: 'set null' }),
    user_id: varchar('user_id', { length: 255 }).notNull(),
    title: varchar('title', { length: 255 }).notNull(),
    created_at: createdAt(),
    updated_at: updatedAt(),
    last_message_at: timestamp('last_message_at', { withTimezone: true, mode: 'date' })
      .notNull()
      .defaultNow(),
  },
  (t) => [
    index('conversations_workspace_last_idx').on(
      t.workspace_id,
      t.last_message_at.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
  ],
);

/** One message; the id orders a conversation's history. */
export const messages = pgTable(
  'messages',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    conversation_id: uuid('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    workspace_id: uuid('workspace_id').notNull(),
    role: varchar('role', { length: 20 }).$type<MessageRole>().notNull(),
    content: text('content').notNull(),
    tool_calls: jsonb('tool_calls').$type<ToolCallRecord[]>().notNull().default([]),
    citations: jsonb('citations').$type<Citation[]>().notNull().default([]),
    usage: jsonb('usage').$type<Usage>(),
    cost: doublePrecision('cost'),
    /** The prices `cost` was computed with (null: no price, or no answer yet). */
    price: jsonb('price').$type<AppliedPrice>(),
    latency_ms: integer('latency_ms'),
    provider: varchar('provider', { length: 100 }),
    model: varchar('model', { length: 255 }),
    error: text('error'),
    created_at: createdAt(),
  },
  (t) => [index('messages_conversation_idx').on(t.conversation_id, t.id)],
);

/**
 * The `Idempotency-Key` of a chat turn: who sent it, a digest of the request it came with, and
 * the answer it started. The primary key decides between two requests with the same key (the
 * claim is the statement that stores the user's message), so a retried POST replays its turn
 * instead of calling the model again. Deleted with the answer (and so with its conversation).
 */
export const chatTurnKeys = pgTable(
  'chat_turn_keys',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** Keys are per user: two members may choose the same key. */
    user_id: varchar('user_id', { length: 255 }).notNull(),
    key: varchar('key', { length: 255 }).notNull(),
    /** SHA-256 (hex) of the request's message, conversation and agent: a reused key must match. */
    request_hash: varchar('request_hash', { length: 64 }).notNull(),
    /** The assistant's answer the turn wrote (the user's message is the one before it). */
    message_id: bigint('message_id', { mode: 'number' })
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    /** The `done` event's payload once the answer finished (its fallbacks are stored nowhere else). */
    done: jsonb('done').$type<Record<string, unknown>>(),
    created_at: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.workspace_id, t.user_id, t.key] }),
    index('chat_turn_keys_message_idx').on(t.message_id),
  ],
);
