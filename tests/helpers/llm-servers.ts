import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Loopback stand-ins for remote language models that speak the providers' real wire
 * protocols, so the platform's AI SDK clients, fallback, timeouts and aborts are exercised
 * end to end without a paid endpoint:
 *
 * - `startOpenAiServer()`: the OpenAI Chat Completions API (`POST /v1/chat/completions`,
 *   streaming SSE chunks with usage in the final chunk, or one JSON answer when
 *   `stream` is false; tool calls; `GET /v1/models`), and its embeddings API
 *   (`POST /v1/embeddings`: deterministic vectors, see `embedText`).
 * - `startAnthropicServer()`: the Anthropic Messages API (`POST /v1/messages`, streaming
 *   `message_start`, `content_block_start/delta/stop`, `message_delta`, `message_stop`,
 *   or one JSON answer; `tool_use` blocks; `GET /v1/models`).
 *
 * Each test scripts the answers (`server.reply(...)`, consumed one per model request in
 * order; `server.fallbackReply` answers when none is queued) and reads what the server
 * received (`server.requests`: method, path, headers, parsed body, and whether the client
 * closed the connection before the answer ended). `url` is the base URL to configure
 * (`http://127.0.0.1:<port>/v1`).
 */

/** Token counts a scripted answer reports. */
export interface ScriptedUsage {
  input_tokens: number;
  output_tokens: number;
}

/** One scripted answer to one model request. */
export type LlmReply =
  | {
      type: 'text';
      /** The answer, or its chunks as they should be streamed. */
      text: string | string[];
      usage?: ScriptedUsage;
      /** Wait this long before the response headers (trips the platform's timeout). */
      firstByteDelayMs?: number;
      /** Wait this long between streamed chunks. */
      chunkDelayMs?: number;
      /** Stream the chunks, then never finish (for disconnect tests). */
      holdOpen?: boolean;
    }
  | {
      type: 'tool_calls';
      calls: { id?: string; name: string; input: unknown }[];
      /** Text before the tool calls, if any. */
      text?: string;
      usage?: ScriptedUsage;
      firstByteDelayMs?: number;
    }
  | {
      type: 'error';
      status: number;
      message?: string;
      headers?: Record<string, string>;
      firstByteDelayMs?: number;
    };

/** What the server received for one request. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body; undefined for GETs. */
  body: any;
  /** True once the client closed the connection before the answer was complete. */
  closedEarly: boolean;
  /** Resolves when the client closes the connection before the answer ended. */
  closed: Promise<void>;
  /** `performance.now()` when the request arrived (before its body was read): for timing benchmarks. */
  arrivedAt: number;
  /** `performance.now()` when the answer's first byte (the headers) was written; undefined until then. */
  firstByteAt?: number;
}

export interface LlmServer {
  /** The base URL a provider setting names: `http://127.0.0.1:<port>/v1`. */
  url: string;
  /** Every request received, in order (model calls and model listings). */
  requests: ReceivedRequest[];
  /** Only the model calls (`/v1/chat/completions` or `/v1/messages`). */
  modelRequests(): ReceivedRequest[];
  /** Queues answers for the next model requests, in order. */
  reply(...replies: LlmReply[]): void;
  /** Answers model requests when nothing is queued. */
  fallbackReply: LlmReply;
  /** Resolves when `count` model requests have arrived. */
  waitForModelRequests(count: number): Promise<ReceivedRequest[]>;
  /** Forgets the requests and queued replies (the fallback reply stays). */
  reset(): void;
  /** The size of the vectors `/v1/embeddings` answers (64 unless a test changes it). */
  embeddingDimensions: number;
  /** When set, `/v1/embeddings` answers this error status instead of vectors. */
  embeddingError: number | undefined;
  /** Only the embeddings calls. */
  embeddingRequests(): ReceivedRequest[];
  close(): Promise<void>;
}

type Protocol = 'openai' | 'anthropic';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts an OpenAI-compatible server on a free loopback port. */
export function startOpenAiServer(): Promise<LlmServer> {
  return startServer('openai');
}

/** Starts an Anthropic Messages API server on a free loopback port. */
export function startAnthropicServer(): Promise<LlmServer> {
  return startServer('anthropic');
}

