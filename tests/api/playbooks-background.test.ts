import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { generateRuns } from '../helpers/run-generator.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Mining in the background: a window of more than MINE_SYNC_MAX_RUNS finished runs (here 100),
 * or any request with `Prefer: respond-async`, answers 202 with a mine to follow; the job
 * (in-process, or BullMQ when REDIS_URL is set) mines it and stores the same result a mine
 * within the request answers.
 */

let t: TestApp;
let alice: Actor;
let bob: Actor;

const body = { min_support: 5, min_confidence: 0.8, top_k: 20 };

beforeAll(async () => {
  t = await createTestApp({ env: { MINE_SYNC_MAX_RUNS: '100' } });
  alice = await t.newWorkspace('alice');
  bob = await t.newWorkspace('bob');
  await generateRuns(t.database.db, alice.workspaceId, {
    seed: 11,
    planted: [
      {
        agents: ['Scanner', 'Auditor'],
        tools: ['secret_scan'],
        context: ['repository'],
        runs: 40,
        successRate: 1,
      },
    ],
    noise: 120,
    noiseSuccess: 0.3,
  });
});
afterAll(() => t?.close());

/** The mine once it has ended, polled as a client would. */
async function ended(actor: Actor, location: string) {
  let mine: Record<string, any> = {};
  await expect
    .poll(
      async () => {
        mine = (await t.call(actor, 'GET', location)).json();
        return mine.status;
      },
      { timeout: 30_000, interval: 50 },
    )
    .toMatch(/^(completed|failed)$/);
  return mine;
}

