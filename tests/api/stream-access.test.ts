import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { type EventStream, openEventStream, type ReceivedEvent } from '../helpers/event-stream.ts';
import {
  buildAgent,
  buildApiKey,
  buildCredential,
  buildMember,
  buildWorkflow,
} from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import {
  createTestApp,
  createTestDatabaseEnv,
  onPostgres,
  type TestApp,
  type TestDatabaseEnv,
} from '../helpers/test-app.ts';
import { opened, openSocket, refused, type SocketClient } from '../helpers/ws-client.ts';

/**
 * Withdrawn access ends live streams at once, and live streams are capped.
 *
 * A member removed from the workspace, a member whose role drops below what the stream needs,
 * a revoked API key and a deleted workspace: each open stream of theirs (activity SSE, activity
 * WebSocket, a run's event SSE, a chat answer) ends within a second with a last `error` event
 * `access_revoked` (SSE) or close code 4403 (WebSocket), and receives nothing after. Streams of
 * people who keep their access go on. On PostgreSQL with Redis, the streams are served by a
 * second process and the changes made through the first, so the notice crosses processes.
 *
 * The cap: at most STREAMS_PER_USER live streams per user and STREAMS_PER_WORKSPACE per
 * workspace in a process; beyond, 429 `too_many_streams` with Retry-After, and a stream that
 * ends (a client that goes away included) gives its slot back.
 */

const PER_USER = 3;
const PER_WORKSPACE = 5;
/** How soon a stream must end after the change that withdrew its access was answered (ms). */
const WITHIN_MS = 1_000;

let dbEnv: TestDatabaseEnv;
/** Where changes are made. */
let t: TestApp;
/** Where streams are followed: a second process on PostgreSQL with Redis, else the same one. */
let watcher: TestApp;
let base: string;
let llm: LlmServer;

beforeAll(async () => {
  const env = {
    VAULT_ALLOW_LOOPBACK: 'true',
    STREAMS_PER_USER: String(PER_USER),
    STREAMS_PER_WORKSPACE: String(PER_WORKSPACE),
  };
  dbEnv = await createTestDatabaseEnv();
  t = await createTestApp({ reuse: dbEnv, env });
  watcher = onPostgres && process.env.REDIS_URL ? await createTestApp({ reuse: dbEnv, env: { ...env } }) : t;
  await watcher.app.listen({ port: 0, host: '127.0.0.1' });
  base = `127.0.0.1:${(watcher.app.server.address() as AddressInfo).port}`;
  llm = await startOpenAiServer();
});
afterAll(async () => {
  if (watcher !== t) await watcher.close({ keep: true });
  await t.close();
  await llm.close();
});

/** Configures the workspace with the loopback model server as provider `loop`. */
async function configure(actor: Actor) {
  const credential = await buildCredential(t, actor, {
    credential_type: 'openai_credentials',
    data: { api_key: 'sk-stream-access-1c7e' },
  });
  const response = await t.call(actor, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: credential.id }],
    default_model: { provider: 'loop', name: 'chat-model' },
  });
  expect(response.statusCode, response.body).toBe(200);
}

const activitySse = (headers: Record<string, string>) =>
  openEventStream(`http://${base}/api/activity/stream`, headers, undefined, 'GET');
/** Opens the activity WebSocket; `received` keeps every message, in order. */
async function activitySocket(headers: Record<string, string>) {
  const socket = opened(await openSocket(`ws://${base}/api/ws`, { headers }));
  const received: Record<string, unknown>[] = [];
  socket.socket.on('message', (data) => received.push(JSON.parse(data.toString())));
  return Object.assign(socket, { received });
}
const runEvents = (actor: Actor, runId: string) =>
  openEventStream(`http://${base}/api/runs/${runId}/events`, actor.headers, undefined, 'GET');

