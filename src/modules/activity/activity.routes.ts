import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { AppError } from '../../errors.ts';
import type { LiveStream, LiveStreams } from '../../http/live-streams.ts';
import { EventStream, Json } from '../../http/schemas.ts';
import { resumePoint, type SseEvent, sendEventStream } from '../../http/sse.ts';
import {
  ActivityPage,
  ActivitySocketQuery,
  ActivityStreamEvents,
  ListActivityQuery,
  StreamActivityHeaders,
  StreamActivityQuery,
  WsTicketSchema,
} from './activity.schemas.ts';
import type { ActivityFilter, ActivityItem, ActivityService } from './activity.service.ts';

const tags = ['Activity'];

export interface ActivityRoutesOptions {
  activity: Pick<ActivityService, 'list' | 'follow' | 'issueTicket'>;
  /** Caps the live channels and ends them when the caller's access is withdrawn. */
  streams: Pick<LiveStreams, 'open'>;
  /** SSE heartbeat comment interval (15 s). */
  heartbeatMs?: number;
  /** WebSocket ping interval (30 s); a socket that has not answered the previous ping is closed. */
  pingIntervalMs?: number;
}

/** An event as every live channel sends it: the list item, `created_at` as ISO 8601. */
const toMessage = (item: ActivityItem) => ({ ...item, created_at: item.created_at.toISOString() });

/**
 * The activity feed: the list (newest first, by cursor), the live SSE stream, and the
 * WebSocket with its single-use tickets. Live channels read from the database after the
 * last id they sent each time the event hub wakes them, so they never skip an event.
 */