describe('background mining', () => {
  it('mines a window past MINE_SYNC_MAX_RUNS in the background: 202, Location, then the result', async () => {
    const response = await t.call(alice, 'POST', '/api/playbooks/mine', body);
    expect(response.statusCode, response.body).toBe(202);
    const queued = response.json();
    expect(response.headers.location).toBe(`/api/playbooks/mines/${queued.id}`);
    expect(queued).toMatchObject({
      status: 'queued',
      runs: 160,
      requested_by: alice.userId,
      result: null,
      error: null,
      input: { min_support: 5, time_range: { from: expect.any(String), to: expect.any(String) } },
    });
    const mine = await ended(alice, response.headers.location as string);
    expect(mine).toMatchObject({ status: 'completed', phase: null, error: null, result: { runs: 160 } });
    const found = mine.result.playbooks.map((playbook: any) => playbook.agent_pattern.join(' > '));
    expect(found).toContain('scanner > auditor');

    // The same playbooks as the list, and the feed names the mine.
    const list = (await t.call(alice, 'GET', '/api/playbooks')).json();
    expect(list.items.map((playbook: any) => playbook.id).sort()).toEqual(
      mine.result.playbooks.map((playbook: any) => playbook.id).sort(),
    );
    const feed = (await t.call(alice, 'GET', '/api/activity?kind=playbook.mined')).json();
    expect(feed.items[0]).toMatchObject({ data: { mine_id: mine.id, runs: 160 }, actor: alice.userId });
  });

  it('mines a small window within the request unless the client prefers respond-async', async () => {
    const now = await t.call(bob, 'POST', '/api/playbooks/mine', body);
    expect(now.statusCode, now.body).toBe(200);
    expect(now.json()).toMatchObject({ runs: 0, playbooks: [] });

    const later = await t.call(bob, 'POST', '/api/playbooks/mine', body, {
      headers: { prefer: 'respond-async, wait=5' },
    });
    expect(later.statusCode, later.body).toBe(202);
    expect(later.headers['preference-applied']).toBe('respond-async');
    const mine = await ended(bob, later.headers.location as string);
    expect(mine).toMatchObject({ status: 'completed', runs: 0, result: { runs: 0, playbooks: [] } });
  });

  it('keeps each workspace to its own mines', async () => {
    const response = await t.call(alice, 'POST', '/api/playbooks/mine', body, {
      headers: { prefer: 'respond-async' },
    });
    const location = response.headers.location as string;
    const probe = await t.call(bob, 'GET', location);
    expect(probe.statusCode).toBe(404);
    expect(probe.json()).toMatchObject({ code: 'mine_not_found' });
    const bobs = (await t.call(bob, 'GET', '/api/playbooks/mines')).json();
    expect(bobs.items.every((mine: any) => mine.requested_by === bob.userId)).toBe(true);
    const alices = (await t.call(alice, 'GET', '/api/playbooks/mines?limit=1')).json();
    expect(alices).toMatchObject({ total: 2, limit: 1, offset: 0 });
    expect(alices.items[0].id).toBe(response.json().id);
    await ended(alice, location);
  });

  it('refuses what a mine within the request refuses, before recording anything', async () => {
    const before = (await t.call(alice, 'GET', '/api/playbooks/mines')).json().total;
    const unknownTenant = await t.call(alice, 'POST', '/api/playbooks/mine', {
      ...body,
      tenant_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(unknownTenant.statusCode).toBe(404);
    const backwards = await t.call(
      alice,
      'POST',
      '/api/playbooks/mine',
      { ...body, time_range: { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' } },
      { headers: { prefer: 'respond-async' } },
    );
    expect(backwards.statusCode).toBe(400);
    expect(backwards.json().errors[0].field).toBe('body.time_range.from');
    expect((await t.call(alice, 'GET', '/api/playbooks/mines')).json().total).toBe(before);
  });

  it('keeps a workspace to 3 background mines queued or running at once: 429 beyond', async () => {
    const carol = await t.newWorkspace('carol');
    const input = JSON.stringify({
      ...body,
      time_range: { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' },
    });
    await t.rows(
      sql`insert into playbook_mines (workspace_id, status, input, runs, requested_by)
        select ${carol.workspaceId}, 'running', ${input}::jsonb, 0, ${carol.userId} from generate_series(1, 3)`,
    );
    const refused = await t.call(carol, 'POST', '/api/playbooks/mine', body, {
      headers: { prefer: 'respond-async' },
    });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('30');
    expect(refused.json()).toMatchObject({ code: 'too_many_mines' });
    expect((await t.call(carol, 'GET', '/api/playbooks/mines')).json().total).toBe(3);
    // A mine within the request is not held back, and another workspace is not either.
    expect((await t.call(carol, 'POST', '/api/playbooks/mine', body)).statusCode).toBe(200);
    const other = await t.call(bob, 'POST', '/api/playbooks/mine', body, {
      headers: { prefer: 'respond-async' },
    });
    expect(other.statusCode).toBe(202);
    await ended(bob, other.headers.location as string);
    await t.rows(sql`update playbook_mines set status = 'failed' where workspace_id = ${carol.workspaceId}`);
  });

  it('hands a mine whose job was lost to the queue again, and a mine ended stays ended', async () => {
    // A mine recorded while the queue was away (its enqueue lost): the recovery sweep runs it.
    const input = { ...body, time_range: { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' } };
    const [row] = await t.rows<{ id: string }>(
      sql`insert into playbook_mines (workspace_id, status, input, runs, requested_by)
        values (${alice.workspaceId}, 'queued', ${JSON.stringify(input)}::jsonb, 0, ${alice.userId})
        returning id`,
    );
    const id = row?.id as string;
    expect(await t.services.playbooks.recoverUnfinishedMines()).toBeGreaterThanOrEqual(1);
    const mine = await ended(alice, `/api/playbooks/mines/${id}`);
    expect(mine).toMatchObject({ status: 'completed', result: { runs: 0 } });
    // A late delivery of its job changes nothing.
    await t.services.playbooks.runMineJob(id, new AbortController().signal);
    expect((await t.call(alice, 'GET', `/api/playbooks/mines/${id}`)).json()).toEqual(mine);
  });
});
