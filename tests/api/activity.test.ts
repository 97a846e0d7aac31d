import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventHub } from '../../src/events/event-hub.ts';
import type { Actor } from '../helpers/api-client.ts';
import { type EventStream, inOrder, type OrderedEvents, openEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildApiKey, buildMember, buildWorkflow } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';
import { opened, openSocket, refused, type SocketClient } from '../helpers/ws-client.ts';

/**
 * The activity feed through the HTTP contract: the list, the SSE stream and the WebSocket,
 * the live channels through a real port with real clients. Each test acts in its own
 * workspaces.
 */

let t: TestApp;
let base: string;
/** Live hub subscriptions to feeds, counted by wrapping the hub the service was wired with. */
let subscriptions = 0;

beforeAll(async () => {
  t = await createTestApp({ env: { WS_PING_INTERVAL_MS: '150' } });
  const hub: EventHub = t.services.eventHub;
  const subscribe = hub.subscribe.bind(hub);
  hub.subscribe = (topic, listener) => {
    // Other modules' own subscriptions (the run engine's, one per process) are not the feed's.
    if (!topic.startsWith('activity:')) return subscribe(topic, listener);
    subscriptions += 1;
    const off = subscribe(topic, listener);
    return () => {
      subscriptions -= 1;
      off();
    };
  };
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const address = t.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  base = `127.0.0.1:${address.port}`;
});
afterAll(() => t.close());

const http = (path: string) => `http://${base}${path}`;

/** Opens the activity stream at `path` as a real SSE client, read in order. */
async function follow(
  path: string,
  headers: Record<string, string> = {},
): Promise<EventStream & OrderedEvents> {
  const stream = await openEventStream(http(path), headers, undefined, 'GET');
  return Object.assign(stream, inOrder(stream));
}
const ws = (path: string) => `ws://${base}${path}`;

/** Waits until `check` holds, polling: for effects that land shortly after a disconnect. */
const eventually = (check: () => boolean, ms = 3000): Promise<void> =>
  expect.poll(check, { timeout: ms, interval: 20, message: 'the condition did not hold in time' }).toBe(true);

/** The newest event id of the actor's workspace (0 when none). */
async function newestId(actor: Actor): Promise<number> {
  const response = await t.call(actor, 'GET', '/api/activity?limit=1');
  return response.json().items[0]?.id ?? 0;
}