async function startServer(protocol: Protocol): Promise<LlmServer> {
  const queue: LlmReply[] = [];
  const requests: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const modelPath = protocol === 'openai' ? '/v1/chat/completions' : '/v1/messages';
  let sequence = 0;

  const modelRequests = () => requests.filter((r) => r.path === modelPath);
  const notify = () => {
    const count = modelRequests().length;
    for (const waiter of [...waiters]) {
      if (count >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };

  const server: LlmServer = {
    url: '',
    requests,
    modelRequests,
    reply: (...replies) => {
      queue.push(...replies);
    },
    fallbackReply: { type: 'text', text: 'Hello from the loopback model.' },
    waitForModelRequests: (count) =>
      new Promise((resolve) => {
        waiters.push({ count, resolve: () => resolve(modelRequests()) });
        notify();
      }),
    reset: () => {
      queue.length = 0;
      requests.length = 0;
    },
    embeddingDimensions: 64,
    embeddingError: undefined,
    embeddingRequests: () => requests.filter((r) => r.path === '/v1/embeddings'),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        httpServer.close(() => resolve());
      }),
  };

  const httpServer = http.createServer(async (req, res) => {
    const arrivedAt = performance.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    let closedResolve = () => {};
    const record: ReceivedRequest = {
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      body: text ? safeJson(text) : undefined,
      closedEarly: false,
      closed: new Promise<void>((resolve) => {
        closedResolve = resolve;
      }),
      arrivedAt,
    };
    res.on('close', () => {
      if (!res.writableFinished) {
        record.closedEarly = true;
        closedResolve();
      }
    });
    requests.push(record);

    if (req.method === 'GET' && path === '/v1/models') {
      json(res, 200, modelList(protocol));
      return;
    }
    if (protocol === 'openai' && req.method === 'POST' && path === '/v1/embeddings') {
      if (server.embeddingError !== undefined) {
        json(
          res,
          server.embeddingError,
          errorBody(protocol, server.embeddingError, 'embeddings unavailable'),
        );
        return;
      }
      const input: unknown = record.body?.input;
      const texts = Array.isArray(input) ? input.map(String) : [String(input ?? '')];
      json(res, 200, {
        object: 'list',
        model: String(record.body?.model ?? 'unknown'),
        data: texts.map((text, index) => ({
          object: 'embedding',
          index,
          embedding: embedText(text, server.embeddingDimensions),
        })),
        usage: { prompt_tokens: texts.join(' ').split(/\s+/).length, total_tokens: 0 },
      });
      return;
    }
    if (req.method !== 'POST' || path !== modelPath) {
      json(res, 404, errorBody(protocol, 404, `no route ${req.method} ${path}`));
      return;
    }
    notify();
    const reply = queue.shift() ?? server.fallbackReply;
    sequence += 1;
    if (reply.firstByteDelayMs) await sleep(reply.firstByteDelayMs);
    if (res.destroyed) return;
    if (reply.type === 'error') {
      json(res, reply.status, errorBody(protocol, reply.status, reply.message), reply.headers);
      return;
    }
    const streaming = record.body?.stream === true;
    const model = String(record.body?.model ?? 'unknown');
    if (!streaming) {
      json(
        res,
        200,
        protocol === 'openai' ? openAiJson(reply, model, sequence) : anthropicJson(reply, model, sequence),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    record.firstByteAt = performance.now();
    const events =
      protocol === 'openai' ? openAiEvents(reply, model, sequence) : anthropicEvents(reply, model, sequence);
    const holdOpen = reply.type === 'text' && reply.holdOpen === true;
    const delay = reply.type === 'text' ? (reply.chunkDelayMs ?? 0) : 0;
    const body = holdOpen
      ? events.slice(
          0,
          events.findIndex((e) => e.final),
        )
      : events;
    for (const [index, event] of body.entries()) {
      if (res.destroyed) return;
      if (index > 0 && delay > 0 && event.content) await sleep(delay);
      res.write(event.text);
    }
    if (!holdOpen) res.end();
  });
  httpServer.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  server.url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/v1`;
  return server;
}

/**
 * The loopback embedding model: a bag of words hashed into `dimensions` buckets (lower-cased
 * words, a trailing `s` dropped), L2-normalised. Deterministic, and texts that share words are
 * near in cosine distance, so vector search tests can say which chunk must come first.
 */
export function embedText(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const stem = word.length > 3 && word.endsWith('s') ? word.slice(0, -1) : word;
    let hash = 2_166_136_261;
    for (const char of stem) hash = Math.imul(hash ^ char.charCodeAt(0), 16_777_619) >>> 0;
    vector[hash % dimensions] = (vector[hash % dimensions] as number) + 1;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector.map((_, index) => (index === 0 ? 1 : 0)) : vector.map((value) => value / norm);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function modelList(protocol: Protocol) {
  return protocol === 'openai'
    ? { object: 'list', data: [{ id: 'loopback-model', object: 'model', created: 0, owned_by: 'tests' }] }
    : {
        data: [
          {
            type: 'model',
            id: 'loopback-model',
            display_name: 'Loopback',
            created_at: '2025-01-01T00:00:00Z',
          },
        ],
        has_more: false,
        first_id: 'loopback-model',
        last_id: 'loopback-model',
      };
}

function errorBody(protocol: Protocol, status: number, message = `scripted error ${status}`) {
  if (protocol === 'openai') {
    return { error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null } };
  }
  const type = status === 429 ? 'rate_limit_error' : status === 529 ? 'overloaded_error' : 'api_error';
  return { type: 'error', error: { type, message } };
}

const chunksOf = (text: string | string[]) => (Array.isArray(text) ? text : [text]);
const fullText = (reply: Exclude<LlmReply, { type: 'error' }>) =>
  reply.type === 'text' ? chunksOf(reply.text).join('') : (reply.text ?? '');
const usageOf = (reply: Exclude<LlmReply, { type: 'error' }>): ScriptedUsage =>
  reply.usage ?? { input_tokens: 11, output_tokens: Math.max(1, Math.ceil(fullText(reply).length / 4)) };
const callId = (call: { id?: string }, index: number, sequence: number) =>
  call.id ?? `call_${sequence}_${index}`;

/** One SSE event as written: `content` marks model output, `final` the event that ends the answer. */
interface WireEvent {
  text: string;
  content?: boolean;
  final?: boolean;
}

function openAiEvents(
  reply: Exclude<LlmReply, { type: 'error' }>,
  model: string,
  sequence: number,
): WireEvent[] {
  const id = `chatcmpl-${sequence}`;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1_700_000_000, model, choices, ...extra })}\n\n`;
  const events: WireEvent[] = [
    { text: chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]) },
  ];
  const texts = reply.type === 'text' ? chunksOf(reply.text) : reply.text ? [reply.text] : [];
  for (const piece of texts) {
    events.push({
      text: chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]),
      content: true,
    });
  }
  if (reply.type === 'tool_calls') {
    reply.calls.forEach((call, index) => {
      events.push({
        text: chunk([
          {
            index: 0,
            delta: {
              tool_calls: [
                {
                  index,
                  id: callId(call, index, sequence),
                  type: 'function',
                  function: { name: call.name, arguments: JSON.stringify(call.input) },
                },
              ],
            },
            finish_reason: null,
          },
        ]),
        content: true,
      });
    });
  }
  const usage = usageOf(reply);
  events.push({
    text: chunk([
      { index: 0, delta: {}, finish_reason: reply.type === 'tool_calls' ? 'tool_calls' : 'stop' },
    ]),
    final: true,
  });
  events.push({
    text: chunk([], {
      usage: {
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        total_tokens: usage.input_tokens + usage.output_tokens,
      },
    }),
  });
  events.push({ text: 'data: [DONE]\n\n' });
  return events;
}