/** A run that stays Running: its step waits on a model answer that never ends. */
async function liveRun(owner: Actor): Promise<string> {
  llm.reply({ type: 'text', text: ['thinking'], holdOpen: true });
  const agent = await buildAgent(t, owner, { model: { provider: 'loop', name: 'chat-model' } });
  const workflow = await buildWorkflow(t, owner, { goal: 'Think forever', agents: [agent.id] });
  const started = await t.call(owner, 'POST', `/api/workflows/${workflow.id}/run`, {});
  expect(started.statusCode, started.body).toBe(202);
  const runId = started.json().id as string;
  await expect
    .poll(async () => (await t.call(owner, 'GET', `/api/runs/${runId}`)).json().status, {
      timeout: 10_000,
      interval: 50,
      message: 'the run did not start',
    })
    .toBe('Running');
  return runId;
}

/** Resolves with the value, or fails naming `what` when it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The SSE stream ends within a second with `access_revoked` as its last event. */
async function endsRevoked(stream: EventStream, what: string): Promise<ReceivedEvent[]> {
  const events = await within(stream.done, WITHIN_MS, `${what}: the end of the stream`);
  const last = events.at(-1);
  expect(last?.event, `${what}: ${JSON.stringify(events)}`).toBe('error');
  expect(last?.data).toMatchObject({ code: 'access_revoked', status: 403 });
  expect(typeof last?.data.message).toBe('string');
  return events;
}

/** The WebSocket says why in its last message, then closes with 4403 within a second. */
async function closesRevoked(
  socket: SocketClient & { received: Record<string, unknown>[] },
  what: string,
): Promise<void> {
  const closed = await within(socket.closed, WITHIN_MS, `${what}: the close of the socket`);
  expect(closed.code, what).toBe(4403);
  expect(closed.reason).toContain('access_revoked');
  expect(socket.received.at(-1)).toEqual({
    error: { code: 'access_revoked', message: expect.any(String) },
  });
}

/** Makes an activity event in the workspace (an agent created), for streams that should still see it. */
const somethingHappens = (owner: Actor, name: string) => buildAgent(t, owner, { name });

