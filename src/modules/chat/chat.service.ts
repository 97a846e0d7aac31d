import { randomUUID } from 'node:crypto';
import type { Caller } from '../../caller.ts';
import type { Db } from '../../db/transaction.ts';
import { AppError, infrastructureFailure, invalid, notFound } from '../../errors.ts';
import { startAgentTurn } from '../agents/agent-turn.service.ts';
import type { AgentsService } from '../agents/agents.service.ts';
import type { PoliciesService } from '../policies/policies.service.ts';
import type { ModelTurns } from '../providers/providers.service.ts';
import { createChatRepository, type MessageOutcome, type MessageRow } from './chat.repository.ts';
import { DEFAULT_HISTORY_TOKEN_BUDGET, selectMemory } from './chat-memory.ts';

/** Characters of the first message a new conversation's title keeps. */
export const TITLE_LENGTH = 80;
/** Earlier messages read for memory at most (the token budget then chooses among them). */
const MEMORY_WINDOW = 200;

/** One event of a chat answer, as `http/sse.ts` writes it: a name, a JSON payload, an id. */
export interface ChatEvent {
  event: 'start' | 'delta' | 'tool_call' | 'tool_result' | 'citation' | 'done';
  data: unknown;
  /** The event's position in this answer's stream, from 1. */
  id: number;
}

export interface ChatInput {
  message: string;
  conversation_id?: string;
  agent_id?: string;
}

export interface ChatDependencies {
  db: Db;
  /** Model turns, the agent's tools bound and the workspace's knowledge lent (`createModelTurns`). */
  gateway: ModelTurns;
  agents: Pick<AgentsService, 'get'>;
  /** Assembles the context of an agent that has a policy (docs/policies.md). */
  policies?: Pick<PoliciesService, 'assembleForAgent'>;
  /** Tokens of earlier messages a turn may carry (default `DEFAULT_HISTORY_TOKEN_BUDGET`). */
  historyTokenBudget?: number;
}

type Owner = Pick<Caller, 'userId' | 'workspaceId' | 'tenantId'>;

/** The title of a conversation: its first message on one line, cut at `TITLE_LENGTH` characters. */
export function titleOf(message: string): string {
  const line = message.replace(/\s+/g, ' ').trim();
  return line.length > TITLE_LENGTH ? `${line.slice(0, TITLE_LENGTH - 1).trimEnd()}…` : line;
}

/** A message as the API shows it (the row without its workspace). */
const present = ({ workspace_id: _workspace, ...message }: MessageRow) => message;

/**
 * Chat: one user's conversations with a model (and optionally an agent: its model, system
 * prompt and tools). An answer streams as events; everything that can fail before the model's
 * first output (an unknown conversation or agent, every provider down) fails before the first
 * event, so the route answers it as problem+json and nothing is stored. Once the first output
 * arrives, the user's message and the answer are stored, and the answer is completed (or marked
 * with its error, or as aborted) when the stream ends.
 */