function openAiJson(reply: Exclude<LlmReply, { type: 'error' }>, model: string, sequence: number) {
  const usage = usageOf(reply);
  const toolCalls =
    reply.type === 'tool_calls'
      ? reply.calls.map((call, index) => ({
          id: callId(call, index, sequence),
          type: 'function',
          function: { name: call.name, arguments: JSON.stringify(call.input) },
        }))
      : undefined;
  return {
    id: `chatcmpl-${sequence}`,
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: fullText(reply) || null,
          ...(toolCalls ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: toolCalls ? 'tool_calls' : 'stop',
      },
    ],
    usage: {
      prompt_tokens: usage.input_tokens,
      completion_tokens: usage.output_tokens,
      total_tokens: usage.input_tokens + usage.output_tokens,
    },
  };
}

function anthropicEvents(
  reply: Exclude<LlmReply, { type: 'error' }>,
  model: string,
  sequence: number,
): WireEvent[] {
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  const usage = usageOf(reply);
  const events: WireEvent[] = [
    {
      text: event('message_start', {
        type: 'message_start',
        message: {
          id: `msg_${sequence}`,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
        },
      }),
    },
    { text: event('ping', { type: 'ping' }) },
  ];
  let index = 0;
  const texts = reply.type === 'text' ? chunksOf(reply.text) : reply.text ? [reply.text] : [];
  if (texts.length > 0) {
    events.push({
      text: event('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'text', text: '' },
      }),
    });
    for (const piece of texts) {
      events.push({
        text: event('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'text_delta', text: piece },
        }),
        content: true,
      });
    }
    events.push({ text: event('content_block_stop', { type: 'content_block_stop', index }) });
    index += 1;
  }
  if (reply.type === 'tool_calls') {
    reply.calls.forEach((call, position) => {
      events.push({
        text: event('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: {
            type: 'tool_use',
            id: callId(call, position, sequence),
            name: call.name,
            input: {},
          },
        }),
      });
      events.push({
        text: event('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) },
        }),
        content: true,
      });
      events.push({ text: event('content_block_stop', { type: 'content_block_stop', index }) });
      index += 1;
    });
  }
  events.push({
    text: event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: reply.type === 'tool_calls' ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    }),
    final: true,
  });
  events.push({ text: event('message_stop', { type: 'message_stop' }) });
  return events;
}

function anthropicJson(reply: Exclude<LlmReply, { type: 'error' }>, model: string, sequence: number) {
  const usage = usageOf(reply);
  const content: unknown[] = [];
  const text = fullText(reply);
  if (text) content.push({ type: 'text', text });
  if (reply.type === 'tool_calls') {
    reply.calls.forEach((call, index) => {
      content.push({
        type: 'tool_use',
        id: callId(call, index, sequence),
        name: call.name,
        input: call.input,
      });
    });
  }
  return {
    id: `msg_${sequence}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: reply.type === 'tool_calls' ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage,
  };
}
