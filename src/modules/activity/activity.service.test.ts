import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServiceWorkspace } from '../../../tests/helpers/service-factories.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { createLocalEventHub, type EventHub } from '../../events/event-hub.ts';
import {
  type ActivityInput,
  type ActivityItem,
  type ActivityService,
  activityTopic,
  createActivityService,
} from './activity.service.ts';
import { createMemoryTicketStore } from './ws-tickets.ts';

let t: TestDb;
let db: Db;
let hub: EventHub;
let activity: ActivityService;

beforeAll(async () => {
  t = await createTestDb({ env: { DB_QUEUE_TIMEOUT_MS: '30000' } });
  db = t.database.db;
  hub = createLocalEventHub();
  activity = createActivityService(db, { hub, tickets: createMemoryTicketStore() });
});
afterAll(() => t.close());

const newWorkspace = () => buildServiceWorkspace(db, 'watcher');

const event = (workspaceId: string, overrides: Partial<ActivityInput> = {}): ActivityInput => ({
  workspaceId,
  kind: 'agent.created',
  subjectType: 'agent',
  subjectId: `agent-of-${workspaceId}`,
  message: 'Agent “Researcher” created',
  data: { name: 'Researcher' },
  actor: 'someone',
  ...overrides,
});

/** Pulls `count` items, failing after `ms` rather than hanging. */
async function take(rows: AsyncIterator<ActivityItem>, count: number, ms = 5000): Promise<ActivityItem[]> {
  const items: ActivityItem[] = [];
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`only ${items.length} of ${count} events arrived`)), ms),
  );
  while (items.length < count) {
    const next = await Promise.race([rows.next(), timeout]);
    if (next.done) break;
    items.push(next.value);
  }
  return items;
}