export function createChatService(deps: ChatDependencies) {
  const repo = createChatRepository(deps.db);
  const budget = deps.historyTokenBudget ?? DEFAULT_HISTORY_TOKEN_BUDGET;

  return {
    async *send(caller: Owner, input: ChatInput, signal: AbortSignal): AsyncGenerator<ChatEvent> {
      const owner = { workspaceId: caller.workspaceId, userId: caller.userId };
      const existing = input.conversation_id
        ? await repo.findConversationWithRecent(owner, input.conversation_id, MEMORY_WINDOW)
        : undefined;
      if (input.conversation_id && !existing) throw notFound('conversation', input.conversation_id);
      if (existing && input.agent_id && existing.agent_id !== input.agent_id) {
        throw invalid(
          'body.agent_id',
          'differs from the agent the conversation was started with; start a new conversation',
        );
      }
      const agentId = input.agent_id ?? existing?.agent_id ?? null;
      const agent = agentId ? await deps.agents.get(caller, agentId) : undefined;
      const memory = selectMemory(existing?.recent ?? [], budget);

      // Named before it is stored: a policy's experiment assigns by conversation.
      const conversationId = existing?.id ?? randomUUID();
      // An agent with a policy speaks its assembled context (the conversation is the unit).
      const agentTurn = await startAgentTurn(
        { models: deps.gateway, policies: deps.policies },
        {
          workspaceId: caller.workspaceId,
          userId: caller.userId,
          ...(agent ? { agent } : {}),
          usedBy: { conversationId },
          ...(agent?.system_prompt ? { system: agent.system_prompt } : {}),
          history: memory,
          prompt: input.message,
          facts: { conversationId, variables: {}, context: {} },
          answerFromKnowledge: true,
          signal,
        },
      );
      const turn = agentTurn.events;
      // The first output decides: a failure before it is the request's error, with nothing stored.
      let next = await turn.next();

      // Stored before it streams, so an answer cut off by a crash still shows in the history.
      const answerId = await repo
        .startTurn(owner, {
          conversationId,
          ...(existing ? {} : { start: { title: titleOf(input.message), agent_id: agentId } }),
          question: input.message,
          placeholderError: 'incomplete: the answer was interrupted before it finished',
        })
        .catch(async (error: unknown) => {
          await turn.return?.();
          throw error;
        });
      if (answerId === undefined) {
        // Deleted while the provider answered its first output.
        await turn.return?.();
        throw notFound('conversation', conversationId);
      }
      const conversation = { id: conversationId };
      const answer = { id: answerId };

      let sequence = 0;
      const event = (name: ChatEvent['event'], data: unknown): ChatEvent => ({
        event: name,
        data,
        id: ++sequence,
      });
      // The turn collects the answer's text, tool calls and citations as its events pass.
      const { toolCalls, citations } = agentTurn;
      let settled = false;
      const settle = async (outcome: MessageOutcome) => {
        settled = true;
        await repo.finishTurn(caller.workspaceId, conversation.id, answer.id, outcome);
      };

      try {
        yield event('start', { conversation_id: conversation.id, message_id: answer.id });
        while (!next.done) {
          const item = next.value;
          switch (item.type) {
            case 'delta':
              yield event('delta', { text: item.text });
              break;
            case 'tool_call':
              yield event('tool_call', { id: item.id, name: item.name, input: item.input });
              break;
            case 'tool_result':
              yield event('tool_result', {
                id: item.id,
                name: item.name,
                output: item.output,
                ...(item.error === undefined ? {} : { error: item.error }),
              });
              break;
            case 'citation':
              yield event('citation', item.citation);
              break;
          }
          next = await turn.next();
        }
        const { finish } = agentTurn;
        if (!finish) throw new Error('the model stream ended without a finish event');
        await settle({
          content: finish.text,
          tool_calls: toolCalls,
          citations,
          usage: finish.usage,
          cost: finish.cost,
          price: finish.price,
          latency_ms: finish.latency_ms,
          provider: finish.provider,
          model: finish.model,
          error: null,
        });
        yield event('done', {
          message_id: answer.id,
          usage: finish.usage,
          cost: finish.cost,
          price: finish.price,
          latency_ms: finish.latency_ms,
          provider: finish.provider,
          model: finish.model,
          fallbacks: finish.fallbacks,
          // Never silent: the built-in provider answered because every model before it failed.
          ...(finish.degraded ? { degraded: finish.degraded } : {}),
        });
      } catch (error) {
        if (!settled) {
          const known = infrastructureFailure(error) ?? error;
          const reason = signal.aborted
            ? abortReason(signal)
            : known instanceof AppError
              ? `${known.code}: ${known.message}`
              : 'internal_error: the answer failed';
          await settle({ content: agentTurn.text, tool_calls: toolCalls, citations, error: reason });
        }
        throw error;
      } finally {
        // Reached without an outcome when the stream's reader stopped early (the client left).
        if (!settled)
          await settle({
            content: agentTurn.text,
            tool_calls: toolCalls,
            citations,
            error: abortReason(signal),
          });
        await turn.return?.();
      }
    },

    /** The caller's conversations in the workspace, most recent message first. */
    listConversations: (caller: Owner, page: { limit: number; offset: number }) =>
      repo.listConversations({ workspaceId: caller.workspaceId, userId: caller.userId }, page),

    /** One of the caller's conversations with a page of its history (oldest first, by cursor). */
    async getConversation(caller: Owner, id: string, page: { after?: number; limit: number }) {
      const conversation = await repo.findConversation(
        { workspaceId: caller.workspaceId, userId: caller.userId },
        id,
      );
      if (!conversation) throw notFound('conversation', id);
      const history = await repo.pageMessages(caller.workspaceId, id, page);
      return { ...conversation, messages: history.items.map(present), next_cursor: history.next_cursor };
    },
  };
}

export type ChatService = ReturnType<typeof createChatService>;

/**
 * Why an answer stopped early, as stored with it: the code of the error that stopped the stream
 * (`access_revoked` when the caller's access was withdrawn), else the client went away.
 */
function abortReason(signal: AbortSignal): string {
  return signal.reason instanceof AppError
    ? `aborted: ${signal.reason.code}`
    : 'aborted: the client disconnected';
}
