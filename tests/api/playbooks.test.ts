import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { generateRuns, type PlantedPattern } from '../helpers/run-generator.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Playbooks through the API: mining recovers patterns planted in generated runs (and nothing
 * else), records, filters, edits, archive, isolation; then real runs through the engine mined,
 * promoted to a workflow that runs and counts as the playbook's use.
 */

let t: TestApp;
let alice: Actor;
let bob: Actor;

const PLANTED: PlantedPattern[] = [
  {
    agents: ['Scanner', 'Auditor'],
    tools: ['secret_scan'],
    context: ['repository'],
    runs: 40,
    successRate: 0.95,
    goal: 'Audit the {subject} service',
  },
  {
    agents: ['Planner', 'Coder', 'Tester'],
    tools: ['http_request'],
    context: ['ticket'],
    inputs: ['feature'],
    runs: 30,
    successRate: 0.9,
    errorHandling: 'retry',
    goal: 'Build the {subject} feature',
    cost: 0.002,
  },
  // A name with quotes, brackets and control characters survives the trip as it is.
  { agents: ['Qu"ote ]\u001f\u001e, Bot'], tools: [], context: [], runs: 8, successRate: 1 },
  // Succeeds too rarely for min_confidence 0.8: must not be reported.
  { agents: ['Analyst'], tools: ['knowledge_search'], context: ['dataset'], runs: 30, successRate: 0.7 },
];

let planted: Awaited<ReturnType<typeof generateRuns>>;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
  bob = await t.newWorkspace('bob');
  planted = await generateRuns(t.database.db, alice.workspaceId, {
    seed: 7,
    planted: PLANTED,
    noise: 150,
    noiseSuccess: 0.3,
  });
});
afterAll(() => t.close());

const mine = (actor: Actor, body: Record<string, unknown> = {}) =>
  t.call(actor, 'POST', '/api/playbooks/mine', { min_support: 5, min_confidence: 0.8, top_k: 20, ...body });

