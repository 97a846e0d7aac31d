import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Caller, Role } from '../caller.ts';
import { AppError } from '../errors.ts';
import { accessTopic, createLocalEventHub } from '../events/event-hub.ts';
import { createLiveStreams, type StreamAccess } from './live-streams.ts';

/**
 * The live-stream registry on its own: the slot accounting, the re-check on each access notice
 * (coalesced while one is running), and what an unreachable database does to an open stream.
 * The HTTP behaviour (SSE, WebSocket, across processes) is tests/api/stream-access.test.ts.
 */

const WORKSPACE = '00000000-0000-4000-8000-000000000001';

/** A GET request of `userId` as the auth hook leaves it. */
const requestOf = (userId: string, workspaceId = WORKSPACE, role?: Role) =>
  ({
    caller: { userId, workspaceId, tenantId: 't', role: 'viewer', via: 'bearer' } satisfies Caller,
    method: 'GET',
    routeOptions: { config: role === undefined ? {} : { role } },
  }) as unknown as FastifyRequest;

function setup(perUser = 2, perWorkspace = 3) {
  const hub = createLocalEventHub();
  const roles = new Map<string, Role | Error>();
  const reads: StreamAccess[] = [];
  let gate: Promise<void> | undefined;
  const warnings: unknown[] = [];
  const streams = createLiveStreams({
    hub,
    perUser,
    perWorkspace,
    log: { warn: (entry: unknown) => warnings.push(entry) } as never,
    async currentAccess(access) {
      reads.push(access);
      await gate;
      const role = roles.get(access.userId);
      if (role instanceof Error) throw role;
      return role;
    },
  });
  return {
    hub,
    roles,
    reads,
    warnings,
    streams,
    hold: () => {
      let release = () => {};
      gate = new Promise((resolve) => {
        release = resolve;
      });
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('createLiveStreams', () => {
  it('counts slots per user and per workspace and gives each back once', async () => {
    const { roles, streams } = setup(2, 3);
    for (const user of ['a', 'b']) roles.set(user, 'viewer');
    const first = await streams.open(requestOf('a'), { counted: true });
    await streams.open(requestOf('a'), { counted: true });
    const refused = await streams.open(requestOf('a'), { counted: true }).catch((error) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ status: 429, code: 'too_many_streams', headers: { 'Retry-After': '5' } });
    // An uncounted stream (a chat answer) takes no slot.
    await streams.open(requestOf('a'), { counted: false });
    first.end();
    first.end();
    await streams.open(requestOf('a'), { counted: true });
    // The workspace holds 2 of a's; b may take the third slot, not a fourth.
    await streams.open(requestOf('b'), { counted: true });
    const full = await streams.open(requestOf('b'), { counted: true }).catch((error) => error);
    expect(full.message).toContain('this workspace');
  });

  it('refuses to open for credentials whose access is already gone, and gives the slot back', async () => {
    const { roles, streams } = setup(1, 10);
    const refused = await streams.open(requestOf('gone'), { counted: true }).catch((error) => error);
    expect(refused).toMatchObject({ status: 403, code: 'access_revoked' });
    roles.set('gone', 'viewer');
    await expect(streams.open(requestOf('gone'), { counted: true })).resolves.toBeDefined();
  });

  it('re-checks on each notice of its workspace, coalescing notices that arrive during a check', async () => {
    const { hub, roles, reads, streams, hold } = setup();
    roles.set('a', 'member');
    const stream = await streams.open(requestOf('a', WORKSPACE, 'member'), { counted: true });
    expect(reads).toHaveLength(1);
    hub.publish(accessTopic('00000000-0000-4000-8000-000000000002'), 1);
    await settle();
    expect(reads).toHaveLength(1);

    const release = hold();
    for (let i = 0; i < 50; i += 1) hub.publish(accessTopic(WORKSPACE), i);
    await settle();
    release();
    await settle();
    // One read in flight, then one more for everything that arrived during it.
    expect(reads).toHaveLength(3);
    expect(stream.revoked.aborted).toBe(false);
    // Lowered below the route's role (member): the next notice ends it.
    roles.set('a', 'viewer');
    hub.publish(accessTopic(WORKSPACE), 51);
    await settle();
    expect(reads).toHaveLength(4);
    expect(stream.revoked.aborted).toBe(true);
    expect(stream.revoked.reason).toMatchObject({ code: 'access_revoked' });
    expect((stream.revoked.reason as Error).message).toContain('your role is now viewer');
    // Ended, it no longer listens.
    stream.end();
    hub.publish(accessTopic(WORKSPACE), 99);
    await settle();
    expect(reads).toHaveLength(4);
  });

  it('keeps a stream open when the database cannot be read for the check, and says so', async () => {
    const { hub, roles, streams, warnings } = setup();
    roles.set('a', 'viewer');
    const stream = await streams.open(requestOf('a'), { counted: true });
    roles.set('a', new Error('connection terminated'));
    hub.publish(accessTopic(WORKSPACE), 1);
    await settle();
    expect(stream.revoked.aborted).toBe(false);
    expect(warnings).toHaveLength(1);
    roles.delete('a');
    hub.publish(accessTopic(WORKSPACE), 2);
    await settle();
    expect(stream.revoked.aborted).toBe(true);
  });
});