export const activityRoutes: FastifyPluginAsyncTypebox<ActivityRoutesOptions> = async (app, options) => {
  const { activity, streams } = options;
  // Open SSE streams hold their connections; closing the app ends them so it can stop.
  // (The WebSocket plugin closes its sockets itself.)
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort(new Error('the server is shutting down')));

  app.get(
    '/activity',
    {
      schema: {
        operationId: 'listActivity',
        tags,
        summary: 'List activity',
        description:
          'The workspace’s activity feed, newest first, keyset-paginated: pass the answer’s next_cursor as `before` (or follow `next`) for older events; pages never shift while events are added. Filters: kind (repeatable), subject_type, subject_id.',
        querystring: ListActivityQuery,
        response: { 200: Json('A page of activity events', ActivityPage) },
      },
    },
    async (request) => {
      const { limit } = request.query;
      const page = await activity.list(request.caller, request.query);
      return {
        items: page.items,
        limit,
        next_cursor: page.next_cursor,
        next: page.next_cursor === null ? null : nextPageUrl(request.query, page.next_cursor),
      };
    },
  );

  app.get(
    '/activity/stream',
    {
      schema: {
        operationId: 'followActivity',
        tags,
        summary: 'Follow activity (Server-Sent Events)',
        description:
          'A text/event-stream of the workspace’s activity: first a `ready` event ({after}), then the events after `Last-Event-ID` (or `?after=`) oldest first, then each new event as it is committed, until the client disconnects. Each event is named by its kind, its id is the event id, its data the event as listed. Without Last-Event-ID or after, only new events. A heartbeat comment every 15 s. Filters as the list. When the caller’s access is withdrawn (removed from the workspace, API key revoked, workspace deleted) the stream ends with an `error` event {code: access_revoked, status: 403, message}. Beyond STREAMS_PER_USER / STREAMS_PER_WORKSPACE open live streams: 429 too_many_streams.',
        querystring: StreamActivityQuery,
        headers: StreamActivityHeaders,
        response: {
          200: EventStream(
            'The workspace’s activity, open until the client disconnects',
            ActivityStreamEvents,
          ),
        },
      },
    },
    async (request, reply) => {
      const { after, ...filter } = request.query;
      const start = resumes(request, after) ? resumePoint(request, after) : undefined;
      const live = await streams.open(request, { counted: true });
      await sendEventStream(
        request,
        reply,
        (signal) => activityEvents(request, start, filter, AbortSignal.any([signal, closing.signal])),
        {
          heartbeatMs: options.heartbeatMs,
          onError: (error) => request.log.error({ err: error }, 'activity stream failed'),
          live,
        },
      );
    },
  );

  async function* activityEvents(
    request: FastifyRequest,
    after: number | undefined,
    filter: ActivityFilter,
    signal: AbortSignal,
  ): AsyncGenerator<SseEvent> {
    const followed = await activity.follow(request.caller, { after, filter }, signal);
    // Sent at once, so the stream opens even when nothing is replayed.
    yield { event: 'ready', data: { after: followed.after } };
    for await (const item of followed.rows) yield { event: item.kind, id: item.id, data: toMessage(item) };
  }

  app.post(
    '/activity/ws-ticket',
    {
      config: { role: 'viewer' },
      schema: {
        operationId: 'createWsTicket',
        tags,
        summary: 'Issue a WebSocket ticket',
        description:
          'A single-use ticket for `GET /api/ws?ticket=…`, for clients (browsers) that cannot set headers on a WebSocket. Bound to the caller’s user and workspace, valid 30 seconds, stored only as a hash; redeeming it checks the membership again.',
        response: { 201: Json('The single-use WebSocket ticket', WsTicketSchema) },
      },
    },
    async (request, reply) => reply.status(201).send(await activity.issueTicket(request.caller)),
  );

  /** The live stream of each upgrade, from its admission (before the upgrade) to its socket's close. */
  const sockets = new WeakMap<FastifyRequest, LiveStream>();

  app.route({
    method: 'GET',
    url: '/ws',
    config: { ticket: true },
    // Before the upgrade, so a refusal (429, 403) is an ordinary HTTP answer. The slot is
    // given back when the connection closes, also when the upgrade never completes.
    preHandler: async (request) => {
      if (!request.ws) return;
      const live = await streams.open(request, { counted: true });
      sockets.set(request, live);
      request.raw.socket.once('close', live.end);
    },
    schema: {
      operationId: 'openActivitySocket',
      tags,
      summary: 'Follow activity (WebSocket)',
      description:
        'Upgrade to a WebSocket carrying the workspace’s activity as JSON messages {id, kind, subject_type, subject_id, message, data, actor, created_at}. Authenticate with the usual headers, or with `?ticket=` from POST /api/activity/ws-ticket. `?after=` replays from an id first; the client may send {"after": <id>} at any time to replay from there. The server pings every 30 s and closes a socket that missed a pong. When the caller’s access is withdrawn (removed from the workspace, API key revoked, workspace deleted) the server sends {"error": {"code": "access_revoked", …}} and closes with 4403. A refused upgrade is an ordinary HTTP answer: 401, 403, 400 or 429 too_many_streams (STREAMS_PER_USER / STREAMS_PER_WORKSPACE) problem details. A plain GET without the upgrade is 426.',
      querystring: ActivitySocketQuery,
      response: { 101: Type.Null({ description: 'Switching Protocols: the WebSocket is open' }) },
    },
    handler: async () => {
      throw new AppError(
        426,
        'upgrade_required',
        'this route speaks WebSocket: send an Upgrade request',
        undefined,
        {
          Upgrade: 'websocket',
          Connection: 'Upgrade',
        },
      );
    },
    wsHandler: (socket, request) => {
      const { after, ticket: _ticket, ...filter } = request.query;
      serveSocket(socket, request, after, filter, sockets.get(request));
    },
  });

  function serveSocket(
    socket: WebSocket,
    request: FastifyRequest,
    after: number | undefined,
    filter: ActivityFilter,
    live: LiveStream | undefined,
  ) {
    const closed = new AbortController();
    let current: AbortController | undefined;
    let pumping: Promise<void> = Promise.resolve();

    /** Stops the current follow, then follows from `from`: sends never interleave. */
    const followFrom = (from: number | undefined) => {
      current?.abort();
      const controller = new AbortController();
      current = controller;
      const signal = AbortSignal.any([controller.signal, closed.signal]);
      pumping = pumping.then(() => pump(from, signal));
    };

    const pump = async (from: number | undefined, signal: AbortSignal) => {
      if (signal.aborted) return;
      try {
        const followed = await activity.follow(request.caller, { after: from, filter }, signal);
        for await (const item of followed.rows) await send(socket, toMessage(item));
      } catch (error) {
        if (signal.aborted || socket.readyState !== socket.OPEN) return;
        request.log.error({ err: error }, 'activity socket failed');
        socket.close(1011, 'the feed failed: reconnect with ?after=<last id>');
      }
    };

    socket.on('message', (data, isBinary) => {
      const command = parseCommand(isBinary ? undefined : data.toString());
      if ('error' in command) socket.send(JSON.stringify(command));
      else followFrom(command.after);
    });

    let answered = true;
    socket.on('pong', () => {
      answered = true;
    });
    const ping = setInterval(() => {
      if (!answered) {
        socket.terminate();
        return;
      }
      answered = false;
      socket.ping();
    }, options.pingIntervalMs ?? 30_000);

    // Withdrawn access: say why in a last message, then close with 4403 (the HTTP status, as
    // the 4000-4999 range is the application's).
    const revoke = () => {
      closed.abort();
      const reason = live?.revoked.reason as AppError;
      const done = () => socket.close(4403, 'access_revoked');
      if (socket.readyState !== socket.OPEN) return;
      socket.send(JSON.stringify({ error: { code: reason.code, message: reason.message } }), done);
    };
    if (live?.revoked.aborted) revoke();
    else live?.revoked.addEventListener('abort', revoke, { once: true });

    socket.on('close', () => {
      clearInterval(ping);
      closed.abort();
      live?.revoked.removeEventListener('abort', revoke);
      live?.end();
    });
    followFrom(after);
  }
};

