import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNightlyMining } from '../../src/modules/playbooks/playbooks.jobs.ts';
import type { Actor } from '../helpers/api-client.ts';
import { buildMember } from '../helpers/factories.ts';
import { generateRuns } from '../helpers/run-generator.ts';
import {
  createTestApp,
  createTestDatabaseEnv,
  onPostgres,
  type TestApp,
  type TestDatabaseEnv,
} from '../helpers/test-app.ts';

/**
 * The nightly mining job: its schedule through the API, each slot run once across processes
 * (two services on one PostgreSQL database in CI; two sweepers of one service on PGlite),
 * a claim left by a dead process taken again, low performers archived.
 */

let dbEnv: TestDatabaseEnv;
let t: TestApp;
let second: TestApp | undefined;

beforeAll(async () => {
  dbEnv = await createTestDatabaseEnv();
  t = await createTestApp({ reuse: dbEnv });
  // A second process on the same database: PostgreSQL only (PGlite's directory has one owner).
  if (onPostgres) second = await createTestApp({ reuse: dbEnv });
});
afterAll(async () => {
  await second?.close({ keep: true });
  await t.close();
});

const silent = { info() {}, warn() {} } as never;

/** A workspace with mined-worthy runs, created two days ago (so last night's slot is its own). */
async function workspaceWithRuns(name: string): Promise<Actor> {
  const actor = await t.newWorkspace(name);
  await t.rows(
    sql`update workspaces set created_at = now() - interval '2 days' where id = ${actor.workspaceId}`,
  );
  await generateRuns(t.database.db, actor.workspaceId, {
    seed: 3,
    planted: [
      {
        agents: ['Builder', 'Checker'],
        tools: ['http_request'],
        context: ['ticket'],
        runs: 30,
        successRate: 0.9,
      },
    ],
    noise: 40,
    noiseSuccess: 0.3,
  });
  return actor;
}

const minedEvents = async (workspaceId: string) =>
  (
    await t.rows<{ n: number }>(
      sql`select count(*)::int as n from activity_events where workspace_id = ${workspaceId} and kind = 'playbook.mined'`,
    )
  )[0]?.n;

describe('GET/PUT /api/playbooks/schedule', () => {
  it('shows the default schedule, changes it (admins), and refuses what cannot be read', async () => {
    const admin = await t.newWorkspace('sched-admin');
    const initial = (await t.call(admin, 'GET', '/api/playbooks/schedule')).json();
    expect(initial).toMatchObject({ cron: '0 2 * * *', time_zone: 'UTC', enabled: true, last_slot: null });
    expect(new Date(initial.next_run_at).getUTCHours()).toBe(2);

    const changed = await t.call(admin, 'PUT', '/api/playbooks/schedule', {
      cron: '30 3 * * 1',
      time_zone: 'Europe/Paris',
    });
    expect(changed.statusCode, changed.body).toBe(200);
    const next = new Date(changed.json().next_run_at);
    expect(next.getUTCDay()).toBe(1);
    expect([1, 2]).toContain(next.getUTCHours()); // 03:30 in Paris is 01:30 or 02:30 UTC
    expect(next.getUTCMinutes()).toBe(30);

    for (const [body, field] of [
      [{ cron: '0 2 * *' }, 'body.cron'],
      [{ cron: '61 2 * * *' }, 'body.cron'],
      [{ time_zone: 'Mars/Olympus' }, 'body.time_zone'],
      [{}, 'body'],
    ] as const) {
      const refused = await t.call(admin, 'PUT', '/api/playbooks/schedule', body);
      expect(refused.statusCode, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(refused.json().errors)).toContain(field);
    }
    const member = await buildMember(t, admin, { role: 'member' });
    expect((await t.call(member, 'PUT', '/api/playbooks/schedule', { enabled: false })).statusCode).toBe(403);
    const reset = await t.call(admin, 'PUT', '/api/playbooks/schedule', { cron: null, time_zone: null });
    expect(reset.json()).toMatchObject({ cron: '0 2 * * *', time_zone: 'UTC' });
  });
});

