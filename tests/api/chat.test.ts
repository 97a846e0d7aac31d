import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { openEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildCredential, buildMember } from '../helpers/factories.ts';
import { settledDocument, upload } from '../helpers/knowledge.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * POST /api/chat through a real port, read by a real SSE parser, against a loopback
 * OpenAI-compatible server: event order and ids, what is stored, memory, the conversation
 * list and history, isolation, errors before and after the stream starts, and a client
 * disconnect reaching the provider.
 */

const API_KEY = 'sk-chat-canary-5b1e9d';

let t: TestApp;
let base: string;
let llm: LlmServer;
let alice: Actor;
let carol: Actor;
let bob: Actor;

/** Configures `actor`'s workspace with the loopback server as provider `loop` (default model `chat-model`). */
async function configure(actor: Actor, overrides: Record<string, unknown> = {}) {
  const credential = await buildCredential(t, actor, {
    credential_type: 'openai_credentials',
    data: { api_key: API_KEY },
  });
  const response = await t.call(actor, 'PUT', '/api/settings/providers', {
    providers: [
      {
        id: 'loop',
        kind: 'openai_compatible',
        base_url: llm.url,
        credential_id: credential.id,
        ...overrides,
      },
    ],
    default_model: { provider: 'loop', name: 'chat-model' },
    prices: [{ provider: 'loop', name: 'chat-model', input_per_million: 2, output_per_million: 10 }],
  });
  expect(response.statusCode, response.body).toBe(200);
}

const chat = (actor: Actor, body: Record<string, unknown>) =>
  openEventStream(`${base}/api/chat`, actor.headers, body);

/** Polls until `check` passes (a stream's last write may land just after the client saw it). */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, ms = 5_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  llm = await startOpenAiServer();
  alice = await t.newWorkspace('alice');
  carol = await buildMember(t, alice, { role: 'member' });
  bob = await t.newWorkspace('bob');
  await configure(alice);
});
afterAll(async () => {
  await llm.close();
  await t.close();
});