describe('record', () => {
  it('writes in the caller’s transaction and publishes the id only after the commit', async () => {
    const { workspaceId } = await newWorkspace();
    const published: number[] = [];
    const off = hub.subscribe(activityTopic(workspaceId), (id) => published.push(id));
    const id = await inTransaction(db, async (tx) => {
      const recorded = await activity.record(tx, event(workspaceId));
      expect(published).toEqual([]);
      return recorded;
    });
    off();
    expect(published).toEqual([id]);
    const page = await activity.list({ workspaceId }, { limit: 10 });
    expect(page.items).toEqual([
      {
        id,
        kind: 'agent.created',
        subject_type: 'agent',
        subject_id: expect.any(String),
        message: 'Agent “Researcher” created',
        data: { name: 'Researcher' },
        actor: 'someone',
        created_at: expect.any(Date),
      },
    ]);
  });

  it('leaves no event and publishes nothing when the transaction rolls back', async () => {
    const { workspaceId } = await newWorkspace();
    const published: number[] = [];
    const off = hub.subscribe(activityTopic(workspaceId), (id) => published.push(id));
    await expect(
      inTransaction(db, async (tx) => {
        await activity.record(tx, event(workspaceId));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    off();
    expect(published).toEqual([]);
    expect((await activity.list({ workspaceId }, { limit: 10 })).items).toEqual([]);
  });

  it('opens its own transaction when given the database', async () => {
    const { workspaceId } = await newWorkspace();
    const published: number[] = [];
    const off = hub.subscribe(activityTopic(workspaceId), (id) => published.push(id));
    const id = await activity.record(
      db,
      event(workspaceId, { kind: 'system.warning', subjectType: 'system' }),
    );
    off();
    expect(published).toEqual([id]);
    expect((await activity.list({ workspaceId }, { limit: 10 })).items.map((item) => item.kind)).toEqual([
      'system.warning',
    ]);
  });
});

describe('list', () => {
  it('pages newest first by cursor, stable while events are added', async () => {
    const { workspaceId } = await newWorkspace();
    const ids: number[] = [];
    for (let i = 0; i < 7; i += 1)
      ids.push(await activity.record(db, event(workspaceId, { message: `event ${i}` })));
    const first = await activity.list({ workspaceId }, { limit: 3 });
    expect(first.items.map((item) => item.id)).toEqual([ids[6], ids[5], ids[4]]);
    expect(first.next_cursor).toBe(ids[4]);
    // New events land before the first page; the next pages do not shift.
    await activity.record(db, event(workspaceId, { message: 'late' }));
    const second = await activity.list({ workspaceId }, { limit: 3, before: first.next_cursor ?? undefined });
    expect(second.items.map((item) => item.id)).toEqual([ids[3], ids[2], ids[1]]);
    const third = await activity.list({ workspaceId }, { limit: 3, before: second.next_cursor ?? undefined });
    expect(third.items.map((item) => item.id)).toEqual([ids[0]]);
    expect(third.next_cursor).toBeNull();
  });

  it('filters by several kinds, by subject type and by subject id', async () => {
    const { workspaceId } = await newWorkspace();
    await activity.record(db, event(workspaceId, { kind: 'agent.created', subjectId: 'a1' }));
    await activity.record(
      db,
      event(workspaceId, { kind: 'workflow.created', subjectType: 'workflow', subjectId: 'w1' }),
    );
    await activity.record(
      db,
      event(workspaceId, { kind: 'workflow.failed', subjectType: 'workflow', subjectId: 'w1' }),
    );
    await activity.record(db, event(workspaceId, { kind: 'agent.failed', subjectId: 'a1' }));
    const kinds = async (filter: Parameters<ActivityService['list']>[1]) =>
      (await activity.list({ workspaceId }, filter)).items.map((item) => item.kind);
    expect(await kinds({ limit: 10, kind: ['agent.created', 'workflow.failed'] })).toEqual([
      'workflow.failed',
      'agent.created',
    ]);
    expect(await kinds({ limit: 10, subject_type: 'workflow' })).toEqual([
      'workflow.failed',
      'workflow.created',
    ]);
    expect(await kinds({ limit: 10, subject_id: 'a1' })).toEqual(['agent.failed', 'agent.created']);
    expect(await kinds({ limit: 10, subject_type: 'agent', kind: ['workflow.created'] })).toEqual([]);
  });

  it('never shows another workspace’s events', async () => {
    const mine = await newWorkspace();
    const theirs = await newWorkspace();
    const id = await activity.record(db, event(theirs.workspaceId));
    expect((await activity.list(mine, { limit: 200 })).items).toEqual([]);
    expect((await activity.list(mine, { limit: 200, before: id + 1 })).items).toEqual([]);
  });
});

describe('follow', () => {
  it('replays after a point, then delivers new events as they commit, only from its workspace', async () => {
    const mine = await newWorkspace();
    const theirs = await newWorkspace();
    const before = await activity.record(db, event(mine.workspaceId, { message: 'before' }));
    const replayed = await activity.record(db, event(mine.workspaceId, { message: 'replayed' }));
    const controller = new AbortController();
    const followed = await activity.follow(mine, { after: before }, controller.signal);
    const rows = followed.rows[Symbol.asyncIterator]();
    await activity.record(db, event(theirs.workspaceId, { message: 'not mine' }));
    const live = await inTransaction(db, (tx) =>
      activity.record(tx, event(mine.workspaceId, { message: 'live' })),
    );
    const items = await take(rows, 2);
    expect(items.map((item) => [item.id, item.message])).toEqual([
      [replayed, 'replayed'],
      [live, 'live'],
    ]);
    controller.abort();
    expect((await rows.next()).done).toBe(true);
  });

  it('starts at the end of the feed without a resume point', async () => {
    const mine = await newWorkspace();
    const old = await activity.record(db, event(mine.workspaceId, { message: 'old' }));
    const controller = new AbortController();
    const followed = await activity.follow(mine, {}, controller.signal);
    expect(followed.after).toBe(old);
    const rows = followed.rows[Symbol.asyncIterator]();
    const fresh = await activity.record(db, event(mine.workspaceId, { message: 'fresh' }));
    expect((await take(rows, 1)).map((item) => item.id)).toEqual([fresh]);
    controller.abort();
  });

  it('applies the filter to what it delivers', async () => {
    const mine = await newWorkspace();
    const controller = new AbortController();
    const followed = await activity.follow(
      mine,
      { after: 0, filter: { kind: ['workflow.failed'] } },
      controller.signal,
    );
    const rows = followed.rows[Symbol.asyncIterator]();
    await activity.record(db, event(mine.workspaceId, { kind: 'agent.created' }));
    const failed = await activity.record(
      db,
      event(mine.workspaceId, { kind: 'workflow.failed', subjectType: 'workflow' }),
    );
    expect((await take(rows, 1)).map((item) => item.id)).toEqual([failed]);
    controller.abort();
  });

  it('delivers every event of concurrent writers exactly once, and a resume after any of them misses none', async () => {
    const mine = await newWorkspace();
    const controller = new AbortController();
    const followed = await activity.follow(mine, {}, controller.signal);
    // Reading while the writers commit, as a live client does.
    const delivering = take(followed.rows[Symbol.asyncIterator](), 40, 20_000);
    const written = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        inTransaction(db, async (tx) => {
          // Every other writer takes its transaction id before waiting, so transaction order
          // and id order differ; all wait unevenly between the insert and the commit, so a
          // later id often commits first.
          if (i % 2 === 0) await tx.execute(sql`select pg_current_xact_id()`);
          await new Promise((resolve) => setTimeout(resolve, (i * 11) % 17));
          const id = await activity.record(tx, event(mine.workspaceId, { message: `concurrent ${i}` }));
          await new Promise((resolve) => setTimeout(resolve, (i * 7) % 23));
          return id;
        }),
      ),
    );
    const delivered = (await delivering).map((item) => item.id);
    expect([...delivered].sort((a, b) => a - b)).toEqual([...written].sort((a, b) => a - b));
    controller.abort();
    // Resuming after the k-th delivered event yields exactly the events delivered after it.
    for (const k of [0, 9, 20, 38]) {
      const resumed = new AbortController();
      const again = await activity.follow(mine, { after: delivered[k] }, resumed.signal);
      const rest = await take(again.rows[Symbol.asyncIterator](), 39 - k, 5_000);
      expect(rest.map((item) => item.id)).toEqual(delivered.slice(k + 1));
      resumed.abort();
    }
  });
});

describe.runIf(process.env.POSTGRES_HOST)('follow, with transactions left open (PostgreSQL)', () => {
  /** A transaction of its own connection to `database`, holding a transaction id until released. */
  async function openTransaction(database: string): Promise<{ release(): Promise<void> }> {
    const client = new pg.Client({
      host: process.env.POSTGRES_HOST,
      port: Number(process.env.POSTGRES_PORT ?? 5432),
      user: process.env.POSTGRES_USER,
      password: process.env.POSTGRES_PASSWORD,
      database,
    });
    await client.connect();
    await client.query('begin');
    await client.query('select pg_current_xact_id()');
    return {
      async release() {
        await client.query('rollback');
        await client.end();
      },
    };
  }

  it('holds back events while an older transaction of this database is open, and delivers them when it ends', async () => {
    const mine = await newWorkspace();
    const controller = new AbortController();
    const followed = await activity.follow(mine, {}, controller.signal);
    const [here] = await t.rows<{ name: string }>(sql`select current_database() as name`);
    const older = await openTransaction(here?.name as string);
    const id = await activity.record(db, event(mine.workspaceId));
    const iterator = followed.rows[Symbol.asyncIterator]();
    const next = iterator.next();
    const early = await Promise.race([
      next.then(() => 'delivered'),
      new Promise((r) => setTimeout(() => r('held'), 300)),
    ]);
    expect(early).toBe('held');
    await older.release();
    expect((await next).value?.id).toBe(id);
    controller.abort();
  });

  it('is not held back by a transaction left open in another database of the cluster', async () => {
    const mine = await newWorkspace();
    const controller = new AbortController();
    const followed = await activity.follow(mine, {}, controller.signal);
    const elsewhere = await openTransaction('postgres');
    try {
      const id = await activity.record(db, event(mine.workspaceId));
      expect((await take(followed.rows[Symbol.asyncIterator](), 1, 2000)).map((item) => item.id)).toEqual([
        id,
      ]);
    } finally {
      await elsewhere.release();
      controller.abort();
    }
  });
});

describe('WebSocket tickets', () => {
  it('redeems a ticket once, for the user and workspace it was issued to', async () => {
    const caller = await newWorkspace();
    const { ticket, expires_in } = await activity.issueTicket(caller);
    expect(ticket).toMatch(/^wst_[A-Za-z0-9_-]{43}$/);
    expect(expires_in).toBe(30);
    expect(await activity.redeemTicket(ticket)).toEqual(caller);
    expect(await activity.redeemTicket(ticket)).toBeUndefined();
    expect(await activity.redeemTicket('wst_not-a-ticket')).toBeUndefined();
    expect(
      await activity.redeemTicket(`${ticket.slice(0, -1)}${ticket.endsWith('A') ? 'B' : 'A'}`),
    ).toBeUndefined();
  });

  it('refuses a ticket past its 30 seconds', async () => {
    let now = 1_000_000;
    const clocked = createActivityService(db, { hub, tickets: createMemoryTicketStore({ now: () => now }) });
    const caller = await newWorkspace();
    const early = await clocked.issueTicket(caller);
    const late = await clocked.issueTicket(caller);
    now += 29_999;
    expect(await clocked.redeemTicket(early.ticket)).toEqual(caller);
    now += 1;
    expect(await clocked.redeemTicket(late.ticket)).toBeUndefined();
  });
});
