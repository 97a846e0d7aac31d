import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { openEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildMember, configureLoopbackModel } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * POST /api/chat with an `Idempotency-Key`, through a real port against a loopback
 * OpenAI-compatible server that counts the model calls: a retry replays the turn without a
 * second call, two racing requests with one key make one call, a key reused for another body
 * is refused, keys are per workspace and per user, a bad key is a 400, and what a failed turn
 * leaves (a new attempt before the stream, its failure replayed after).
 */

let t: TestApp;
let base: string;
let llm: LlmServer;
let alice: Actor;
let carol: Actor;
let bob: Actor;

const configure = (actor: Actor, provider: Record<string, unknown> = {}) =>
  configureLoopbackModel(t, actor, llm.url, provider);

const chat = (actor: Actor, body: Record<string, unknown>, key?: string) =>
  openEventStream(
    `${base}/api/chat`,
    key === undefined ? actor.headers : { ...actor.headers, 'idempotency-key': key },
    body,
  );

const history = async (actor: Actor, conversationId: string) =>
  (await t.call(actor, 'GET', `/api/chat/conversations/${conversationId}`)).json().messages;

let keys = 0;
/** A fresh key per test, so that tests do not share turns. */
const newKey = () => `retry-${++keys}-${Date.now()}`;

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  llm = await startOpenAiServer();
  alice = await t.newWorkspace('alice');
  carol = await buildMember(t, alice, { role: 'member' });
  bob = await t.newWorkspace('bob');
  await configure(alice);
  await configure(bob);
});
afterAll(async () => {
  await llm.close();
  await t.close();
});