describe('POST /api/chat', () => {
  it('streams start, deltas and done with ids in order, and stores both messages', async () => {
    llm.reply({ type: 'text', text: ['Hel', 'lo ', 'world'], usage: { input_tokens: 12, output_tokens: 3 } });
    const stream = await chat(alice, { message: 'Say hello' });
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toContain('text/event-stream');
    const events = await stream.done;
    expect(events.map((e) => e.event)).toEqual(['start', 'delta', 'delta', 'delta', 'done']);
    expect(events.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5']);
    const { conversation_id, message_id } = events[0]?.data ?? {};
    expect(
      events
        .slice(1, 4)
        .map((e) => e.data.text)
        .join(''),
    ).toBe('Hello world');
    const done = events[4]?.data;
    expect(done).toMatchObject({
      message_id,
      usage: { input_tokens: 12, output_tokens: 3 },
      provider: 'loop',
      model: 'chat-model',
      fallbacks: [],
    });
    expect(done.cost).toBeCloseTo((12 * 2 + 3 * 10) / 1_000_000, 12);
    // The prices the cost was computed with travel with it, so it can be explained later.
    expect(done.price).toEqual({ input_per_million: 2, output_per_million: 10 });
    expect(done.latency_ms).toBeGreaterThanOrEqual(0);

    const [request] = llm.modelRequests().slice(-1);
    expect(request?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request?.body).toMatchObject({ model: 'chat-model', stream: true });
    expect(request?.body.messages).toEqual([{ role: 'user', content: 'Say hello' }]);

    const history = await t.call(alice, 'GET', `/api/chat/conversations/${conversation_id}`);
    expect(history.statusCode).toBe(200);
    expect(history.json()).toMatchObject({
      id: conversation_id,
      title: 'Say hello',
      agent_id: null,
      next_cursor: null,
    });
    expect(history.json().messages).toMatchObject([
      { role: 'user', content: 'Say hello', usage: null, price: null, error: null },
      {
        id: message_id,
        role: 'assistant',
        content: 'Hello world',
        usage: { input_tokens: 12, output_tokens: 3 },
        price: { input_per_million: 2, output_per_million: 10 },
        provider: 'loop',
        model: 'chat-model',
        error: null,
      },
    ]);
    expect(history.body).not.toContain(API_KEY);
    expect(t.rawLogs()).not.toContain(API_KEY);
  });

  it('carries earlier messages within the token budget, dropping the oldest first', async () => {
    // About 5,000 tokens each (four characters a token): two of them exceed the 8,000-token budget.
    const first = `first ${'a'.repeat(20_000)}`;
    const second = `second ${'b'.repeat(20_000)}`;
    llm.reply({ type: 'text', text: 'one' }, { type: 'text', text: 'two' }, { type: 'text', text: 'three' });
    const opened = await (await chat(alice, { message: first })).done;
    const conversation_id = opened[0]?.data.conversation_id;
    await (await chat(alice, { message: second, conversation_id })).done;
    await (await chat(alice, { message: 'and now?', conversation_id })).done;
    const [, secondCall, thirdCall] = llm.modelRequests().slice(-3);
    const sent = (request: typeof secondCall) =>
      request?.body.messages.map(
        (m: { role: string; content: string }) => `${m.role}:${m.content.slice(0, 8)}`,
      );
    expect(sent(secondCall)).toEqual(['user:first aa', 'assistant:one', 'user:second b']);
    // The first exchange no longer fits: its question is dropped, and so is its answer,
    // since memory starts with a user message.
    expect(sent(thirdCall)).toEqual(['user:second b', 'assistant:two', 'user:and now?']);
    expect(thirdCall?.body.messages[0].content).toBe(second);
    const history = await t.call(alice, 'GET', `/api/chat/conversations/${conversation_id}`);
    expect(history.json().messages).toHaveLength(6);
  });

  it('answers with the built-in local provider when the workspace configured none', async () => {
    const dora = await t.newWorkspace('dora');
    const calls = llm.modelRequests().length;
    const events = await (await chat(dora, { message: 'anyone there?' })).done;
    expect(events.map((e) => e.event)).toEqual(['start', 'delta', 'done']);
    expect(events[1]?.data.text).toContain('No model provider is configured for this workspace');
    expect(events[1]?.data.text).toContain('user: anyone there?');
    expect(events[2]?.data).toMatchObject({ provider: 'local', model: 'echo', cost: 0 });
    expect(llm.modelRequests()).toHaveLength(calls);
  });

  it('quotes the workspace’s knowledge with citations when no model is configured', async () => {
    const erin = await t.newWorkspace('erin');
    const frank = await t.newWorkspace('frank');
    const guide = await upload(t, erin, {
      name: 'glacier-guide.md',
      content:
        '# Glacier field guide\n\n## Crevasse rescue\n\nA pulley system lifts a climber out of a crevasse; anchor it in the snow with a buried axe.\n\n## Weather\n\nStorms arrive from the west in the afternoon.\n',
    });
    expect(guide.statusCode, guide.body).toBe(201);
    expect((await settledDocument(t, erin, guide.json().id)).status).toBe('processed');
    // The same words in another workspace are never quoted to erin, nor erin's to frank.
    const other = await upload(t, frank, {
      name: 'other.md',
      content: '# Frank’s secret crevasse notes\n\nCrevasse pulley anchor axe, frank-only text.\n',
    });
    expect((await settledDocument(t, frank, other.json().id)).status).toBe('processed');

    const calls = llm.modelRequests().length;
    const events = await (await chat(erin, { message: 'How do I rescue someone from a crevasse?' })).done;
    expect(events.map((e) => e.event)).toEqual(['start', 'delta', 'citation', 'done']);
    const text = events[1]?.data.text as string;
    expect(text).toContain('No model provider is configured for this workspace');
    expect(text).toContain('[1] Glacier field guide › Crevasse rescue');
    expect(text).toContain('A pulley system lifts a climber out of a crevasse');
    expect(text).not.toContain('frank-only');
    expect(events[2]?.data).toMatchObject({
      index: 1,
      document_id: guide.json().id,
      title: 'Glacier field guide',
      heading_path: ['Glacier field guide', 'Crevasse rescue'],
    });
    expect(events[3]?.data).toMatchObject({ provider: 'local', model: 'echo', cost: 0 });
    expect(llm.modelRequests()).toHaveLength(calls);

    const history = await t.call(erin, 'GET', `/api/chat/conversations/${events[0]?.data.conversation_id}`);
    const [question, answer] = history.json().messages;
    expect(question.citations).toEqual([]);
    expect(answer.content).toBe(text);
    expect(answer.citations).toEqual([events[2]?.data]);

    const nothing = await (await chat(erin, { message: 'zyxwvut qqqq' })).done;
    expect(nothing.map((e) => e.event)).toEqual(['start', 'delta', 'done']);
    expect(nothing[1]?.data.text).toContain("Nothing in this workspace's knowledge matches your message.");
    expect(nothing[1]?.data.text).toContain('user: zyxwvut qqqq');
  });

  it('gives an agent without a model the workspace default, with its system prompt', async () => {
    const agent = await buildAgent(t, alice, { model: undefined, system_prompt: 'Answer in one word.' });
    expect(agent.model).toBeNull();
    llm.reply({ type: 'text', text: 'Yes' });
    const events = await (await chat(alice, { message: 'Ready?', agent_id: agent.id })).done;
    expect(events.at(-1)?.data).toMatchObject({ provider: 'loop', model: 'chat-model' });
    const [request] = llm.modelRequests().slice(-1);
    expect(request?.body.model).toBe('chat-model');
    expect(request?.body.messages).toEqual([
      { role: 'system', content: 'Answer in one word.' },
      { role: 'user', content: 'Ready?' },
    ]);
    const conversation = await t.call(
      alice,
      'GET',
      `/api/chat/conversations/${events[0]?.data.conversation_id}`,
    );
    expect(conversation.json().agent_id).toBe(agent.id);
  });

  it('streams tool calls and their results between deltas and stores them with the answer', async () => {
    const target = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"temperature":21}');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/weather`;
    try {
      const agent = await buildAgent(t, alice, { model: null, tools: [{ name: 'http_request' }] });
      llm.reply(
        {
          type: 'tool_calls',
          calls: [{ id: 'call_w', name: 'http_request', input: { method: 'GET', url } }],
        },
        { type: 'text', text: ['It is ', '21 degrees.'] },
      );
      const events = await (await chat(alice, { message: 'Weather?', agent_id: agent.id })).done;
      expect(events.map((e) => e.event)).toEqual([
        'start',
        'tool_call',
        'tool_result',
        'delta',
        'delta',
        'done',
      ]);
      expect(events[1]?.data).toEqual({ id: 'call_w', name: 'http_request', input: { method: 'GET', url } });
      expect(events[2]?.data).toMatchObject({
        id: 'call_w',
        output: { status: 200, body: '{"temperature":21}' },
      });
      const history = await t.call(
        alice,
        'GET',
        `/api/chat/conversations/${events[0]?.data.conversation_id}`,
      );
      expect(history.json().messages[1]).toMatchObject({
        content: 'It is 21 degrees.',
        tool_calls: [{ id: 'call_w', name: 'http_request', input: { url }, output: { status: 200 } }],
      });
    } finally {
      await new Promise((resolve) => target.close(resolve));
    }
  });

  it('closing the connection aborts the provider call and stores the partial answer as aborted', async () => {
    llm.reply({ type: 'text', text: ['partial ', 'answer'], holdOpen: true });
    const stream = await chat(alice, { message: 'Tell me a long story' });
    const [start] = await stream.waitForEvents(3);
    const request = llm.modelRequests().at(-1);
    expect(request?.closedEarly).toBe(false);
    stream.close();
    await request?.closed;
    expect(request?.closedEarly).toBe(true);
    const history = await eventually(
      () => t.call(alice, 'GET', `/api/chat/conversations/${start?.data.conversation_id}`),
      (response) => response.json().messages[1]?.error?.startsWith('aborted') === true,
    );
    expect(history.json().messages[1]).toMatchObject({
      content: 'partial answer',
      error: 'aborted: the client disconnected',
    });
  });
});

