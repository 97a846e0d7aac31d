import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import type { Db } from '../../db/transaction.ts';
import { createAnalyticsService } from '../analytics/analytics.service.ts';
import { createWorkspacesService } from '../workspaces/workspaces.service.ts';
import { createSystemService, METRICS_SHARE_MS } from './system.service.ts';

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(() => db.close());

/** Builder calls that each send one statement to the database. */
const STATEMENTS = new Set([
  'execute',
  'select',
  'selectDistinct',
  'insert',
  'update',
  'delete',
  'transaction',
]);

/** `db` with a count of the statements sent through it. */
function counting(inner: Db) {
  let statements = 0;
  const proxy = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (typeof property === 'string' && STATEMENTS.has(property)) {
        return (...args: unknown[]) => {
          statements += 1;
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
  return { db: proxy as Db, statements: () => statements };
}

const insertRun = (workspaceId: string, status: string) =>
  db.rows(sql`insert into runs (id, workspace_id, workflow_name, status, plan, agent_ids, created_at,
      lease_owner, lease_expires_at)
    values (${randomUUID()}, ${workspaceId}, 'wf', ${status}, '{"goal":"g"}'::jsonb, '{}'::uuid[], now(),
      ${status === 'Running' ? 'elsewhere' : null}, ${status === 'Running' ? '2999-01-01T00:00:00Z' : null}::timestamptz)`);

describe('system metrics: cheap and shared', () => {
  it('answers concurrent requests of a workspace from one computation of a few statements, for a few seconds', async () => {
    const { id: workspaceId } = await createWorkspacesService(db.database.db).createWorkspace(
      'metrics-owner',
      {
        name: 'metrics',
      },
    );
    const { db: counted, statements } = counting(db.database.db);
    let pings = 0;
    let now = new Date();
    const system = createSystemService({
      pingDatabase: async () => {
        pings += 1;
      },
      databaseKind: 'pglite',
      startedAt: new Date(now.getTime() - 60_000),
      clock: () => now,
      metrics: { db: counted, analytics: createAnalyticsService({ db: counted }) },
    });

    const answers = await Promise.all(Array.from({ length: 20 }, () => system.metrics(workspaceId)));
    // The KPIs in one statement, the uptime in one; the database pinged once for the health rows.
    expect(statements()).toBe(2);
    expect(pings).toBe(1);
    for (const answer of answers) expect(answer).toBe(answers[0]);
    expect(answers[0]?.workflows).toMatchObject({ running: 0, queued: 0 });

    // A change inside the shared window is not seen yet; past it, the next request computes again.
    await insertRun(workspaceId, 'Queued');
    now = new Date(now.getTime() + METRICS_SHARE_MS - 1);
    expect((await system.metrics(workspaceId)).workflows.queued).toBe(0);
    expect(statements()).toBe(2);
    now = new Date(now.getTime() + 1);
    expect((await system.metrics(workspaceId)).workflows.queued).toBe(1);
    expect(statements()).toBe(4);
    expect(pings).toBe(2);
  });

  it('computes each workspace on its own, sharing the health rows and uptime between them', async () => {
    const workspaces = createWorkspacesService(db.database.db);
    const a = await workspaces.createWorkspace('metrics-a', { name: 'a' });
    const b = await workspaces.createWorkspace('metrics-b', { name: 'b' });
    await insertRun(a.id, 'Running');
    const { db: counted, statements } = counting(db.database.db);
    let pings = 0;
    const system = createSystemService({
      pingDatabase: async () => {
        pings += 1;
      },
      databaseKind: 'pglite',
      startedAt: new Date(),
      metrics: { db: counted, analytics: createAnalyticsService({ db: counted }) },
    });
    const [ofA, ofB] = await Promise.all([system.metrics(a.id), system.metrics(b.id)]);
    expect(ofA.workflows.running).toBe(1);
    expect(ofB.workflows.running).toBe(0);
    expect(statements()).toBe(3);
    expect(pings).toBe(1);
  });

  it('does not keep a failed computation: the next request tries again', async () => {
    const { id: workspaceId } = await createWorkspacesService(db.database.db).createWorkspace('metrics-c', {
      name: 'c',
    });
    let fail = true;
    const analytics = createAnalyticsService({ db: db.database.db });
    const system = createSystemService({
      pingDatabase: async () => {},
      databaseKind: 'pglite',
      startedAt: new Date(),
      metrics: {
        db: db.database.db,
        analytics: {
          dashboardCounts: (...args) =>
            fail ? Promise.reject(new Error('connection refused')) : analytics.dashboardCounts(...args),
        },
      },
    });
    await expect(system.metrics(workspaceId)).rejects.toThrow('connection refused');
    fail = false;
    expect((await system.metrics(workspaceId)).runs.total).toBe(0);
  });
});