/** True when the client asked to resume: a `Last-Event-ID` header or `?after=`. */
function resumes(request: FastifyRequest, after: number | undefined): boolean {
  const header = request.headers['last-event-id'];
  const text = Array.isArray(header) ? header[0] : header;
  return after !== undefined || (text !== undefined && text.trim() !== '');
}

/** The next page's path and query: the same filters and limit, older than `cursor`. */
function nextPageUrl(query: ActivityFilter & { limit: number }, cursor: number): string {
  const search = new URLSearchParams();
  for (const kind of query.kind ?? []) search.append('kind', kind);
  if (query.subject_type !== undefined) search.set('subject_type', query.subject_type);
  if (query.subject_id !== undefined) search.set('subject_id', query.subject_id);
  search.set('limit', String(query.limit));
  search.set('before', String(cursor));
  return `/api/activity?${search}`;
}

/** What a client message asks for: `{"after": <id>}`, or why it cannot be read. */
function parseCommand(
  text: string | undefined,
): { after: number } | { error: { code: 'validation_failed'; field: string; message: string } } {
  const refuse = (field: string, message: string) => ({
    error: { code: 'validation_failed' as const, field, message },
  });
  if (text === undefined) return refuse('message', 'must be a JSON text message');
  let command: unknown;
  try {
    command = JSON.parse(text);
  } catch {
    return refuse('message', 'must be JSON: {"after": <event id>}');
  }
  if (typeof command !== 'object' || command === null || Array.isArray(command)) {
    return refuse('message', 'must be an object: {"after": <event id>}');
  }
  const extra = Object.keys(command).find((key) => key !== 'after');
  if (extra !== undefined) return refuse(extra, 'is not an allowed field');
  const after = (command as { after?: unknown }).after;
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 0) {
    return refuse('after', 'must be a non-negative integer event id');
  }
  return { after };
}

/** Sends one JSON message and waits until it is written, so a slow client slows its own feed only. */
function send(socket: WebSocket, message: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.send(JSON.stringify(message), (error) => (error ? reject(error) : resolve()));
  });
}