describe('errors', () => {
  it('answers problem+json before the stream for an unknown conversation or agent, or a bad body', async () => {
    const unknownConversation = await chat(alice, {
      message: 'hi',
      conversation_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(unknownConversation.status).toBe(404);
    expect(unknownConversation.headers['content-type']).toContain('application/problem+json');
    expect(unknownConversation.problem.code).toBe('conversation_not_found');
    const unknownAgent = await chat(alice, {
      message: 'hi',
      agent_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(unknownAgent.status).toBe(404);
    expect(unknownAgent.problem.code).toBe('agent_not_found');
    const empty = await chat(alice, { message: '' });
    expect(empty.status).toBe(400);
    expect(empty.problem.errors[0].field).toBe('body.message');
    const stray = await chat(alice, { message: 'hi', stream: true });
    expect(stray.status).toBe(400);
  });

  it('answers 502 with every attempt when all providers fail before the first token, and stores nothing', async () => {
    const before = (await t.call(alice, 'GET', '/api/chat/conversations')).json().total;
    llm.reply({ type: 'error', status: 500, message: 'upstream exploded' });
    const stream = await chat(alice, { message: 'Is anyone up?' });
    expect(stream.status).toBe(502);
    expect(stream.problem).toMatchObject({
      code: 'provider_error',
      errors: [{ field: 'loop/chat-model', message: 'HTTP 500: upstream exploded' }],
    });
    expect(JSON.stringify(stream.problem)).not.toContain(API_KEY);
    expect((await t.call(alice, 'GET', '/api/chat/conversations')).json().total).toBe(before);
  });

  it('leaves a conversation as it was when a follow-up fails before the first token: history and list order', async () => {
    const frank = await t.newWorkspace('frank');
    await configure(frank);
    const opened = await (await chat(frank, { message: 'First question' })).done;
    const conversationId = opened[0]?.data.conversation_id;
    const other = await (await chat(frank, { message: 'Another topic' })).done;
    const list = async () =>
      (await t.call(frank, 'GET', '/api/chat/conversations')).json().items.map((c: { id: string }) => c.id);
    const order = await list();
    expect(order[0]).toBe(other[0]?.data.conversation_id);
    const history = async () =>
      (await t.call(frank, 'GET', `/api/chat/conversations/${conversationId}`)).json().messages;
    const messages = await history();

    llm.reply({ type: 'error', status: 500, message: 'upstream exploded' });
    const failed = await chat(frank, { message: 'Follow-up', conversation_id: conversationId });
    expect(failed.status).toBe(502);
    expect(await history()).toEqual(messages);
    expect(await list()).toEqual(order);
  });

  it('ends a stream that already started with an error event, and stores the error with the partial answer', async () => {
    const erin = await t.newWorkspace('erin');
    await configure(erin, { timeout_ms: 300 });
    llm.reply({ type: 'text', text: ['half an '], holdOpen: true });
    const events = await (await chat(erin, { message: 'Go on' })).done;
    expect(events.map((e) => e.event)).toEqual(['start', 'delta', 'error']);
    expect(events[2]?.data).toMatchObject({ code: 'provider_timeout' });
    expect(events[2]?.data.message).toContain('no fallback once output has been sent');
    const history = await t.call(erin, 'GET', `/api/chat/conversations/${events[0]?.data.conversation_id}`);
    expect(history.json().messages[1]).toMatchObject({ content: 'half an ' });
    expect(history.json().messages[1].error).toMatch(/^provider_timeout: /);
  });
});

describe('conversations', () => {
  it('lists the caller’s conversations, most recent message first, with titles from the first message', async () => {
    const frank = await t.newWorkspace('frank');
    const long = `${'word '.repeat(40)}end`;
    const a = (await (await chat(frank, { message: 'First topic' })).done)[0]?.data.conversation_id;
    const b = (await (await chat(frank, { message: long })).done)[0]?.data.conversation_id;
    let list = await t.call(frank, 'GET', '/api/chat/conversations');
    expect(list.json()).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(list.json().items.map((c: { id: string }) => c.id)).toEqual([b, a]);
    const title = list.json().items[0].title as string;
    expect(title).toHaveLength(80);
    expect(title.endsWith('…')).toBe(true);
    expect(list.json().items[0].last_message_at).toEqual(expect.any(String));

    await (await chat(frank, { message: 'back to the first', conversation_id: a })).done;
    list = await t.call(frank, 'GET', '/api/chat/conversations?limit=1');
    expect(list.json()).toMatchObject({ total: 2, limit: 1, items: [{ id: a, title: 'First topic' }] });
    const page2 = await t.call(frank, 'GET', '/api/chat/conversations?limit=1&offset=1');
    expect(page2.json().items[0].id).toBe(b);
  });

  it('pages a long history by cursor, oldest first', async () => {
    const gina = await t.newWorkspace('gina');
    const id = (await (await chat(gina, { message: 'one' })).done)[0]?.data.conversation_id;
    await (await chat(gina, { message: 'two', conversation_id: id })).done;
    const first = await t.call(gina, 'GET', `/api/chat/conversations/${id}?limit=3`);
    expect(first.json().messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
    const cursor = first.json().next_cursor;
    expect(cursor).toBe(first.json().messages[2].id);
    const rest = await t.call(gina, 'GET', `/api/chat/conversations/${id}?limit=3&after=${cursor}`);
    expect(rest.json()).toMatchObject({ next_cursor: null, messages: [{ role: 'assistant' }] });
  });

  it('keeps conversations to their workspace and their user', async () => {
    const opened = await (await chat(alice, { message: 'private thoughts' })).done;
    const id = opened[0]?.data.conversation_id;
    for (const stranger of [bob, carol]) {
      const read = await t.call(stranger, 'GET', `/api/chat/conversations/${id}`);
      expect(read.statusCode).toBe(404);
      expect(read.json().code).toBe('conversation_not_found');
      const list = await t.call(stranger, 'GET', '/api/chat/conversations?limit=200');
      expect(list.json().items.map((c: { id: string }) => c.id)).not.toContain(id);
      const post = await chat(stranger, { message: 'let me in', conversation_id: id });
      expect(post.status).toBe(404);
      expect(post.problem.code).toBe('conversation_not_found');
    }
    const agent = await buildAgent(t, alice);
    const foreign = await chat(bob, { message: 'hi', agent_id: agent.id });
    expect(foreign.status).toBe(404);
    expect(foreign.problem.code).toBe('agent_not_found');
  });
});