describe('POST /api/playbooks/mine', () => {
  it('recovers every planted pattern above the thresholds with its true confidence, and nothing else', async () => {
    const response = await mine(alice);
    expect(response.statusCode, response.body).toBe(200);
    const result = response.json();
    expect(result.runs).toBe(planted.count);
    expect(result.successful_runs).toBe(planted.succeeded);
    expect(result.base_success_rate).toBeCloseTo(planted.succeeded / planted.count, 4);

    const byTeam = new Map(result.playbooks.map((p: any) => [p.agent_pattern.join(' > '), p]));
    const security = byTeam.get('scanner > auditor') as any;
    expect(security).toBeDefined();
    expect(security.support).toBe(planted.plantedSuccesses[0]);
    expect(security.matching_runs).toBe(40);
    expect(security.confidence).toBeCloseTo((planted.plantedSuccesses[0] as number) / 40, 4);
    expect(security.confidence_percent).toBe(Math.round(security.confidence * 100));
    expect(security.lift).toBeCloseTo(security.confidence / result.base_success_rate, 3);
    expect(security.tool_pattern).toEqual(['secret_scan']);
    expect(security.context_pattern.context_fields).toEqual(['repository']);
    expect(security.category).toBe('Security & Compliance');
    expect(security.category_votes[0].because).toEqual(
      expect.arrayContaining(['tool:scan', 'tool:secret', 'agent:scanner', 'goal:audit']),
    );
    expect(security.goal_template).toBe('Audit the {{subject}} service');
    expect(security.example_run_ids.length).toBeGreaterThan(0);
    expect(security.name).toBe('Scanner → Auditor with secret_scan');
    expect(security.description).toContain(`${security.support} of 40 runs`);

    const build = byTeam.get('planner > coder > tester') as any;
    expect(build).toBeDefined();
    expect(build.support).toBe(planted.plantedSuccesses[1]);
    expect(build.context_pattern.required_inputs).toEqual(['feature']);
    expect(build.context_pattern.configuration).toMatchObject({ mode: 'sequential', errors: 'retry' });
    expect(build.category).toBe('Testing & QA');
    // Cheaper than the workspace's average run.
    expect(build.quality_parts.cost).toBeGreaterThan(0.5);

    // The analyst pattern (70 %) and the noise (30 %, even its lucky small subgroups) never pass 80 %.
    for (const playbook of result.playbooks) {
      expect(['scanner > auditor', 'planner > coder > tester', 'qu"ote ]\u001f\u001e, bot']).toContain(
        playbook.agent_pattern.join(' > '),
      );
      expect(playbook.quality_score).toBeGreaterThanOrEqual(0);
      expect(playbook.quality_score).toBeLessThanOrEqual(1);
      for (const part of Object.values(playbook.quality_parts) as number[]) {
        expect(part).toBeGreaterThanOrEqual(0);
        expect(part).toBeLessThanOrEqual(1);
      }
    }
    // Near-duplicates (the same team with or without its context) are merged into one each.
    expect(result.playbooks).toHaveLength(3);
    expect(result.playbooks[0].quality_score).toBeGreaterThanOrEqual(result.playbooks[1].quality_score);

    // A lower confidence threshold lets the analyst pattern in.
    const lenient = (await mine(alice, { min_confidence: 0.5 })).json();
    expect(lenient.playbooks.map((p: any) => p.agent_pattern.join(' > '))).toContain('analyst');
  });

  it('updates a pattern mined again instead of duplicating it, keeping a user’s edits', async () => {
    const first = (await mine(alice)).json().playbooks[0];
    const renamed = await t.call(alice, 'PUT', `/api/playbooks/${first.id}`, {
      name: 'Weekly security audit',
      category: 'Code Review & Quality',
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    const again = (await mine(alice)).json().playbooks;
    const same = again.find((p: any) => p.id === first.id);
    expect(same).toMatchObject({ name: 'Weekly security audit', category: 'Code Review & Quality' });
    const list = (await t.call(alice, 'GET', '/api/playbooks?include_archived=true&limit=200')).json();
    const keys = list.items.map((p: any) => p.agent_pattern.join(' > '));
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('stops mining when its caller goes away, storing nothing', async () => {
    const erin = await t.newWorkspace('erin-mining');
    await generateRuns(t.database.db, erin.workspaceId, { seed: 9, planted: PLANTED, noise: 20 });
    const caller = {
      userId: 'erin-mining',
      workspaceId: erin.workspaceId,
      tenantId: '',
      role: 'owner' as const,
    };
    const gone = new AbortController();
    const mining = t.services.playbooks.mine(
      caller,
      { min_support: 5, min_confidence: 0.8, top_k: 20 },
      gone.signal,
    );
    gone.abort(new Error('the client closed the connection'));
    await expect(mining).rejects.toThrow('the client closed the connection');
    expect((await t.call(erin, 'GET', '/api/playbooks')).json().total).toBe(0);
  });

  it('refuses out-of-range parameters with a 400 naming the field', async () => {
    for (const [body, field] of [
      [{ min_support: 2 }, 'body.min_support'],
      [{ min_support: 21 }, 'body.min_support'],
      [{ min_confidence: 0.4 }, 'body.min_confidence'],
      [{ min_confidence: 1.5 }, 'body.min_confidence'],
      [{ top_k: 0 }, 'body.top_k'],
      [{ time_range: 'last_year' }, 'body.time_range'],
      [{ time_range: { from: '2026-05-01T00:00:00Z', to: '2026-04-01T00:00:00Z' } }, 'body.time_range.from'],
      [{ categories: ['Cooking'] }, 'body.categories.0'],
    ] as const) {
      const response = await mine(alice, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().errors.map((e: any) => e.field)).toContain(field);
    }
  });

  it('mines only the time range asked for, and keeps to the categories asked for', async () => {
    const old = (
      await mine(alice, { time_range: { from: '2020-01-01T00:00:00Z', to: '2020-02-01T00:00:00Z' } })
    ).json();
    expect(old.runs).toBe(0);
    expect(old.playbooks).toEqual([]);
    const security = (await mine(alice, { categories: ['Security & Compliance'] })).json();
    expect(security.playbooks.map((p: any) => p.category)).toEqual(['Code Review & Quality']); // the edited one
  });
});

describe('GET /api/playbooks and the records', () => {
  it('filters by confidence band and category, hides archived ones, and archives and unarchives', async () => {
    const all = (await t.call(alice, 'GET', '/api/playbooks')).json();
    expect(all.total).toBe(all.items.length);
    for (const band of ['high', 'medium', 'low']) {
      const page = (
        await t.call(alice, 'GET', `/api/playbooks?confidence=${band}&include_archived=true`)
      ).json();
      for (const item of page.items) expect(item.confidence_band).toBe(band);
    }
    const target = all.items[0];
    const archived = await t.call(alice, 'POST', `/api/playbooks/${target.id}/archive`);
    expect(archived.json()).toMatchObject({ archived: true });
    const visible = (await t.call(alice, 'GET', '/api/playbooks')).json();
    expect(visible.items.map((p: any) => p.id)).not.toContain(target.id);
    const withArchived = (await t.call(alice, 'GET', '/api/playbooks?include_archived=true')).json();
    expect(withArchived.items.map((p: any) => p.id)).toContain(target.id);
    expect((await t.call(alice, 'POST', `/api/playbooks/${target.id}/unarchive`)).json()).toMatchObject({
      archived: false,
      archived_at: null,
    });
    const activity = (await t.call(alice, 'GET', '/api/activity?limit=50')).json();
    const kinds = activity.items.map((event: any) => event.kind);
    expect(kinds).toEqual(
      expect.arrayContaining(['playbook.mined', 'playbook.archived', 'playbook.unarchived']),
    );

    const byCategory = (
      await t.call(alice, 'GET', `/api/playbooks?category=${encodeURIComponent('Testing & QA')}`)
    ).json();
    for (const item of byCategory.items) expect(item.category).toBe('Testing & QA');
    expect((await t.call(alice, 'GET', '/api/playbooks?category=Cooking')).statusCode).toBe(400);
    expect((await t.call(alice, 'PUT', `/api/playbooks/${target.id}`, {})).statusCode).toBe(400);
  });

  it('keeps playbooks to their workspace and tenant', async () => {
    const mine_ = (await t.call(alice, 'GET', '/api/playbooks')).json();
    const id = mine_.items[0].id;
    expect((await t.call(bob, 'GET', `/api/playbooks/${id}`)).statusCode).toBe(404);
    expect((await t.call(bob, 'PUT', `/api/playbooks/${id}`, { name: 'mine now' })).statusCode).toBe(404);
    expect((await t.call(bob, 'POST', `/api/playbooks/${id}/archive`)).statusCode).toBe(404);
    expect((await t.call(bob, 'POST', '/api/playbooks/promote', { playbook_id: id })).statusCode).toBe(404);
    expect((await t.call(bob, 'GET', '/api/playbooks')).json().total).toBe(0);
    // Bob mining finds none of alice's runs.
    expect((await mine(bob)).json()).toMatchObject({ runs: 0, playbooks: [] });
    // Alice's tenant is not bob's: 404, as for a tenant that does not exist.
    const [tenant] = await t.rows<{ tenant_id: string }>(
      sql`select tenant_id from workspaces where id = ${alice.workspaceId}`,
    );
    const probe = await t.call(bob, 'GET', `/api/playbooks?tenant_id=${tenant?.tenant_id}`);
    expect(probe.statusCode).toBe(404);
    expect(probe.json().code).toBe('tenant_not_found');
    const own = await t.call(alice, 'GET', `/api/playbooks?tenant_id=${tenant?.tenant_id}`);
    expect(own.json().total).toBe(mine_.total);
  });
});

/** Polls the run until it reaches a final status. */
async function settled(actor: Actor, runId: string, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const run = (await t.call(actor, 'GET', `/api/runs/${runId}`)).json();
    if (['Completed', 'Failed', 'Cancelled'].includes(run.status)) return run;
    if (Date.now() > until) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('real runs, mined and promoted', () => {
  it('mines runs of the engine, promotes the pattern to a workflow that runs, and counts its use', async () => {
    const carol = await t.newWorkspace('carol');
    const writer = await buildAgent(t, carol, { name: 'Writer', model: undefined, role: 'technical writer' });
    const reviewer = await buildAgent(t, carol, { name: 'Reviewer', model: undefined });
    const workflow = await buildWorkflow(t, carol, {
      goal: 'Write the guide for {{topic}}',
      agents: [writer.id, reviewer.id],
      context_template: { audience: 'operators' },
    });
    const ids: string[] = [];
    for (const topic of ['backups', 'upgrades', 'alerts', 'scaling', 'restores']) {
      const started = await t.call(carol, 'POST', `/api/workflows/${workflow.id}/run`, { inputs: { topic } });
      expect(started.statusCode, started.body).toBe(202);
      ids.push(started.json().id);
    }
    for (const id of ids) expect((await settled(carol, id)).status).toBe('Completed');

    const result = (await mine(carol)).json();
    expect(result.runs).toBe(5);
    const [playbook] = result.playbooks;
    expect(playbook).toMatchObject({
      agent_pattern: ['writer', 'reviewer'],
      support: 5,
      confidence: 1,
      category: 'Documentation',
      goal_template: 'Write the guide for {{subject}}',
      usage_count: 0,
    });
    expect(playbook.context_pattern).toMatchObject({
      context_fields: ['audience'],
      required_inputs: ['topic'],
    });

    // A run needs the template's inputs: refused before anything is created.
    const workflowsBefore = (await t.call(carol, 'GET', '/api/workflows')).json().total;
    const refused = await t.call(carol, 'POST', '/api/playbooks/promote', {
      playbook_id: playbook.id,
      option: 'create_and_execute',
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors).toEqual([expect.objectContaining({ field: 'body.inputs.subject' })]);
    expect((await t.call(carol, 'GET', '/api/workflows')).json().total).toBe(workflowsBefore);

    const template = await t.call(carol, 'POST', '/api/playbooks/promote', {
      playbook_id: playbook.id,
      option: 'save_as_template',
      name: 'Guide writing',
    });
    expect(template.statusCode, template.body).toBe(201);
    expect(template.json().workflow).toMatchObject({
      name: 'Guide writing',
      is_template: true,
      agents: [writer.id, reviewer.id],
      goal: 'Write the guide for {{subject}}',
      playbook_id: playbook.id,
      execution_policy: { mode: 'sequential', error_handling: 'stop', timeout_seconds: 900 },
      context_template: { audience: '' },
    });
    expect(template.json().run).toBeNull();

    const executed = await t.call(carol, 'POST', '/api/playbooks/promote', {
      playbook_id: playbook.id,
      option: 'create_and_execute',
      inputs: { subject: 'disaster recovery' },
    });
    expect(executed.statusCode, executed.body).toBe(202);
    const run = executed.json().run;
    expect(executed.headers.location).toBe(`/api/runs/${run.id}`);
    const finished = await settled(carol, run.id);
    expect(finished.status).toBe('Completed');
    expect(finished.workflow_id).toBe(executed.json().workflow.id);
    expect((await t.call(carol, 'GET', `/api/playbooks/${playbook.id}`)).json().usage_count).toBe(1);

    // An agent of the pattern deleted: promotion says which.
    expect((await t.call(carol, 'DELETE', `/api/agents/${reviewer.id}`)).statusCode).toBe(204);
    const orphan = await t.call(carol, 'POST', '/api/playbooks/promote', { playbook_id: playbook.id });
    expect(orphan.statusCode).toBe(409);
    expect(orphan.json()).toMatchObject({ code: 'playbook_agents_missing' });
  });
});

describe('attached playbooks', () => {
  it('trigger on matching run steps of their agents, recorded and counted, until detached', async () => {
    const dave = await t.newWorkspace('dave');
    const scout = await buildAgent(t, dave, { name: 'Scout', model: undefined });
    const fixer = await buildAgent(t, dave, { name: 'Fixer', model: undefined });
    const workflow = await buildWorkflow(t, dave, {
      goal: 'Triage incident {{id}}',
      agents: [scout.id, fixer.id],
      context_template: { severity: 'high' },
    });
    const runOnce = async (body: Record<string, unknown>) => {
      const started = await t.call(dave, 'POST', `/api/workflows/${workflow.id}/run`, body);
      expect(started.statusCode, started.body).toBe(202);
      const finished = await settled(dave, started.json().id);
      expect(finished.status).toBe('Completed');
      return (await t.call(dave, 'GET', `/api/runs/${finished.id}`)).json();
    };
    for (let n = 0; n < 5; n += 1) await runOnce({ inputs: { id: `INC-${n}` } });
    const [playbook] = (await mine(dave)).json().playbooks;
    expect(playbook.agent_pattern).toEqual(['scout', 'fixer']);

    // Bad rules and foreign agents are refused, naming the field.
    const badRule = await t.call(dave, 'POST', '/api/playbooks/attach', {
      playbook_id: playbook.id,
      agent_ids: [fixer.id],
      rules: { when: 'context.severity ==', mode: 'auto' },
    });
    expect(badRule.statusCode).toBe(400);
    expect(badRule.json().errors[0]).toMatchObject({ field: 'body.rules.when' });
    const foreign = await buildAgent(t, bob, { name: 'Elsewhere' });
    const stranger = await t.call(dave, 'POST', '/api/playbooks/attach', {
      playbook_id: playbook.id,
      agent_ids: [fixer.id, foreign.id],
    });
    expect(stranger.statusCode).toBe(400);
    expect(stranger.json().errors).toEqual([expect.objectContaining({ field: 'body.agent_ids.1' })]);
    expect(
      (
        await t.call(bob, 'POST', '/api/playbooks/attach', {
          playbook_id: playbook.id,
          agent_ids: [foreign.id],
        })
      ).statusCode,
    ).toBe(404);

    const attached = await t.call(dave, 'POST', '/api/playbooks/attach', {
      playbook_id: playbook.id,
      agent_ids: [fixer.id],
      rules: { when: 'context.severity == "high" and goal startswith "triage"', mode: 'auto' },
    });
    expect(attached.statusCode, attached.body).toBe(200);
    expect(attached.json().attachments).toEqual([
      expect.objectContaining({ agent_id: fixer.id, mode: 'auto', triggers: 0 }),
    ]);

    const matching = await runOnce({ inputs: { id: 'INC-9' } });
    const [scoutStep, fixerStep] = matching.steps;
    expect(scoutStep.playbook_triggers).toEqual([]);
    expect(fixerStep.playbook_triggers).toEqual([
      expect.objectContaining({
        playbook_id: playbook.id,
        mode: 'auto',
        when: expect.stringContaining('severity'),
      }),
    ]);
    expect(fixerStep.prompt).toContain(
      `Follow the playbook “${playbook.name}”. Its steps: 1. Scout; 2. Fixer.`,
    );
    // The local provider echoes what it would have sent: the injected steps reached the model call.
    expect(fixerStep.output).toContain('Follow the playbook');
    const events = await t.call(dave, 'GET', `/api/runs/${matching.id}/events`);
    expect(events.body).toContain('event: playbook.triggered');

    const quiet = await runOnce({ inputs: { id: 'INC-10' }, context: { severity: 'low' } });
    expect(quiet.steps.every((step: any) => step.playbook_triggers.length === 0)).toBe(true);

    const listed = (await t.call(dave, 'GET', `/api/playbooks/${playbook.id}/attachments`)).json();
    expect(listed.attachments).toEqual([expect.objectContaining({ agent_id: fixer.id, triggers: 1 })]);
    // An agent's playbooks: the one attached to the fixer, none for the scout, nothing of another workspace.
    const ofFixer = (await t.call(dave, 'GET', `/api/playbooks?agent_id=${fixer.id}`)).json();
    expect(ofFixer.items.map((item: { id: string }) => item.id)).toEqual([playbook.id]);
    expect(ofFixer.total).toBe(1);
    expect((await t.call(dave, 'GET', `/api/playbooks?agent_id=${scout.id}`)).json().total).toBe(0);
    expect((await t.call(bob, 'GET', `/api/playbooks?agent_id=${fixer.id}`)).json().total).toBe(0);
    const badAgent = await t.call(dave, 'GET', '/api/playbooks?agent_id=nope');
    expect(badAgent.statusCode).toBe(400);
    expect(badAgent.json().errors[0].field).toBe('query.agent_id');

    const detached = await t.call(dave, 'POST', '/api/playbooks/detach', { playbook_id: playbook.id });
    expect(detached.json()).toEqual({ playbook_id: playbook.id, detached: 1 });
    const after = await runOnce({ inputs: { id: 'INC-11' } });
    expect(after.steps.every((step: any) => step.playbook_triggers.length === 0)).toBe(true);
  });
});