describe('GET /api/activity', () => {
  it('lists what happened, newest first, with readable messages', async () => {
    const alice = await t.newWorkspace();
    const agent = await buildAgent(t, alice, { name: 'Researcher' });
    const workflow = await buildWorkflow(t, alice, { name: 'Review PR', agents: [agent.id] });
    const response = await t.call(alice, 'GET', '/api/activity');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ limit: 50, next_cursor: null, next: null });
    expect(body.items).toEqual([
      {
        id: expect.any(Number),
        kind: 'workflow.created',
        subject_type: 'workflow',
        subject_id: workflow.id,
        message: 'Workflow “Review PR” created',
        data: { name: 'Review PR', agents: 1 },
        actor: alice.userId,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
      {
        id: expect.any(Number),
        kind: 'agent.created',
        subject_type: 'agent',
        subject_id: agent.id,
        message: 'Agent “Researcher” created',
        data: { name: 'Researcher', model: { provider: 'openai', name: 'gpt-4o-mini' } },
        actor: alice.userId,
        created_at: expect.any(String),
      },
    ]);
    expect(body.items[0].id).toBeGreaterThan(body.items[1].id);
  });

  it('records a change of the provider settings as system.settings_changed', async () => {
    const alice = await t.newWorkspace();
    const saved = await t.call(alice, 'PUT', '/api/settings/providers', {
      fallback: [{ provider: 'local', name: 'echo' }],
    });
    expect(saved.statusCode, saved.body).toBe(200);
    const [event] = (await t.call(alice, 'GET', '/api/activity?subject_type=settings')).json().items;
    expect(event).toMatchObject({
      kind: 'system.settings_changed',
      subject_id: 'providers',
      actor: alice.userId,
      data: { namespace: 'providers' },
    });
  });

  it('pages by cursor: next_cursor as before, or the next link, with the same filters', async () => {
    const alice = await t.newWorkspace();
    for (let i = 0; i < 5; i += 1) await buildAgent(t, alice, { name: `agent ${i}` });
    await buildWorkflow(t, alice);
    const first = (await t.call(alice, 'GET', '/api/activity?kind=agent.created&limit=2')).json();
    expect(first.items.map((item: { message: string }) => item.message)).toEqual([
      'Agent “agent 4” created',
      'Agent “agent 3” created',
    ]);
    expect(first.next).toBe(`/api/activity?kind=agent.created&limit=2&before=${first.next_cursor}`);
    // Events added meanwhile do not shift the pages already started.
    await buildAgent(t, alice, { name: 'late' });
    const second = (await t.call(alice, 'GET', first.next)).json();
    expect(second.items.map((item: { message: string }) => item.message)).toEqual([
      'Agent “agent 2” created',
      'Agent “agent 1” created',
    ]);
    const third = (
      await t.call(alice, 'GET', `/api/activity?kind=agent.created&limit=2&before=${second.next_cursor}`)
    ).json();
    expect(third.items.map((item: { message: string }) => item.message)).toEqual(['Agent “agent 0” created']);
    expect(third).toMatchObject({ next_cursor: null, next: null });
  });

  it('filters by several kinds and by subject', async () => {
    const alice = await t.newWorkspace();
    const agent = await buildAgent(t, alice);
    const workflow = await buildWorkflow(t, alice);
    const kinds = async (query: string) =>
      (await t.call(alice, 'GET', `/api/activity?${query}`))
        .json()
        .items.map((item: { kind: string }) => item.kind);
    expect(await kinds('kind=agent.created&kind=workflow.created')).toEqual([
      'workflow.created',
      'agent.created',
    ]);
    expect(await kinds('kind=workflow.failed')).toEqual([]);
    expect(await kinds('subject_type=agent')).toEqual(['agent.created']);
    expect(await kinds(`subject_type=workflow&subject_id=${workflow.id}`)).toEqual(['workflow.created']);
    expect(await kinds(`subject_id=${agent.id}`)).toEqual(['agent.created']);
  });

  it('shows no other workspace’s events, even by their subject id or cursor', async () => {
    const alice = await t.newWorkspace();
    const mallory = await t.newWorkspace();
    const agent = await buildAgent(t, alice);
    const id = await newestId(alice);
    for (const query of ['', `?subject_id=${agent.id}`, `?before=${id + 1}`]) {
      const response = await t.call(mallory, 'GET', `/api/activity${query}`);
      expect(response.statusCode).toBe(200);
      expect(response.json().items).toEqual([]);
    }
  });

  it('answers a bad cursor or kind with a 400 naming the field', async () => {
    const alice = await t.newWorkspace();
    for (const [query, field] of [
      ['before=abc', 'query.before'],
      ['before=0', 'query.before'],
      ['before=-5', 'query.before'],
      ['before=9007199254740993', 'query.before'],
      ['before=1.5', 'query.before'],
      ['kind=agent.exploded', 'query.kind.0'],
      ['limit=0', 'query.limit'],
      ['limit=201', 'query.limit'],
    ]) {
      const response = await t.call(alice, 'GET', `/api/activity?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(
        response.json().errors.map((e: { field: string }) => e.field),
        query,
      ).toContain(field);
    }
  });

  it('is open to viewers and refused without credentials', async () => {
    const alice = await t.newWorkspace();
    const viewer = await buildMember(t, alice, { role: 'viewer' });
    expect((await t.call(viewer, 'GET', '/api/activity')).statusCode).toBe(200);
    const anonymous = await t.call(undefined, 'GET', '/api/activity');
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().code).toBe('unauthorized');
  });
});

describe('GET /api/activity/stream (SSE)', () => {
  it('opens with ready, then sends each new event named by its kind with its id', async () => {
    const alice = await t.newWorkspace();
    const stream = await follow('/api/activity/stream', alice.headers);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(await stream.next(1)).toEqual([{ event: 'ready', id: undefined, data: { after: 0 } }]);
    const agent = await buildAgent(t, alice, { name: 'Researcher' });
    const [created] = await stream.next(1);
    const listed = (await t.call(alice, 'GET', '/api/activity')).json().items[0];
    expect(created).toEqual({ event: 'agent.created', id: String(listed.id), data: listed });
    expect(listed).toMatchObject({ subject_id: agent.id, message: 'Agent “Researcher” created' });
    stream.close();
  });

  it('follows a run live: workflow started, agent started and completed, workflow completed', async () => {
    const alice = await t.newWorkspace();
    const agent = await buildAgent(t, alice, { name: 'Echo', model: null });
    const workflow = await buildWorkflow(t, alice, {
      name: 'Echo flow',
      goal: 'Say hello',
      agents: [agent.id],
    });
    const stream = await follow(`/api/activity/stream?after=${await newestId(alice)}`, alice.headers);
    await stream.next(1);
    const started = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {});
    expect(started.statusCode, started.body).toBe(202);
    const events = await stream.next(4);
    expect(events.map((event) => event.event)).toEqual([
      'workflow.started',
      'agent.started',
      'agent.completed',
      'workflow.completed',
    ]);
    expect(events[3]?.data).toMatchObject({ subject_type: 'run', subject_id: started.json().id });
    stream.close();
  });

  it('gives a client reconnecting with Last-Event-ID exactly the events it missed, then live ones', async () => {
    const alice = await t.newWorkspace();
    await buildAgent(t, alice, { name: 'before' });
    const first = await follow('/api/activity/stream', alice.headers);
    await first.next(1);
    await buildAgent(t, alice, { name: 'seen' });
    const [seen] = await first.next(1);
    first.close();
    await eventually(() => subscriptions === 0);
    for (const name of ['missed 1', 'missed 2', 'missed 3']) await buildAgent(t, alice, { name });
    const again = await follow('/api/activity/stream', {
      ...alice.headers,
      'last-event-id': String(seen?.id),
    });
    const [ready, ...missed] = await again.next(4);
    expect(ready).toEqual({ event: 'ready', id: undefined, data: { after: Number(seen?.id) } });
    expect(missed.map((event) => (event.data as { message: string }).message)).toEqual([
      'Agent “missed 1” created',
      'Agent “missed 2” created',
      'Agent “missed 3” created',
    ]);
    expect(missed.map((event) => Number(event.id))).toEqual(
      [...missed.map((event) => Number(event.id))].sort((a, b) => a - b),
    );
    await buildWorkflow(t, alice, { name: 'live' });
    expect((await again.next(1))[0]).toMatchObject({
      event: 'workflow.created',
      data: { message: 'Workflow “live” created' },
    });
    expect(await again.quietFor(100)).toBe(true);
    again.close();
  });

  it('replays from ?after= and applies the filters', async () => {
    const alice = await t.newWorkspace();
    await buildAgent(t, alice, { name: 'one' });
    await buildWorkflow(t, alice, { name: 'flow' });
    await buildAgent(t, alice, { name: 'two' });
    const stream = await follow('/api/activity/stream?after=0&kind=agent.created', alice.headers);
    const events = await stream.next(3);
    expect(events.map((event) => event.event)).toEqual(['ready', 'agent.created', 'agent.created']);
    expect(await stream.quietFor(100)).toBe(true);
    stream.close();
  });

  it('never sends another workspace’s events', async () => {
    const alice = await t.newWorkspace();
    const mallory = await t.newWorkspace();
    await buildAgent(t, alice, { name: 'alice history' });
    const theirs = await follow('/api/activity/stream?after=0', mallory.headers);
    expect((await theirs.next(1))[0]?.event).toBe('ready');
    await buildAgent(t, alice, { name: 'alice live' });
    await buildAgent(t, mallory, { name: 'mallory live' });
    const [only] = await theirs.next(1);
    expect(only?.data).toMatchObject({ message: 'Agent “mallory live” created' });
    expect(await theirs.quietFor(150)).toBe(true);
    theirs.close();
  });

  it('answers a bad Last-Event-ID or after with a 400 naming the field, before any stream', async () => {
    const alice = await t.newWorkspace();
    for (const [headers, path, field] of [
      [{ 'last-event-id': 'abc' }, '/api/activity/stream', 'headers.last-event-id'],
      [{ 'last-event-id': '-1' }, '/api/activity/stream', 'headers.last-event-id'],
      [{ 'last-event-id': '99999999999999999999' }, '/api/activity/stream', 'headers.last-event-id'],
      [{}, '/api/activity/stream?after=x', 'query.after'],
      [{}, '/api/activity/stream?after=-1', 'query.after'],
      [{}, '/api/activity/stream?kind=nope', 'query.kind.0'],
    ] as const) {
      const stream = await follow(path, { ...alice.headers, ...headers });
      expect(stream.status, field).toBe(400);
      expect(stream.headers['content-type']).toContain('application/problem+json');
      const errors = (stream.problem?.errors ?? []) as { field: string }[];
      expect(errors.map((e) => e.field)).toContain(field);
    }
  });

  it('refuses an unauthenticated or foreign client with problem details, not a stream', async () => {
    const alice = await t.newWorkspace();
    const mallory = await t.newWorkspace();
    const anonymous = await follow('/api/activity/stream');
    expect(anonymous.status).toBe(401);
    expect(anonymous.problem?.code).toBe('unauthorized');
    const foreign = await follow('/api/activity/stream', {
      ...mallory.headers,
      'x-workspace-id': alice.workspaceId,
    });
    expect(foreign.status).toBe(403);
    expect(foreign.problem?.code).toBe('workspace_forbidden');
  });

  it('drops its hub subscription when the client disconnects', async () => {
    const alice = await t.newWorkspace();
    await eventually(() => subscriptions === 0);
    const streams = await Promise.all([1, 2, 3].map(() => follow('/api/activity/stream', alice.headers)));
    for (const stream of streams) await stream.next(1);
    expect(subscriptions).toBe(3);
    for (const stream of streams) stream.close();
    await eventually(() => subscriptions === 0);
  });
});

describe('GET /api/ws (WebSocket)', () => {
  it('sends each new event as JSON to a header-authenticated socket, and replays from ?after=', async () => {
    const alice = await t.newWorkspace();
    await buildAgent(t, alice, { name: 'earlier' });
    const socket = opened(await openSocket(ws('/api/ws?after=0'), { headers: alice.headers }));
    const [earlier] = await socket.next(1);
    expect(earlier).toEqual({
      id: expect.any(Number),
      kind: 'agent.created',
      subject_type: 'agent',
      subject_id: expect.any(String),
      message: 'Agent “earlier” created',
      data: { name: 'earlier', model: { provider: 'openai', name: 'gpt-4o-mini' } },
      actor: alice.userId,
      created_at: expect.any(String),
    });
    const workflow = await buildWorkflow(t, alice, { name: 'later' });
    const [later] = await socket.next(1);
    expect(later).toMatchObject({ kind: 'workflow.created', subject_id: workflow.id });
    expect(later?.id).toBeGreaterThan(earlier?.id as number);
    socket.close();
  });

  it('accepts an API key as well', async () => {
    const alice = await t.newWorkspace();
    const key = await buildApiKey(t, alice);
    const socket = opened(
      await openSocket(ws(`/api/ws?after=${await newestId(alice)}`), {
        headers: { authorization: alice.headers.authorization as string, 'x-api-key': key.key },
      }),
    );
    await buildAgent(t, alice, { name: 'keyed' });
    expect((await socket.next(1))[0]).toMatchObject({ message: 'Agent “keyed” created' });
    socket.close();
  });

  it('opens with a single-use ticket, which works once and for its own workspace only', async () => {
    const alice = await t.newWorkspace();
    const mallory = await t.newWorkspace();
    const issued = await t.call(alice, 'POST', '/api/activity/ws-ticket');
    expect(issued.statusCode).toBe(201);
    const { ticket, expires_in } = issued.json();
    expect(expires_in).toBe(30);
    const socket = opened(await openSocket(ws(`/api/ws?ticket=${ticket}&after=${await newestId(alice)}`)));
    await buildAgent(t, mallory, { name: 'not for alice' });
    await buildAgent(t, alice, { name: 'for alice' });
    expect((await socket.next(1))[0]).toMatchObject({ message: 'Agent “for alice” created' });
    expect(await socket.quietFor(150)).toBe(true);
    socket.close();
    const reused = refused(await openSocket(ws(`/api/ws?ticket=${ticket}`)));
    expect(reused.status).toBe(401);
    expect(reused.contentType).toContain('application/problem+json');
    expect(reused.problem.code).toBe('unauthorized');
    // Neither the spent ticket nor a rejected one reaches the logs.
    expect(t.rawLogs()).not.toContain(ticket.slice(4));
  });

  it('refuses a ticket whose holder has left the workspace', async () => {
    const alice = await t.newWorkspace();
    const member = await buildMember(t, alice, { role: 'viewer' });
    const { ticket } = (await t.call(member, 'POST', '/api/activity/ws-ticket')).json();
    expect((await t.call(alice, 'DELETE', `/api/workspaces/members/${member.userId}`)).statusCode).toBe(204);
    const refusal = refused(await openSocket(ws(`/api/ws?ticket=${ticket}`)));
    expect(refusal.status).toBe(403);
    expect(refusal.problem.code).toBe('workspace_forbidden');
  });

  it('refuses a missing, forged or foreign authentication with HTTP problem details', async () => {
    const alice = await t.newWorkspace();
    const mallory = await t.newWorkspace();
    const cases: [Record<string, string>, string, number, string][] = [
      [{}, '/api/ws', 401, 'unauthorized'],
      [{}, '/api/ws?ticket=wst_forged', 401, 'unauthorized'],
      [{}, `/api/ws?ticket=wst_${'A'.repeat(43)}`, 401, 'unauthorized'],
      [
        { authorization: 'Bearer not-a-token', 'x-workspace-id': alice.workspaceId },
        '/api/ws',
        401,
        'unauthorized',
      ],
      [{ ...mallory.headers, 'x-workspace-id': alice.workspaceId }, '/api/ws', 403, 'workspace_forbidden'],
      [alice.headers, '/api/ws?after=-1', 400, 'validation_failed'],
    ];
    for (const [headers, path, status, code] of cases) {
      const refusal = refused(await openSocket(ws(path), { headers }));
      expect(refusal.status, path).toBe(status);
      expect(refusal.contentType).toContain('application/problem+json');
      expect(refusal.problem.code).toBe(code);
    }
  });

  it('closes the connection of a refused upgrade once it has answered', async () => {
    const connection = net.connect(Number(base.split(':')[1]), '127.0.0.1');
    let answer = '';
    connection.on('data', (chunk) => {
      answer += chunk.toString();
    });
    const closed = new Promise<string>((resolve) => connection.on('close', () => resolve('closed')));
    connection.write(
      'GET /api/ws HTTP/1.1\r\nHost: test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    const outcome = await Promise.race([
      closed,
      new Promise((resolve) => setTimeout(() => resolve('open'), 2000)),
    ]);
    connection.destroy();
    expect(outcome).toBe('closed');
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toContain('"code":"unauthorized"');
  });

  it('never delivers another workspace’s events', async () => {
    const alice = await t.newWorkspace();
    const mallory = await t.newWorkspace();
    const sockets = {
      alice: opened(
        await openSocket(ws(`/api/ws?after=${await newestId(alice)}`), { headers: alice.headers }),
      ),
      mallory: opened(
        await openSocket(ws(`/api/ws?after=${await newestId(mallory)}`), { headers: mallory.headers }),
      ),
    };
    await buildAgent(t, alice, { name: 'a1' });
    await buildAgent(t, mallory, { name: 'm1' });
    await buildAgent(t, alice, { name: 'a2' });
    const names = async (socket: SocketClient, count: number) =>
      (await socket.next(count)).map((message) => (message.data as { name: string }).name);
    expect(await names(sockets.alice, 2)).toEqual(['a1', 'a2']);
    expect(await names(sockets.mallory, 1)).toEqual(['m1']);
    expect(await sockets.alice.quietFor(100)).toBe(true);
    expect(await sockets.mallory.quietFor(100)).toBe(true);
    // Replaying from the very start still yields only the socket's own workspace.
    sockets.mallory.send({ after: 0 });
    expect(await names(sockets.mallory, 1)).toEqual(['m1']);
    expect(await sockets.mallory.quietFor(100)).toBe(true);
    sockets.alice.close();
    sockets.mallory.close();
  });

  it('replays from {"after": id} on request and answers a bad command without closing', async () => {
    const alice = await t.newWorkspace();
    await buildAgent(t, alice, { name: 'first' });
    await buildAgent(t, alice, { name: 'second' });
    const socket = opened(
      await openSocket(ws(`/api/ws?after=${await newestId(alice)}`), { headers: alice.headers }),
    );
    const [, olderId] = (await t.call(alice, 'GET', '/api/activity'))
      .json()
      .items.map((item: { id: number }) => item.id);
    socket.send({ after: olderId - 1 });
    expect((await socket.next(2)).map((message) => message.message)).toEqual([
      'Agent “first” created',
      'Agent “second” created',
    ]);
    for (const [bad, field] of [
      [{ after: -1 }, 'after'],
      [{ after: 'x' }, 'after'],
      [{ since: 1 }, 'since'],
      [[1], 'message'],
    ] as const) {
      socket.send(bad);
      expect((await socket.next(1))[0]).toEqual({
        error: { code: 'validation_failed', field, message: expect.any(String) },
      });
    }
    socket.socket.send('not json');
    expect((await socket.next(1))[0]).toMatchObject({ error: { field: 'message' } });
    await buildAgent(t, alice, { name: 'still open' });
    expect((await socket.next(1))[0]).toMatchObject({ message: 'Agent “still open” created' });
    socket.close();
  });

  it('pings, and closes a socket that stops answering', async () => {
    const alice = await t.newWorkspace();
    const lively = opened(await openSocket(ws('/api/ws'), { headers: alice.headers }));
    let pings = 0;
    lively.socket.on('ping', () => {
      pings += 1;
    });
    const silent = opened(await openSocket(ws('/api/ws'), { headers: alice.headers, autoPong: false }));
    const { code } = await silent.closed;
    expect(code).toBe(1006);
    expect(pings).toBeGreaterThanOrEqual(1);
    expect(lively.socket.readyState).toBe(lively.socket.OPEN);
    lively.close();
    await eventually(() => subscriptions === 0);
  });

  it('answers a plain GET without an upgrade with 426', async () => {
    const alice = await t.newWorkspace();
    const response = await t.call(alice, 'GET', '/api/ws');
    expect(response.statusCode).toBe(426);
    expect(response.headers.upgrade).toBe('websocket');
    expect(response.json().code).toBe('upgrade_required');
  });
});
