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
import { conversations, messages } from '../../db/schema/chat.ts';
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
     * that order). Answers the placeholder's id, or undefined when the conversation is gone.
     * One statement is one round trip and atomic without a transaction of its own.
     */
    async startTurn(
      owner: Owner,
      turn: {
        conversationId: string;
        start?: { title: string; agent_id: string | null };
        question: string;
        placeholderError: string;
      },
    ): Promise<number | undefined> {
      const { workspaceId, userId } = owner;
      const conversation = turn.start
        ? sql`insert into conversations (id, workspace_id, user_id, title, agent_id)
            values (${turn.conversationId}, ${workspaceId}, ${userId}, ${turn.start.title}, ${turn.start.agent_id})
            returning id`
        : sql`update conversations set last_message_at = now(), updated_at = now()
            where workspace_id = ${workspaceId} and user_id = ${userId} and id = ${turn.conversationId}
            returning id`;
      const result = await db.execute(sql`with conversation as (${conversation}),
        inserted as (
          insert into messages (conversation_id, workspace_id, role, content, error)
          select c.id, ${workspaceId}, m.role, m.content, m.error
          from conversation c,
            (values (1, 'user', ${turn.question}, null), (2, 'assistant', '', ${turn.placeholderError}))
              as m(n, role, content, error)
          order by m.n
          returning id, role
        )
        select id::float8 as id from inserted where role = 'assistant'`);
      const [row] = rowsOf<{ id: number }>(result);
      return row ? Number(row.id) : undefined;
    },

    /**
     * Ends a turn in one statement: how the assistant's message ended (its answer, usage and
     * cost, or its error) and its conversation moved to the top of its owner's list.
     */
    async finishTurn(
      workspaceId: string,
      conversationId: string,
      answerId: number,
      outcome: MessageOutcome,
    ): Promise<void> {
      const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));
      await db.execute(sql`with answer as (
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