describe('withdrawn access ends live streams', () => {
  it('a removed member’s activity SSE, activity WebSocket and run event SSE end at once; others go on', async () => {
    const owner = await t.newWorkspace();
    await configure(owner);
    const removed = await buildMember(t, owner, { role: 'member' });
    const stays = await buildMember(t, owner, { role: 'viewer' });
    const runId = await liveRun(owner);

    const sse = await activitySse(removed.headers);
    const socket = await activitySocket(removed.headers);
    const run = await runEvents(removed, runId);
    const staying = await activitySse(stays.headers);
    for (const stream of [sse, run, staying]) expect(stream.status).toBe(200);
    expect((await run.waitForEvents(1))[0]?.event).toBe('run');
    await sse.waitForEvents(1);
    await staying.waitForEvents(1);
    // Streams are live: an event reaches them all before the removal.
    await somethingHappens(owner, 'Before');
    await sse.waitForEvents(2);
    await socket.next(1);

    const removal = await t.call(owner, 'DELETE', `/api/workspaces/members/${removed.userId}`);
    expect(removal.statusCode, removal.body).toBe(204);
    await Promise.all([
      endsRevoked(sse, 'activity SSE'),
      closesRevoked(socket, 'activity WebSocket'),
      endsRevoked(run, 'run event SSE'),
    ]);

    // Nothing after: the next event reaches the member who stayed, not the removed one.
    const seenBefore = sse.events.length;
    const socketSawBefore = socket.received.length;
    await somethingHappens(owner, 'After');
    // The live run adds events of its own to the feed, so look for this one among them.
    const afterEvent = await within(
      (async () => {
        for (let count = staying.events.length + 1; ; count++) {
          const events = await staying.waitForEvents(count);
          const found = events.find((event) => String(event.data?.message).includes('After'));
          if (found) return found;
        }
      })(),
      WITHIN_MS * 5,
      'the staying member’s activity SSE: the event made after the removal',
    );
    expect(afterEvent.data.message).toContain('After');
    expect(sse.events.length).toBe(seenBefore);
    expect(socket.received.length).toBe(socketSawBefore);
    expect(staying.events.some((event) => event.event === 'error')).toBe(false);
    // And they cannot come back: a new stream is refused before it opens.
    const again = await activitySse(removed.headers);
    expect(again.status).toBe(403);
    staying.close();
    await t.call(owner, 'POST', `/api/runs/${runId}/cancel`);
  });

  it('a role lowered below what the stream needs ends it; a role that still suffices does not', async () => {
    const owner = await t.newWorkspace();
    await configure(owner);
    const lowered = await buildMember(t, owner, { role: 'member' });
    const raised = await buildMember(t, owner, { role: 'viewer' });

    // A chat answer needs the member role (it writes a conversation); activity needs viewer.
    llm.reply({ type: 'text', text: ['a long ', 'answer'], holdOpen: true });
    const chat = await openEventStream(`http://${base}/api/chat`, lowered.headers, { message: 'Go on' });
    expect(chat.status).toBe(200);
    await chat.waitForEvents(2);
    const feed = await activitySse(lowered.headers);
    const raisedFeed = await activitySse(raised.headers);
    await feed.waitForEvents(1);
    await raisedFeed.waitForEvents(1);

    const toViewer = await t.call(owner, 'PUT', `/api/workspaces/members/${lowered.userId}`, {
      role: 'viewer',
    });
    expect(toViewer.statusCode, toViewer.body).toBe(200);
    const toAdmin = await t.call(owner, 'PUT', `/api/workspaces/members/${raised.userId}`, { role: 'admin' });
    expect(toAdmin.statusCode, toAdmin.body).toBe(200);
    await endsRevoked(chat, 'chat answer');
    // The provider call of the ended answer is aborted, and the answer stored says why.
    const request = llm.modelRequests().at(-1);
    await within(request?.closed ?? Promise.resolve(), WITHIN_MS, 'the abort of the model call');
    const conversation = `/api/chat/conversations/${chat.events[0]?.data.conversation_id}`;
    await expect
      .poll(async () => (await t.call(lowered, 'GET', conversation)).json().messages?.[1], {
        timeout: 3_000,
        interval: 50,
      })
      .toMatchObject({ content: 'a long answer', error: 'aborted: access_revoked' });

    // A viewer may still follow activity, an admin too: those streams go on and see what follows.
    await somethingHappens(owner, 'Still visible');
    const [, seen] = await feed.waitForEvents(2);
    expect(seen?.data.message).toContain('Still visible');
    expect((await raisedFeed.waitForEvents(2))[1]?.data.message).toContain('Still visible');
    feed.close();
    raisedFeed.close();
  });

  it('a revoked API key ends the streams opened with it, not the others of the same user', async () => {
    const owner = await t.newWorkspace();
    const member = await buildMember(t, owner, { role: 'member' });
    const key = await buildApiKey(t, owner);
    const viaKey = { authorization: member.headers.authorization as string, 'x-api-key': key.key };
    const sse = await activitySse(viaKey);
    const socket = await activitySocket(viaKey);
    const viaHeader = await activitySse(member.headers);
    await sse.waitForEvents(1);
    await viaHeader.waitForEvents(1);

    const revoke = await t.call(owner, 'DELETE', `/api/workspaces/api-keys/${key.id}`);
    expect(revoke.statusCode, revoke.body).toBe(204);
    await Promise.all([endsRevoked(sse, 'SSE via the key'), closesRevoked(socket, 'WebSocket via the key')]);
    await somethingHappens(owner, 'Key gone');
    expect((await viaHeader.waitForEvents(2))[1]?.data.message).toContain('Key gone');
    viaHeader.close();
  });

  it('a deleted workspace (its tenant deleted) ends every stream in it', async () => {
    const creator = await t.newWorkspace();
    const tenant = (await t.call(creator, 'GET', '/api/workspaces/current').then((answer) => answer.json()))
      .tenant;
    const viewer = await buildMember(t, creator, { role: 'viewer' });
    const owners = await activitySse(creator.headers);
    const viewers = await activitySocket(viewer.headers);
    await owners.waitForEvents(1);

    const deleted = await t.call(
      undefined,
      'DELETE',
      `/api/settings/tenants/${tenant.id}?confirm=${encodeURIComponent(tenant.name)}`,
      undefined,
      { headers: { authorization: creator.headers.authorization as string } },
    );
    expect(deleted.statusCode, deleted.body).toBe(204);
    await Promise.all([endsRevoked(owners, 'owner’s SSE'), closesRevoked(viewers, 'viewer’s WebSocket')]);
  });
});