describe('a retried POST /api/chat with the same Idempotency-Key', () => {
  it('replays the finished turn as its events, with Idempotent-Replayed, without calling the model', async () => {
    const key = newKey();
    llm.reply({ type: 'text', text: ['Hel', 'lo ', 'world'], usage: { input_tokens: 12, output_tokens: 3 } });
    const first = await chat(alice, { message: 'Say hello' }, key);
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const sent = await first.done;
    expect(sent.map((e) => e.event)).toEqual(['start', 'delta', 'delta', 'delta', 'done']);
    const calls = llm.modelRequests().length;

    const again = await chat(alice, { message: 'Say hello' }, key);
    expect(again.status).toBe(200);
    expect(again.headers['content-type']).toContain('text/event-stream');
    expect(again.headers['idempotent-replayed']).toBe('true');
    const replayed = await again.done;
    expect(replayed.map((e) => e.event)).toEqual(['start', 'delta', 'done']);
    expect(replayed.map((e) => e.id)).toEqual(['1', '2', '3']);
    expect(replayed[0]?.data).toEqual(sent[0]?.data);
    expect(replayed[1]?.data).toEqual({ text: 'Hello world' });
    // The done event as it was sent: usage, cost, price, provider, model, fallbacks, latency.
    expect(replayed[2]?.data).toEqual(sent[4]?.data);
    expect(llm.modelRequests()).toHaveLength(calls);

    // One turn stored, not two.
    const messages = await history(alice, sent[0]?.data.conversation_id);
    expect(messages.map((m: { role: string; content: string }) => `${m.role}:${m.content}`)).toEqual([
      'user:Say hello',
      'assistant:Hello world',
    ]);
  });

  it('replays tool calls with their results before the text', async () => {
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
      const key = newKey();
      const body = { message: 'Weather?', agent_id: agent.id };
      const sent = await (await chat(alice, body, key)).done;
      expect(sent.map((e) => e.event)).toEqual([
        'start',
        'tool_call',
        'tool_result',
        'delta',
        'delta',
        'done',
      ]);
      const calls = llm.modelRequests().length;

      const replayed = await (await chat(alice, body, key)).done;
      expect(replayed.map((e) => e.event)).toEqual(['start', 'tool_call', 'tool_result', 'delta', 'done']);
      expect(replayed[1]?.data).toEqual(sent[1]?.data);
      expect(replayed[2]?.data).toEqual(sent[2]?.data);
      expect(replayed[3]?.data).toEqual({ text: 'It is 21 degrees.' });
      expect(replayed[4]?.data).toEqual(sent[5]?.data);
      expect(llm.modelRequests()).toHaveLength(calls);
    } finally {
      await new Promise((resolve) => target.close(resolve));
    }
  });

  it('lets two concurrent requests with one key make one model call: the other is 409 until the first finished', async () => {
    const key = newKey();
    const calls = llm.modelRequests().length;
    // A slow model: the second request arrives while the first waits for its first token.
    llm.reply({ type: 'text', text: ['slow ', 'answer'], firstByteDelayMs: 1_500 });
    const streams = await Promise.all([
      chat(alice, { message: 'Race me' }, key),
      chat(alice, { message: 'Race me' }, key),
    ]);
    const winner = streams.find((s) => s.status === 200);
    const loser = streams.find((s) => s.status !== 200);
    expect(winner).toBeDefined();
    expect(loser?.status).toBe(409);
    expect(loser?.headers['content-type']).toContain('application/problem+json');
    expect(loser?.headers['retry-after']).toBe('2');
    expect(loser?.problem).toMatchObject({ status: 409, code: 'idempotency_in_progress' });
    expect(loser?.problem.detail).toContain('Idempotency-Key');
    const sent = await winner?.done;
    expect(sent?.map((e) => e.event)).toEqual(['start', 'delta', 'delta', 'done']);

    const replayed = await (await chat(alice, { message: 'Race me' }, key)).done;
    expect(replayed.map((e) => e.event)).toEqual(['start', 'delta', 'done']);
    expect(replayed[1]?.data.text).toBe('slow answer');
    expect(llm.modelRequests()).toHaveLength(calls + 1);
  });

  it('refuses the same key with a different message, conversation or agent: 422 idempotency_key_reused', async () => {
    const key = newKey();
    const sent = await (await chat(alice, { message: 'Original' }, key)).done;
    const conversationId = sent[0]?.data.conversation_id;
    const agent = await buildAgent(t, alice, { model: null });
    const calls = llm.modelRequests().length;
    for (const body of [
      { message: 'Something else' },
      { message: 'Original', conversation_id: conversationId },
      { message: 'Original', agent_id: agent.id },
    ]) {
      const reused = await chat(alice, body, key);
      expect(reused.status, JSON.stringify(body)).toBe(422);
      expect(reused.headers['content-type']).toContain('application/problem+json');
      expect(reused.problem).toMatchObject({
        code: 'idempotency_key_reused',
        errors: [{ field: 'headers.idempotency-key' }],
      });
      expect(reused.problem.detail).toContain('Idempotency-Key');
    }
    expect(llm.modelRequests()).toHaveLength(calls);
    expect(await history(alice, conversationId)).toHaveLength(2);
  });

  it('keeps keys per user and per workspace: the same key of another member or workspace is its own turn', async () => {
    const key = newKey();
    const calls = llm.modelRequests().length;
    llm.reply(
      { type: 'text', text: 'for alice' },
      { type: 'text', text: 'for carol' },
      { type: 'text', text: 'for bob' },
    );
    const answers: string[] = [];
    for (const actor of [alice, carol, bob]) {
      const stream = await chat(actor, { message: 'Same key, same words' }, key);
      expect(stream.status).toBe(200);
      expect(stream.headers['idempotent-replayed']).toBeUndefined();
      const events = await stream.done;
      expect(events.at(-1)?.event).toBe('done');
      answers.push(events[1]?.data.text);
    }
    expect(answers).toEqual(['for alice', 'for carol', 'for bob']);
    expect(llm.modelRequests()).toHaveLength(calls + 3);
    // And each replays its own.
    const again = await (await chat(carol, { message: 'Same key, same words' }, key)).done;
    expect(again[1]?.data.text).toBe('for carol');
    expect(llm.modelRequests()).toHaveLength(calls + 3);
  });

  it('answers 400 naming the header for a key that is too long or not printable ASCII', async () => {
    const calls = llm.modelRequests().length;
    for (const key of ['k'.repeat(256), 'clé', 'tab\there']) {
      const response = await t.call(
        alice,
        'POST',
        '/api/chat',
        { message: 'hi' },
        {
          headers: { 'idempotency-key': key },
        },
      );
      expect(response.statusCode, key).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().errors[0].field).toBe('headers.idempotency-key');
    }
    const longest = await chat(alice, { message: 'a key of 255' }, 'k'.repeat(255));
    expect(longest.status).toBe(200);
    await longest.done;
    expect(llm.modelRequests()).toHaveLength(calls + 1);
  });
});

