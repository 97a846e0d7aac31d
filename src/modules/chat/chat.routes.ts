import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { LiveStreams } from '../../http/live-streams.ts';
import { IdParams, Json } from '../../http/schemas.ts';
import { sendEventStream } from '../../http/sse.ts';
import {
  ChatBody,
  ChatHeaders,
  ChatStreamResponse,
  ConversationDetail,
  ConversationHistoryQuery,
  ConversationPage,
  ListConversationsQuery,
} from './chat.schemas.ts';
import type { ChatService } from './chat.service.ts';

const tags = ['Chat'];

/** Streaming chat and the caller's conversations (spec 4.3). */
export const chatRoutes: FastifyPluginAsyncTypebox<{
  chat: ChatService;
  /** Ends an answer's stream when the caller's access is withdrawn (answers are not counted). */
  streams: Pick<LiveStreams, 'open'>;
}> = async (app, { chat, streams }) => {
  app.post(
    '/chat',
    {
      schema: {
        operationId: 'sendChatMessage',
        tags,
        summary: 'Send a message; the answer streams as Server-Sent Events',
        description:
          'Answers with text/event-stream. What fails before the model’s first output is an ordinary problem+json answer and stores nothing: an unknown conversation (404 conversation_not_found) or agent (404 agent_not_found), a bad body (400), or every provider failing (502 provider_error / 504 provider_timeout, with each attempt in `errors`); the database unavailable or busy is 503 database_unavailable / database_busy, never a provider error. After the stream started, a failure is a last `error` event (with `database_unavailable` when the database went away). Closing the connection aborts the provider call, and so does withdrawn access (removed from the workspace, the role lowered below member, the API key revoked): the stream then ends with an `error` event {code: access_revoked, status: 403, message}. The model is the agent’s, else the workspace’s default; with no provider configured, the built-in local provider answers. An `Idempotency-Key` header (1–255 printable ASCII characters, unique per workspace and user) makes a retry safe: the key is claimed with your message before the model is called, so a repeated request never pays for a second answer. A retry of a finished turn replays its events (`start`, tool calls with their results, the answer as one `delta`, citations, then its `done`, or its `error` when it failed or was cut off: `answer_interrupted`) with `Idempotent-Replayed: true`; a retry while the first still streams is 409 `idempotency_in_progress` with Retry-After; the same key with a different message, conversation or agent is 422 `idempotency_key_reused`. A turn that failed before the stream started keeps nothing, its key included, so its retry is a new attempt.',
        headers: ChatHeaders,
        body: ChatBody,
        response: { 200: ChatStreamResponse },
      },
    },
    async (request, reply) => {
      const live = await streams.open(request, { counted: false });
      const key = request.headers['idempotency-key'];
      const idempotency = key
        ? { key, onReplay: () => void reply.header('idempotent-replayed', 'true') }
        : undefined;
      await sendEventStream(
        request,
        reply,
        (signal) => chat.send(request.caller, request.body, signal, idempotency),
        {
          onError: (error) => request.log.error({ err: error }, 'chat stream failed after it started'),
          live,
        },
      );
    },
  );

  app.get(
    '/chat/conversations',
    {
      schema: {
        operationId: 'listConversations',
        tags,
        summary: 'List your conversations',
        description:
          'Your conversations in this workspace (conversations are personal: other members’ are not listed), most recent message first, with title and last_message_at.',
        querystring: ListConversationsQuery,
        response: { 200: Json('A page of the caller’s conversations', ConversationPage) },
      },
    },
    async (request) => chat.listConversations(request.caller, request.query),
  );

  app.get(
    '/chat/conversations/:id',
    {
      schema: {
        operationId: 'getConversation',
        tags,
        summary: 'A conversation and its history',
        description:
          'One of your conversations with a page of its messages, oldest first, each with usage, cost, latency, provider, model, tool calls and error. Page on with `after=<next_cursor>`. Another user’s or workspace’s conversation is 404.',
        params: IdParams,
        querystring: ConversationHistoryQuery,
        response: { 200: Json('The conversation and a page of its messages', ConversationDetail) },
      },
    },
    async (request) => chat.getConversation(request.caller, request.params.id, request.query),
  );
};