describe('the nightly job', () => {
  it('mines each workspace once per slot across processes, and not a workspace created after the slot', async () => {
    const alice = await workspaceWithRuns('nightly-alice');
    const fresh = await t.newWorkspace('nightly-fresh');
    const services = [t.services, ...(second ? [second.services] : [])];
    const sweepers = [0, 1].map((index) =>
      createNightlyMining({
        playbooks: (services[index] ?? t.services).playbooks,
        log: silent,
        owner: `process-${index}`,
      }),
    );
    const ran = await Promise.all(sweepers.map((sweeper) => sweeper.sweep()));
    // Other files' workspaces were created after their last slot: only alice's ran, once.
    expect(ran.reduce((sum, count) => sum + count, 0)).toBe(1);
    expect(await minedEvents(alice.workspaceId)).toBe(1);
    expect(await minedEvents(fresh.workspaceId)).toBe(0);

    const schedule = (await t.call(alice, 'GET', '/api/playbooks/schedule')).json();
    expect(schedule.last_finished_at).not.toBeNull();
    expect(schedule.last_result).toMatchObject({ runs: 70, playbooks: 1, archived: [] });
    const playbooks = (await t.call(alice, 'GET', '/api/playbooks')).json();
    expect(playbooks.items.map((p: any) => p.agent_pattern)).toEqual([['builder', 'checker']]);

    // The same slot is never run twice.
    expect((await Promise.all(sweepers.map((sweeper) => sweeper.sweep()))).reduce((a, b) => a + b, 0)).toBe(
      0,
    );
    expect(await minedEvents(alice.workspaceId)).toBe(1);
  });

  it('takes over a slot whose process died, after the lease', async () => {
    const bob = await workspaceWithRuns('nightly-bob');
    const at = new Date(Date.now() + 86_400_000); // tomorrow: a slot nobody ran
    const slot = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate(), 2));
    const at2 = new Date(slot.getTime() + 60_000);
    // A process claimed it and died before finishing.
    expect(await t.services.playbooks.claimSlot(bob.workspaceId, slot, 'dead-process', 600_000)).toBe(true);
    const patient = createNightlyMining({
      playbooks: t.services.playbooks,
      log: silent,
      owner: 'p',
      now: () => at2,
    });
    await patient.sweep();
    expect(await minedEvents(bob.workspaceId)).toBe(0); // still within the dead claim's lease
    const taker = createNightlyMining({
      playbooks: t.services.playbooks,
      log: silent,
      owner: 'taker',
      leaseMs: 1,
      now: () => at2,
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await taker.sweep();
    expect(await minedEvents(bob.workspaceId)).toBe(1);
    const [row] = await t.rows<{ claimed_by: string; finished_at: Date | null }>(
      sql`select claimed_by, finished_at from playbook_schedules where workspace_id = ${bob.workspaceId}`,
    );
    expect(row?.claimed_by).toBe('taker');
    expect(row?.finished_at).not.toBeNull();
  });

  it('archives a playbook whose promoted workflow keeps failing, with an activity event', async () => {
    const carol = await workspaceWithRuns('nightly-carol');
    const mined = (
      await t.call(carol, 'POST', '/api/playbooks/mine', { min_support: 5, min_confidence: 0.8, top_k: 5 })
    ).json();
    const [playbook] = mined.playbooks;
    // The pattern's agents, so that promotion finds them.
    for (const name of ['Builder', 'Checker']) {
      expect((await t.call(carol, 'POST', '/api/agents', { name })).statusCode).toBe(201);
    }
    const promoted = await t.call(carol, 'POST', '/api/playbooks/promote', { playbook_id: playbook.id });
    expect(promoted.statusCode, promoted.body).toBe(201);
    const workflowId = promoted.json().workflow.id;
    // Twelve finished runs of the promoted workflow, ten of them failed.
    await t.rows(sql`update runs set workflow_id = ${workflowId} where id in (
        select id from runs where workspace_id = ${carol.workspaceId} and status = 'Failed' order by id limit 10)`);
    await t.rows(sql`update runs set workflow_id = ${workflowId} where id in (
        select id from runs where workspace_id = ${carol.workspaceId} and status = 'Completed' and workflow_id is null
        order by id limit 2)`);
    expect((await t.call(carol, 'GET', `/api/playbooks/${playbook.id}`)).json().usage_count).toBe(12);

    const result = await t.services.playbooks.nightly(carol.workspaceId);
    expect(result.archived).toEqual([playbook.id]);
    const after = (await t.call(carol, 'GET', `/api/playbooks/${playbook.id}`)).json();
    expect(after.archived).toBe(true);
    const events = (await t.call(carol, 'GET', '/api/activity?kind=playbook.archived')).json();
    expect(events.items[0]).toMatchObject({
      kind: 'playbook.archived',
      data: expect.objectContaining({ reason: 'low_performer', uses: 12, successes: 2 }),
    });
    // Mining again keeps it archived: only a user unarchives.
    await t.services.playbooks.nightly(carol.workspaceId);
    expect((await t.call(carol, 'GET', `/api/playbooks/${playbook.id}`)).json().archived).toBe(true);
  });
});
