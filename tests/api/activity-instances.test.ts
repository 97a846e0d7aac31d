import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, buildApp } from '../../src/app.ts';
import { startServices } from '../../src/boot.ts';
import { type Database, openDatabase } from '../../src/db/client.ts';
import { createMemoryTicketStore } from '../../src/modules/activity/ws-tickets.ts';
import { createServices, type ServiceOptions } from '../../src/services.ts';
import { inOrder, openEventStream } from '../helpers/event-stream.ts';
import { buildAgent } from '../helpers/factories.ts';
import { createTestApp, onPostgres, type TestApp } from '../helpers/test-app.ts';
import { redisUrl } from '../helpers/test-redis.ts';
import { opened, openSocket, refused } from '../helpers/ws-client.ts';

/**
 * Several API instances over one database, as several processes behind a load balancer: a
 * change made through one reaches live clients of another only through the event hub, and
 * a ticket issued by one is redeemed by another only through a shared ticket store.
 *
 * - `shared` shares instance A's hub and a ticket store object: the in-process stand-in.
 * - `own` builds its hub and ticket store from the configuration, as another process does:
 *   on Redis (REDIS_URL set, CI's second pass) that is Redis pub/sub and Redis keys, and the
 *   event and the ticket cross over; without Redis its hub is its own and nothing crosses,
 *   though a client that reads again still finds the event in the database.
 *
 * On PostgreSQL each instance has its own connection pool, as separate processes would.
 */

let t: TestApp;
const extra: { app: App; stop: () => Promise<void>; database?: Database }[] = [];

/** The activity stream of the instance at `host`, read in order by a real SSE client. */
async function follow(host: string, headers: Record<string, string>) {
  const stream = await openEventStream(`http://${host}/api/activity/stream`, headers, undefined, 'GET');
  return Object.assign(stream, inOrder(stream));
}

/** Another API-only instance on the same database, its components started, listening. */
async function instance(options: ServiceOptions): Promise<string> {
  // PGlite's directory admits one opener, so on PGlite the instances share the database object.
  const database = onPostgres ? await openDatabase(t.config.database) : t.database;
  const services = await createServices({ ...t.config, runMode: 'api' }, database, options);
  const stop = await startServices(services);
  const app = await buildApp(services);
  extra.push({ app, stop, ...(onPostgres ? { database } : {}) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return `127.0.0.1:${address.port}`;
}

let shared: string;
let own: string;
const tickets = createMemoryTicketStore();

beforeAll(async () => {
  t = await createTestApp();
  // `t` is instance A: its API creates the agents below.
  shared = await instance({ eventHub: t.services.eventHub, tickets });
  own = await instance({});
});
afterAll(async () => {
  for (const { app, stop, database } of extra) {
    await app.close();
    await stop();
    await database?.close();
  }
  await t.close();
});

describe('activity across API instances', () => {
  it('reaches a live client of another instance through the shared hub', async () => {
    const alice = await t.newWorkspace();
    const stream = await follow(shared, alice.headers);
    await stream.next(1);
    await buildAgent(t, alice, { name: 'made on A' });
    expect((await stream.next(1))[0]).toMatchObject({
      event: 'agent.created',
      data: { message: 'Agent “made on A” created' },
    });
    stream.close();
  });

  it(
    redisUrl
      ? 'reaches a live client of a process with its own hub, through Redis'
      : 'without a shared hub, reaches a client only when it reads again: the database stays the truth',
    async () => {
      const alice = await t.newWorkspace();
      const stream = await follow(own, alice.headers);
      const [ready] = await stream.next(1);
      await buildAgent(t, alice, { name: 'made on A' });
      if (redisUrl) {
        expect((await stream.next(1))[0]).toMatchObject({ data: { message: 'Agent “made on A” created' } });
        stream.close();
        return;
      }
      expect(await stream.quietFor(300)).toBe(true);
      stream.close();
      const after = (ready?.data as { after: number } | undefined)?.after;
      const again = await follow(own, { ...alice.headers, 'last-event-id': String(after) });
      expect((await again.next(2))[1]).toMatchObject({ data: { message: 'Agent “made on A” created' } });
      again.close();
    },
  );

  it('redeems a ticket issued by another instance once, when they share the ticket store', async () => {
    const alice = await t.newWorkspace();
    const twin = await instance({ eventHub: t.services.eventHub, tickets });
    const issued = await fetch(`http://${twin}/api/activity/ws-ticket`, {
      method: 'POST',
      headers: alice.headers,
    });
    const { ticket } = (await issued.json()) as { ticket: string };
    const socket = opened(await openSocket(`ws://${shared}/api/ws?ticket=${ticket}`));
    await buildAgent(t, alice, { name: 'seen through the ticket' });
    expect((await socket.next(1))[0]).toMatchObject({ message: 'Agent “seen through the ticket” created' });
    socket.close();
    expect(refused(await openSocket(`ws://${twin}/api/ws?ticket=${ticket}`)).status).toBe(401);
  });

  it(
    redisUrl
      ? 'redeems a ticket issued by a process with its own store, through Redis'
      : 'refuses a ticket issued by a process whose ticket store it does not share',
    async () => {
      const alice = await t.newWorkspace();
      const { ticket } = (await t.call(alice, 'POST', '/api/activity/ws-ticket')).json();
      const attempt = await openSocket(`ws://${own}/api/ws?ticket=${ticket}`);
      if (redisUrl) {
        opened(attempt).close();
        // Spent: neither process accepts it again.
        expect(refused(await openSocket(`ws://${own}/api/ws?ticket=${ticket}`)).status).toBe(401);
        return;
      }
      expect(refused(attempt).status).toBe(401);
    },
  );
});
