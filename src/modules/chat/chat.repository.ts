import { and, desc, eq, getTableColumns, sql } from 'drizzle-orm';
import {
  type CursorPage,
  type Page,
  type PageRequest,
  pageByCursor,
  paginate,
  totalCount,
} from '../../db/queries.ts';
import { rowsOf } from '../../db/rows.ts';
import { chatTurnKeys, conversations, messages } from '../../db/schema/chat.ts';
import type { Db } from '../../db/transaction.ts';

/** The chat vocabulary, for the service (which imports no db/ file but transaction.ts). */
export type { MessageRole, Usage } from '../../db/schema/chat.ts';

export type ConversationRow = typeof conversations.$inferSelect;
export type MessageRow = typeof messages.$inferSelect;
/** A tool call of an answer, with its input and output (the runs' record shape). */
export type ToolCallRecord = MessageRow['tool_calls'][number];
export type Citation = MessageRow['citations'][number];
export type NewMessage = Omit<typeof messages.$inferInsert, 'id' | 'created_at'>;
export type MessageOutcome = Pick<
  NewMessage,
  | 'content'
  | 'tool_calls'
  | 'citations'
  | 'usage'
  | 'cost'
  | 'price'
  | 'latency_ms'
  | 'provider'
  | 'model'
  | 'error'
>;

/** The two rows a turn writes: the user's message and the assistant's answer. */
export interface TurnIds {
  questionId: number;
  answerId: number;
}

/** A turn found by its `Idempotency-Key`: the key's record and the answer as it stands. */
export type KeyedTurn = Pick<typeof chatTurnKeys.$inferSelect, 'request_hash' | 'done'> &
  Pick<MessageRow, 'conversation_id' | 'content' | 'tool_calls' | 'citations' | 'error'> & {
    message_id: number;
    /** Milliseconds since the key was claimed, by the database's clock. */
    age_ms: number;
  };

/** PostgreSQL's unique_violation (drizzle wraps the driver's error): another request took the key. */
const isUniqueViolation = (error: unknown): boolean =>
  (error as { code?: string }).code === '23505' ||
  (error as { cause?: { code?: string } }).cause?.code === '23505';

/** Whose conversations: a conversation belongs to a workspace and to the user who started it. */
export interface Owner {
  workspaceId: string;
  userId: string;
}