describe('the cap on live streams', () => {
  it('answers 429 too_many_streams beyond the user’s cap, SSE and WebSocket alike, and frees a slot when a client leaves', async () => {
    const owner = await t.newWorkspace();
    const streams = await Promise.all(Array.from({ length: PER_USER - 1 }, () => activitySse(owner.headers)));
    const socket = await activitySocket(owner.headers);
    for (const stream of streams) expect(stream.status).toBe(200);

    const sseOver = await activitySse(owner.headers);
    expect(sseOver.status).toBe(429);
    expect(sseOver.headers['content-type']).toContain('application/problem+json');
    expect(sseOver.headers['retry-after']).toMatch(/^\d+$/);
    expect(sseOver.problem).toMatchObject({ status: 429, code: 'too_many_streams' });
    expect(sseOver.problem.detail).toContain(String(PER_USER));
    const socketOver = refused(await openSocket(`ws://${base}/api/ws`, { headers: owner.headers }));
    expect(socketOver.status).toBe(429);
    expect(socketOver.problem.code).toBe('too_many_streams');
    // Only live streams count: ordinary requests are not limited by them.
    expect((await t.call(owner, 'GET', '/api/activity')).statusCode).toBe(200);

    // A client that goes away gives its slot back (SSE, then WebSocket).
    streams[0]?.close();
    const replacement = await eventuallyOpens(() => activitySse(owner.headers));
    socket.close();
    const socketReplacement = await eventuallyOpens(() => activitySse(owner.headers));
    for (const stream of [...streams.slice(1), replacement, socketReplacement]) stream.close();
  });

  it('answers 429 beyond the workspace’s cap across its users, and a stream the server ends frees its slot', async () => {
    const owner = await t.newWorkspace();
    const members = await Promise.all(
      Array.from({ length: 3 }, () => buildMember(t, owner, { role: 'viewer' })),
    );
    const open: EventStream[] = [];
    for (const who of [owner, owner, members[0], members[0], members[1]] as Actor[]) {
      const stream = await activitySse(who.headers);
      expect(stream.status).toBe(200);
      open.push(stream);
    }
    expect(open.length).toBe(PER_WORKSPACE);
    const over = await activitySse((members[2] as Actor).headers);
    expect(over.status).toBe(429);
    expect(over.problem.code).toBe('too_many_streams');
    expect(over.problem.detail).toContain(String(PER_WORKSPACE));
    // Another workspace is not affected.
    const elsewhere = await t.newWorkspace();
    const other = await activitySse(elsewhere.headers);
    expect(other.status).toBe(200);
    other.close();

    // The server ends member 1's stream (removed): its slot is free for member 3.
    await t.call(owner, 'DELETE', `/api/workspaces/members/${(members[1] as Actor).userId}`);
    await endsRevoked(open[4] as EventStream, 'removed member’s stream');
    const admitted = await eventuallyOpens(() => activitySse((members[2] as Actor).headers));
    for (const stream of [...open.slice(0, 4), admitted]) stream.close();
  });
});

/** Opens a stream, retrying for a moment while the server notices a client that went away. */
async function eventuallyOpens(open: () => Promise<EventStream>): Promise<EventStream> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const stream = await open();
    if (stream.status === 200) return stream;
    expect(stream.status).toBe(429);
    if (Date.now() > deadline) throw new Error('the slot was not given back');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
