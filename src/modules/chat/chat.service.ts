import { createHash, randomUUID } from 'node:crypto';
import type { Caller } from '../../caller.ts';
import type { Db } from '../../db/transaction.ts';
import {
  AppError,
  ERROR_CODES,
  type ErrorCode,
  infrastructureFailure,
  invalid,
  notFound,
} from '../../errors.ts';
import { type AgentTurn, startAgentTurn } from '../agents/agent-turn.service.ts';
import type { AgentsService } from '../agents/agents.service.ts';
import type { PoliciesService } from '../policies/policies.service.ts';
import type { ModelTurns } from '../providers/providers.service.ts';
import {
  createChatRepository,
  type KeyedTurn,
  type MessageOutcome,
  type MessageRow,
} from './chat.repository.ts';
import { DEFAULT_HISTORY_TOKEN_BUDGET, selectMemory } from './chat-memory.ts';

/** Characters of the first message a new conversation's title keeps. */
export const TITLE_LENGTH = 80;
/** Earlier messages read for memory at most (the token budget then chooses among them). */
const MEMORY_WINDOW = 200;
/** What an answer says while it streams, and after a crash cut it off: it has not finished. */
const PLACEHOLDER_ERROR = 'incomplete: the answer was interrupted before it finished';
/**
 * How long an unfinished keyed turn counts as still streaming (a retry is told to wait); past
 * it, the process that streamed it is taken to have died and the turn is replayed as cut off.
 */
export const TURN_IN_PROGRESS_MS = 10 * 60_000;
/** Seconds a retry of a turn still streaming is asked to wait (`Retry-After`). */
const IN_PROGRESS_RETRY_AFTER_SECONDS = 2;