describe('a keyed turn that failed', () => {
  it('before the stream started keeps nothing, its key included: the retry is a new attempt', async () => {
    const dora = await t.newWorkspace('dora');
    await configure(dora);
    const key = newKey();
    llm.reply({ type: 'error', status: 500, message: 'upstream exploded' });
    const failed = await chat(dora, { message: 'Try me' }, key);
    expect(failed.status).toBe(502);
    expect(failed.problem.code).toBe('provider_error');
    expect((await t.call(dora, 'GET', '/api/chat/conversations')).json().total).toBe(0);

    const calls = llm.modelRequests().length;
    llm.reply({ type: 'text', text: 'second time lucky' });
    const retried = await chat(dora, { message: 'Try me' }, key);
    expect(retried.status).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    const events = await retried.done;
    expect(events.map((e) => e.event)).toEqual(['start', 'delta', 'done']);
    expect(llm.modelRequests()).toHaveLength(calls + 1);
    expect(await history(dora, events[0]?.data.conversation_id)).toHaveLength(2);
  });

  it('before the stream started, in a conversation, leaves its history and list order as they were', async () => {
    const gina = await t.newWorkspace('gina');
    await configure(gina);
    const opened = await (await chat(gina, { message: 'First' })).done;
    const conversationId = opened[0]?.data.conversation_id;
    await (await chat(gina, { message: 'Other topic' })).done;
    const list = async () => (await t.call(gina, 'GET', '/api/chat/conversations')).json().items;
    const before = await list();
    const messages = await history(gina, conversationId);

    llm.reply({ type: 'error', status: 500, message: 'upstream exploded' });
    const failed = await chat(gina, { message: 'Follow-up', conversation_id: conversationId }, newKey());
    expect(failed.status).toBe(502);
    expect(await history(gina, conversationId)).toEqual(messages);
    expect(await list()).toEqual(before);
  });

  it('after the stream started is replayed with its error, without calling the model', async () => {
    const erin = await t.newWorkspace('erin');
    await configure(erin, { timeout_ms: 300 });
    const key = newKey();
    llm.reply({ type: 'text', text: ['half an '], holdOpen: true });
    const sent = await (await chat(erin, { message: 'Go on' }, key)).done;
    expect(sent.map((e) => e.event)).toEqual(['start', 'delta', 'error']);
    const calls = llm.modelRequests().length;

    const again = await chat(erin, { message: 'Go on' }, key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const replayed = await again.done;
    expect(replayed.map((e) => e.event)).toEqual(['start', 'delta', 'error']);
    expect(replayed[0]?.data).toEqual(sent[0]?.data);
    expect(replayed[1]?.data).toEqual({ text: 'half an ' });
    expect(replayed[2]?.data).toEqual(sent[2]?.data);
    expect(replayed[2]?.data).toMatchObject({ code: 'provider_timeout', status: 504 });
    expect(llm.modelRequests()).toHaveLength(calls);
  });

  it('cut off by its client leaving is replayed as answer_interrupted, without calling the model', async () => {
    const key = newKey();
    llm.reply({ type: 'text', text: ['partial ', 'answer'], holdOpen: true });
    const stream = await chat(alice, { message: 'Tell me a long story' }, key);
    const [start] = await stream.waitForEvents(3);
    const request = llm.modelRequests().at(-1);
    stream.close();
    await request?.closed;
    // The stream's last write may land just after the client saw it.
    await expect
      .poll(async () => (await history(alice, start?.data.conversation_id))[1]?.error, { timeout: 5_000 })
      .toMatch(/^aborted/);
    const calls = llm.modelRequests().length;

    const replayed = await (await chat(alice, { message: 'Tell me a long story' }, key)).done;
    expect(replayed.map((e) => e.event)).toEqual(['start', 'delta', 'error']);
    expect(replayed[1]?.data).toEqual({ text: 'partial answer' });
    expect(replayed[2]?.data).toMatchObject({ code: 'answer_interrupted', status: 409 });
    expect(replayed[2]?.data.message).toContain('new Idempotency-Key');
    expect(llm.modelRequests()).toHaveLength(calls);
  });

  it('unfinished for longer than a turn can stream is taken as its process having died: replayed as answer_interrupted', async () => {
    const key = newKey();
    llm.reply({ type: 'text', text: ['never ', 'finished'], holdOpen: true });
    const stream = await chat(alice, { message: 'Are you there?' }, key);
    const [start] = await stream.waitForEvents(2);
    const waiting = await chat(alice, { message: 'Are you there?' }, key);
    expect(waiting.status).toBe(409);
    expect(waiting.problem.code).toBe('idempotency_in_progress');

    // As if the process streaming it had died ten minutes ago: the answer still says incomplete.
    await t.database.db.execute(
      sql`update chat_turn_keys set created_at = now() - interval '10 minutes 1 second' where key = ${key}`,
    );
    const calls = llm.modelRequests().length;
    const replayed = await (await chat(alice, { message: 'Are you there?' }, key)).done;
    expect(replayed.map((e) => e.event)).toEqual(['start', 'error']);
    expect(replayed[0]?.data).toEqual(start?.data);
    expect(replayed[1]?.data).toMatchObject({ code: 'answer_interrupted', status: 409 });
    expect(llm.modelRequests()).toHaveLength(calls);
    stream.close();
  });
});
