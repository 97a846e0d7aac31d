import { and, desc, eq, sql } from 'drizzle-orm';
import {
  type CursorPage,
  type Page,
  type PageRequest,
  pageByCursor,
  paginate,
  totalCount,
} from '../../db/queries.ts';
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
  'content' | 'tool_calls' | 'citations' | 'usage' | 'cost' | 'latency_ms' | 'provider' | 'model' | 'error'
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

    async insertConversation(
      owner: Owner,
      values: { id?: string; title: string; agent_id: string | null },
    ): Promise<ConversationRow> {
      const [row] = await db
        .insert(conversations)
        .values({ workspace_id: owner.workspaceId, user_id: owner.userId, ...values })
        .returning();
      if (!row) throw new Error('conversation insert returned nothing');
      return row;
    },

    /** Moves the conversation to the top of its owner's list. */
    async touchConversation(workspaceId: string, id: string): Promise<void> {
      await db
        .update(conversations)
        .set({ last_message_at: sql`now()`, updated_at: sql`now()` })
        .where(and(eq(conversations.workspace_id, workspaceId), eq(conversations.id, id)));
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

    async insertMessage(values: NewMessage): Promise<MessageRow> {
      const [row] = await db.insert(messages).values(values).returning();
      if (!row) throw new Error('message insert returned nothing');
      return row;
    },

    /** Writes how an assistant message ended (its answer, usage and cost, or its error). */
    async completeMessage(workspaceId: string, id: number, outcome: MessageOutcome): Promise<void> {
      await db
        .update(messages)
        .set(outcome)
        .where(and(eq(messages.workspace_id, workspaceId), eq(messages.id, id)));
    },

    /** The last `limit` messages of a conversation, oldest first (what memory chooses from). */
    async recentMessages(workspaceId: string, conversationId: string, limit: number): Promise<MessageRow[]> {
      const rows = await db
        .select()
        .from(messages)
        .where(and(eq(messages.workspace_id, workspaceId), eq(messages.conversation_id, conversationId)))
        .orderBy(desc(messages.id))
        .limit(limit);
      return rows.reverse();
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
