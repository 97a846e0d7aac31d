import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, buildApp } from '../../src/app.ts';
import { type Database, openDatabase } from '../../src/db/client.ts';
import { createMemoryTicketStore } from '../../src/modules/activity/ws-tickets.ts';
import { createServices, type ServiceOptions } from '../../src/services.ts';
import { inOrder, openEventStream } from '../helpers/event-stream.ts';
import { buildAgent } from '../helpers/factories.ts';
import { createTestApp, onPostgres, type TestApp } from '../helpers/test-app.ts';
import { opened, openSocket, refused } from '../helpers/ws-client.ts';

/**
 * Several API instances over one database, as several processes behind a load balancer:
 * a change made through one reaches live clients of another only through the event hub they
 * share. Here the instances share one in-process hub (and ticket store) object, the stand-in
 * for Redis pub/sub (and Redis keys); on PostgreSQL each has its own connection pool, as
 * separate processes would.
 */

let t: TestApp;
const extra: { app: App; database?: Database }[] = [];

/** The activity stream of the instance at `host`, read in order by a real SSE client. */
async function follow(host: string, headers: Record<string, string>) {
  const stream = await openEventStream(`http://${host}/api/activity/stream`, headers, undefined, 'GET');
  return Object.assign(stream, inOrder(stream));
}

/** Another instance on the same database, with the hub and ticket store given, listening. */
async function instance(options: ServiceOptions): Promise<string> {
  // PGlite's directory admits one opener, so on PGlite the instances share the database object.
  const database = onPostgres ? await openDatabase(t.config.database) : t.database;
  const app = await buildApp(await createServices(t.config, database, options));
  extra.push({ app, ...(onPostgres ? { database } : {}) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return `127.0.0.1:${address.port}`;
}

let shared: string;
let isolated: string;
const tickets = createMemoryTicketStore();

beforeAll(async () => {
  t = await createTestApp();
  // `t` is instance A: its API creates the agents below.
  shared = await instance({ eventHub: t.services.eventHub, tickets });
  isolated = await instance({});
});
afterAll(async () => {
  for (const { app, database } of extra) {
    await app.close();
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

  it('without a shared hub, reaches it only when the client reads again: the database stays the truth', async () => {
    const alice = await t.newWorkspace();
    const stream = await follow(isolated, alice.headers);
    const [ready] = await stream.next(1);
    const after = (ready?.data as { after: number } | undefined)?.after;
    await buildAgent(t, alice, { name: 'unannounced' });
    expect(await stream.quietFor(300)).toBe(true);
    stream.close();
    const again = await follow(isolated, {
      ...alice.headers,
      'last-event-id': String(after),
    });
    expect((await again.next(2))[1]).toMatchObject({ data: { message: 'Agent “unannounced” created' } });
    again.close();
  });

  it('redeems a ticket issued by another instance once, when they share the ticket store', async () => {
    const alice = await t.newWorkspace();
    // Instance A keeps tickets in its own memory; the shared instance and a twin share theirs.
    const ownTicket = (await t.call(alice, 'POST', '/api/activity/ws-ticket')).json().ticket;
    expect(refused(await openSocket(`ws://${shared}/api/ws?ticket=${ownTicket}`)).status).toBe(401);
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
});