/** Data access for conversations and their messages; every query is scoped by workspace and user. */
export function createChatRepository(db: Db) {
  const owned = (owner: Owner) =>
    and(eq(conversations.workspace_id, owner.workspaceId), eq(conversations.user_id, owner.userId));

  return {
    async findConversation(owner: Owner, id: string): Promise<ConversationRow | undefined> {
      const [row] = await db
        .select()
        .from(conversations)
        .where(and(owned(owner), eq(conversations.id, id)));
      return row;
    },

    /**
     * The owner's conversation with its last `limit` messages (role and content, oldest first:
     * what memory chooses from), in one statement.
     */
    async findConversationWithRecent(
      owner: Owner,
      id: string,
      limit: number,
    ): Promise<(ConversationRow & { recent: Array<Pick<MessageRow, 'role' | 'content'>> }) | undefined> {
      const recent = sql<Array<Pick<MessageRow, 'role' | 'content'>>>`coalesce((
        select json_agg(json_build_object('role', m.role, 'content', m.content) order by m.id)
        from (select id, role, content from ${messages}
              where ${messages.workspace_id} = ${owner.workspaceId} and ${messages.conversation_id} = ${id}
              order by id desc limit ${limit}) m), '[]'::json)`;
      const [row] = await db
        .select({ ...getTableColumns(conversations), recent })
        .from(conversations)
        .where(and(owned(owner), eq(conversations.id, id)));
      return row;
    },

    /** The owner's conversations, most recent message first, then by id, so pages are stable. */
    async listConversations(owner: Owner, page: PageRequest): Promise<Page<ConversationRow>> {
      const rows = await db
        .select({
          id: conversations.id,
          workspace_id: conversations.workspace_id,
          agent_id: conversations.agent_id,
          user_id: conversations.user_id,
          title: conversations.title,
          created_at: conversations.created_at,
          updated_at: conversations.updated_at,
          last_message_at: conversations.last_message_at,
          total: totalCount(),
        })
        .from(conversations)
        .where(owned(owner))
        .orderBy(desc(conversations.last_message_at), desc(conversations.id))
        .limit(page.limit)
        .offset(page.offset);
      return paginate(page, rows, async () => {
        const [row] = await db
          .select({ n: sql<number>`count(*)`.mapWith(Number) })
          .from(conversations)
          .where(owned(owner));
        return row?.n ?? 0;
      });
    },

    /**
     * Starts a turn in one statement: the conversation created (`start` given) or moved to the
     * top of its owner's list, then the user's message and the assistant's placeholder (ids in
     * that order), and with `key` the key's claim on them. Answers both ids; undefined when the
     * conversation is gone; `'key_taken'` when another turn of the owner already holds the key
     * (its primary key decides, so of two racing requests one claims and the other is told).
     * One statement is one round trip and atomic without a transaction of its own: a key that
     * is taken stores nothing.
     */
    async startTurn(
      owner: Owner,
      turn: {
        conversationId: string;
        start?: { title: string; agent_id: string | null };
        question: string;
        placeholderError: string;
        key?: { key: string; requestHash: string };
      },
    ): Promise<TurnIds | 'key_taken' | undefined> {
      const { workspaceId, userId } = owner;
      const conversation = turn.start
        ? sql`insert into conversations (id, workspace_id, user_id, title, agent_id)
            values (${turn.conversationId}, ${workspaceId}, ${userId}, ${turn.start.title}, ${turn.start.agent_id})
            returning id`
        : sql`update conversations set last_message_at = now(), updated_at = now()
            where workspace_id = ${workspaceId} and user_id = ${userId} and id = ${turn.conversationId}
            returning id`;
      const claim = turn.key
        ? sql`, claimed as (
            insert into chat_turn_keys (workspace_id, user_id, key, request_hash, message_id)
            select ${workspaceId}, ${userId}, ${turn.key.key}, ${turn.key.requestHash}, id
            from inserted where role = 'assistant'
          )`
        : sql``;
      try {
        const result = await db.execute(sql`with conversation as (${conversation}),
          inserted as (
            insert into messages (conversation_id, workspace_id, role, content, error)
            select c.id, ${workspaceId}, m.role, m.content, m.error
            from conversation c,
              (values (1, 'user', ${turn.question}, null), (2, 'assistant', '', ${turn.placeholderError}))
                as m(n, role, content, error)
            order by m.n
            returning id, role
          )${claim}
          select id::float8 as id, role from inserted`);
        const rows = rowsOf<{ id: number; role: string }>(result);
        const question = rows.find((row) => row.role === 'user');
        const answer = rows.find((row) => row.role === 'assistant');
        return question && answer
          ? { questionId: Number(question.id), answerId: Number(answer.id) }
          : undefined;
      } catch (error) {
        if (turn.key && isUniqueViolation(error)) return 'key_taken';
        throw error;
      }
    },

    /**
     * Takes back a turn that failed before the model's first output, in one statement, so that
     * nothing of it stays: a conversation it created goes (with its messages and key); else its
     * two messages go (and the key with them), and the conversation's times are put back unless
     * a later turn moved them since.
     */
    async releaseTurn(
      owner: Owner,
      turn: TurnIds & {
        conversationId: string;
        /** The conversation's times before the turn; absent when the turn created it. */
        before?: Pick<ConversationRow, 'last_message_at' | 'updated_at'>;
      },
    ): Promise<void> {
      const { workspaceId, userId } = owner;
      if (!turn.before) {
        await db.execute(sql`delete from conversations
          where workspace_id = ${workspaceId} and user_id = ${userId} and id = ${turn.conversationId}`);
        return;
      }
      await db.execute(sql`with gone as (
          delete from messages
          where workspace_id = ${workspaceId} and conversation_id = ${turn.conversationId}
            and id in (${turn.questionId}, ${turn.answerId})
        )
        update conversations set last_message_at = ${turn.before.last_message_at},
          updated_at = ${turn.before.updated_at}
        where workspace_id = ${workspaceId} and user_id = ${userId} and id = ${turn.conversationId}
          and not exists (select 1 from messages
            where conversation_id = ${turn.conversationId} and id > ${turn.answerId})`);
    },

    /** The owner's turn that `key` started, with its answer as it stands; undefined when none did. */
    async findKeyedTurn(owner: Owner, key: string): Promise<KeyedTurn | undefined> {
      const [row] = await db
        .select({
          request_hash: chatTurnKeys.request_hash,
          done: chatTurnKeys.done,
          age_ms:
            sql<number>`(extract(epoch from now() - ${chatTurnKeys.created_at}) * 1000)::float8`.mapWith(
              Number,
            ),
          message_id: messages.id,
          conversation_id: messages.conversation_id,
          content: messages.content,
          tool_calls: messages.tool_calls,
          citations: messages.citations,
          error: messages.error,
        })
        .from(chatTurnKeys)
        .innerJoin(messages, eq(messages.id, chatTurnKeys.message_id))
        .where(
          and(
            eq(chatTurnKeys.workspace_id, owner.workspaceId),
            eq(chatTurnKeys.user_id, owner.userId),
            eq(chatTurnKeys.key, key),
          ),
        );
      return row;
    },

    /**
     * Ends a turn in one statement: how the assistant's message ended (its answer, usage and
     * cost, or its error) and its conversation moved to the top of its owner's list; with
     * `done`, the `done` event's payload kept with the turn's key, for a retry to replay.
     */
    async finishTurn(
      workspaceId: string,
      conversationId: string,
      answerId: number,
      outcome: MessageOutcome,
      done?: Record<string, unknown>,
    ): Promise<void> {
      const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));
      const keyed = done
        ? sql`keyed as (
            update chat_turn_keys set done = ${json(done)}::jsonb
            where workspace_id = ${workspaceId} and message_id = ${answerId}
          ),`
        : sql``;
      await db.execute(sql`with ${keyed} answer as (
          update messages set content = ${outcome.content},
            tool_calls = coalesce(${json(outcome.tool_calls)}::jsonb, tool_calls),
            citations = coalesce(${json(outcome.citations)}::jsonb, citations),
            usage = ${json(outcome.usage)}::jsonb, cost = ${outcome.cost ?? null},
            price = ${json(outcome.price)}::jsonb,
            latency_ms = ${outcome.latency_ms ?? null}, provider = ${outcome.provider ?? null},
            model = ${outcome.model ?? null}, error = ${outcome.error ?? null}
          where workspace_id = ${workspaceId} and id = ${answerId}
        )
        update conversations set last_message_at = now(), updated_at = now()
        where workspace_id = ${workspaceId} and id = ${conversationId}`);
    },

    /** A conversation's history, oldest first, by cursor (the last message id the client has). */
    pageMessages(
      workspaceId: string,
      conversationId: string,
      request: { after?: number; limit: number },
    ): Promise<CursorPage<MessageRow>> {
      return pageByCursor({ ...request, order: 'oldest_first' }, messages.id, ({ where, orderBy, limit }) =>
        db
          .select()
          .from(messages)
          .where(
            and(eq(messages.workspace_id, workspaceId), eq(messages.conversation_id, conversationId), where),
          )
          .orderBy(orderBy)
          .limit(limit),
      );
    },
  };
}

export type ChatRepository = ReturnType<typeof createChatRepository>;