/** One event of a chat answer, as `http/sse.ts` writes it: a name, a JSON payload, an id. */
export interface ChatEvent {
  /** `error` only in a replay: a live answer's failure is thrown, and `http/sse.ts` writes it. */
  event: 'start' | 'delta' | 'tool_call' | 'tool_result' | 'citation' | 'done' | 'error';
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

/** A client's retry key for a turn (the `Idempotency-Key` header). */
export interface TurnIdempotency {
  /** Unique per workspace and user: a request with a key already used continues that turn. */
  key: string;
  /** Called before the first event when the turn is a replay (the route sets its header). */
  onReplay: () => void;
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
 * event, so the route answers it as problem+json and nothing is kept. The user's message and
 * an answer marked incomplete are stored before the model is called (with the turn's
 * `Idempotency-Key`, if any), taken back if it fails before its first output, and the answer
 * is completed (or marked with its error, or as aborted) when the stream ends.
 */
export function createChatService(deps: ChatDependencies) {
  const repo = createChatRepository(deps.db);
  const budget = deps.historyTokenBudget ?? DEFAULT_HISTORY_TOKEN_BUDGET;

  return {
    /**
     * Streams one turn. With `idempotency`, the key is claimed in the statement that stores the
     * user's message, before the model is called: a request whose key already started a turn
     * replays that turn (`replay`) without calling the model, or is told to wait while it still
     * streams (409 `idempotency_in_progress`), or, with another body, is refused (422
     * `idempotency_key_reused`). A turn that fails before the model's first output is taken
     * back whole, key included, so its retry is a new attempt.
     */
    async *send(
      caller: Owner,
      input: ChatInput,
      signal: AbortSignal,
      idempotency?: TurnIdempotency,
    ): AsyncGenerator<ChatEvent> {
      const owner = { workspaceId: caller.workspaceId, userId: caller.userId };
      const requestHash = idempotency ? hashRequest(input) : undefined;
      if (idempotency && requestHash) {
        const prior = await repo.findKeyedTurn(owner, idempotency.key);
        if (prior) {
          yield* replayOf(prior, requestHash, idempotency);
          return;
        }
      }
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
      // Stored before the model is called, so the key's claim comes first (of two requests with
      // one key, one calls the model), and an answer cut off by a crash shows in the history.
      const started = await repo.startTurn(owner, {
        conversationId,
        ...(existing ? {} : { start: { title: titleOf(input.message), agent_id: agentId } }),
        question: input.message,
        placeholderError: PLACEHOLDER_ERROR,
        ...(idempotency && requestHash ? { key: { key: idempotency.key, requestHash } } : {}),
      });
      if (started === 'key_taken' && idempotency && requestHash) {
        // A request with the same key claimed it first: follow what it did.
        const prior = await repo.findKeyedTurn(owner, idempotency.key);
        if (!prior) throw inProgress();
        yield* replayOf(prior, requestHash, idempotency);
        return;
      }
      // Deleted since it was read.
      if (started === undefined || started === 'key_taken') throw notFound('conversation', conversationId);

      let agentTurn: AgentTurn;
      let next: Awaited<ReturnType<AgentTurn['events']['next']>>;
      try {
        // An agent with a policy speaks its assembled context (the conversation is the unit).
        agentTurn = await startAgentTurn(
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
        // The first output decides: a failure before it is the request's error, with nothing kept.
        next = await agentTurn.events.next();
      } catch (error) {
        // Taken back whole (a failed release leaves the answer marked incomplete, as a crash does).
        await repo
          .releaseTurn(owner, {
            ...started,
            conversationId,
            ...(existing ? { before: existing } : {}),
          })
          .catch(() => undefined);
        throw error;
      }
      const turn = agentTurn.events;
      const conversation = { id: conversationId };
      const answer = { id: started.answerId };

      let sequence = 0;
      const event = (name: ChatEvent['event'], data: unknown): ChatEvent => ({
        event: name,
        data,
        id: ++sequence,
      });
      // The turn collects the answer's text, tool calls and citations as its events pass.
      const { toolCalls, citations } = agentTurn;
      let settled = false;
      const settle = async (outcome: MessageOutcome, done?: Record<string, unknown>) => {
        settled = true;
        // A keyed turn keeps its `done` payload, so a retry replays it as it was sent.
        await repo.finishTurn(
          caller.workspaceId,
          conversation.id,
          answer.id,
          outcome,
          idempotency ? done : undefined,
        );
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
        const done = {
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
        };
        await settle(
          {
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
          },
          done,
        );
        yield event('done', done);
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

/** What makes two requests with one key the same: the message, the conversation and the agent. */
function hashRequest(input: ChatInput): string {
  const fields = [input.message, input.conversation_id ?? null, input.agent_id ?? null];
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex');
}

/** 409 for a retry of a turn that is still streaming: its answer is not there to replay yet. */
const inProgress = () =>
  new AppError(
    409,
    'idempotency_in_progress',
    'the turn this Idempotency-Key started is still streaming; retry when it has finished',
    undefined,
    { 'Retry-After': String(IN_PROGRESS_RETRY_AFTER_SECONDS) },
  );

/**
 * The events of a turn a key already started, as its client saw them, without calling the
 * model: `start`, each tool call with its result, the answer's text as one `delta`, its
 * citations, then the `done` it sent, or an `error` for an answer that failed or was cut off.
 * Refuses (before any event, so as problem+json) a different request under the same key, and a
 * turn that is still streaming.
 */
async function* replayOf(
  prior: KeyedTurn,
  requestHash: string,
  idempotency: TurnIdempotency,
): AsyncGenerator<ChatEvent> {
  if (prior.request_hash !== requestHash) {
    throw new AppError(
      422,
      'idempotency_key_reused',
      'this Idempotency-Key already started a chat turn with a different message, conversation or agent',
      [{ field: 'headers.idempotency-key', message: 'was used for a different request' }],
    );
  }
  if (prior.error === PLACEHOLDER_ERROR && prior.age_ms < TURN_IN_PROGRESS_MS) throw inProgress();
  idempotency.onReplay();
  let id = 0;
  const event = (name: ChatEvent['event'], data: unknown): ChatEvent => ({ event: name, data, id: ++id });
  yield event('start', { conversation_id: prior.conversation_id, message_id: prior.message_id });
  for (const call of prior.tool_calls) {
    yield event('tool_call', { id: call.id, name: call.name, input: call.input });
    yield event('tool_result', {
      id: call.id,
      name: call.name,
      output: call.output,
      ...(call.error === undefined ? {} : { error: call.error }),
    });
  }
  if (prior.content !== '') yield event('delta', { text: prior.content });
  for (const citation of prior.citations) yield event('citation', citation);
  if (prior.error === null && prior.done) yield event('done', prior.done);
  else yield event('error', storedFailure(prior.error));
}

/**
 * The `error` event of a stored failure (`<code>: <message>`, as the answer keeps it): the
 * catalogue's code and status when the answer failed with one, `access_revoked` when withdrawn
 * access stopped it, else `answer_interrupted` (its client left, or its process died).
 */
function storedFailure(error: string | null): { code: ErrorCode; status: number; message: string } {
  const text = error ?? PLACEHOLDER_ERROR;
  const split = text.indexOf(': ');
  const head = split < 0 ? text : text.slice(0, split);
  const rest = split < 0 ? '' : text.slice(split + 2);
  if (head in ERROR_CODES) {
    const code = head as ErrorCode;
    return { code, status: ERROR_CODES[code], message: rest };
  }
  if (head === 'aborted' && rest === 'access_revoked') {
    return {
      code: 'access_revoked',
      status: ERROR_CODES.access_revoked,
      message: 'access was withdrawn while the answer streamed',
    };
  }
  return {
    code: 'answer_interrupted',
    status: ERROR_CODES.answer_interrupted,
    message: `the answer stopped before it finished (${text}); send the message again with a new Idempotency-Key`,
  };
}

/**
 * Why an answer stopped early, as stored with it: the code of the error that stopped the stream
 * (`access_revoked` when the caller's access was withdrawn), else the client went away.
 */
function abortReason(signal: AbortSignal): string {
  return signal.reason instanceof AppError
    ? `aborted: ${signal.reason.code}`
    : 'aborted: the client disconnected';
}
