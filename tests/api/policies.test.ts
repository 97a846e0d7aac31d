import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildMember } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Policies through the API: versions and labels, If-Match, roles, deterministic assembly
 * (conditions, variables, static-first order, budget), isolation between workspaces, bad
 * input naming its field, and A/B tests between versions (sticky assignment, exposures,
 * verdicts, sample-ratio mismatch, too few units, choosing a winner).
 */

let t: TestApp;
let alice: Actor;
let member: Actor;
let viewer: Actor;
let bob: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('policies-alice');
  member = await buildMember(t, alice, { role: 'member' });
  viewer = await buildMember(t, alice, { role: 'viewer' });
  bob = await t.newWorkspace('policies-bob');
});
afterAll(() => t.close());

const policyBody = (persona = 'You are a careful support agent.') => ({
  description: 'support triage',
  sections: [
    { name: 'greeting', kind: 'context', text: 'The customer is {{customer}}.' },
    { name: 'persona', kind: 'persona', text: persona },
    { name: 'pro', kind: 'rules', text: 'Offer the priority line.', when: 'context.tier == "pro"' },
    { name: 'rules', kind: 'rules', text: 'Never share internal ticket ids.' },
    { name: 'example', kind: 'examples', role: 'user', text: 'Example question about {{topic}}' },
  ],
  variables: { customer: { required: true }, topic: { default: 'billing' } },
  model: {
    provider: 'openai',
    name: 'gpt-4o-mini',
    temperature: 0.2,
    fallbacks: [{ provider: 'anthropic', name: 'claude-3-5-haiku' }],
  },
  tools: [{ name: 'knowledge_search' }],
  retrieval: { sources: ['handbook'], top_k: 5, mode: 'hybrid' },
  playbooks: ['pb-1'],
  token_budget: 1000,
});

const put = (actor: Actor, id: string, body: unknown, ifMatch?: string) =>
  t.call(actor, 'PUT', `/api/policy/${id}`, body, ifMatch ? { headers: { 'if-match': ifMatch } } : {});
const assemble = (actor: Actor, id: string, body: Record<string, unknown>) =>
  t.call(actor, 'POST', `/api/policy/${id}/assemble`, body);
const setTest = (actor: Actor, body: unknown) => t.call(actor, 'POST', '/api/policy/abtest/set', body);
const getTest = (actor: Actor, a: string, b: string) =>
  t.call(actor, 'GET', `/api/policy/abtest/get?policy_a=${a}&policy_b=${b}`);

describe('PUT and GET /api/policy/{policy_id}', () => {
  it('creates version 1 (201), then version 2 (200), moving latest and the labels asked for', async () => {
    const first = await put(alice, 'support', { ...policyBody(), labels: ['production'] });
    expect(first.statusCode, first.body).toBe(201);
    expect(first.headers.etag).toBe('"1"');
    expect(first.json()).toMatchObject({
      policy_id: 'support',
      version: 1,
      labels: { latest: 1, production: 1 },
    });
    expect(first.json().content_hash).toMatch(/^[0-9a-f]{64}$/);

    const second = await put(alice, 'support', policyBody('You are a concise support agent.'), '"1"');
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toMatchObject({ version: 2, labels: { latest: 2, production: 1 } });
    expect(second.json().versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);

    // GET serves production, else latest; a label or a version on request.
    const shown = await t.call(viewer, 'GET', '/api/policy/support');
    expect(shown.statusCode, shown.body).toBe(200);
    expect(shown.json()).toMatchObject({ version: 1, labels: { latest: 2, production: 1 } });
    expect((await t.call(viewer, 'GET', '/api/policy/support?label=latest')).json().version).toBe(2);
    const v2 = (await t.call(viewer, 'GET', '/api/policy/support?version=2')).json();
    expect(v2.content.sections[1].text).toBe('You are a concise support agent.');
    expect((await t.call(viewer, 'GET', '/api/policy/support?version=9')).json().code).toBe(
      'policy_not_found',
    );
  });

  it('refuses a stale If-Match with 412, and an unchanged policy still gets a new version', async () => {
    const stale = await put(alice, 'support', policyBody(), '"1"');
    expect(stale.statusCode).toBe(412);
    expect(stale.json().code).toBe('precondition_failed');
    const missing = await put(alice, 'never-written', policyBody(), '"1"');
    expect(missing.statusCode).toBe(412);
  });

  it('lets only admins write; members and viewers read', async () => {
    const byMember = await put(member, 'support', policyBody());
    expect(byMember.statusCode).toBe(403);
    expect(byMember.json().code).toBe('insufficient_role');
    expect((await t.call(member, 'GET', '/api/policy/support')).statusCode).toBe(200);
    // Assembling is a member's: viewers read but do not assemble.
    expect((await assemble(viewer, 'support', { variables: { customer: 'x' } })).statusCode).toBe(403);
    expect((await assemble(member, 'support', { variables: { customer: 'x' } })).statusCode).toBe(200);
    expect(
      (await setTest(member, { policy_a: { policy_id: 'support' }, policy_b: { policy_id: 'support' } }))
        .statusCode,
    ).toBe(403);
  });

  it('names the bad field: id pattern, reserved id, a condition that does not parse, a repeated section', async () => {
    const badId = await put(alice, 'Bad_ID!', policyBody());
    expect(badId.statusCode).toBe(400);
    expect(JSON.stringify(badId.json().errors)).toContain('params.policy_id');
    const reserved = await put(alice, 'abtest', policyBody());
    expect([400, 404]).toContain(reserved.statusCode);
    const body = policyBody();
    body.sections[2] = { ...body.sections[2], when: 'context.tier ==' } as (typeof body.sections)[number];
    const badWhen = await put(alice, 'broken', body);
    expect(badWhen.statusCode).toBe(400);
    expect(badWhen.json().errors[0].field).toBe('body.sections.2.when');
    const repeated = policyBody();
    repeated.sections.push({ name: 'rules', kind: 'rules', text: 'again' });
    const rep = await put(alice, 'broken', repeated);
    expect(rep.statusCode).toBe(400);
    expect(rep.json().errors[0].field).toBe('body.sections.5.name');
    const noSections = await put(alice, 'broken', { sections: [] });
    expect(noSections.statusCode).toBe(400);
    expect(JSON.stringify(noSections.json().errors)).toContain('body.sections');
  });

  it('keeps policies to their workspace: another workspace and another tenant see 404', async () => {
    expect((await t.call(bob, 'GET', '/api/policy/support')).json().code).toBe('policy_not_found');
    expect((await assemble(bob, 'support', { variables: { customer: 'x' } })).statusCode).toBe(404);
    expect((await t.call(alice, 'GET', '/api/policy/support?tenant_id=some-other-tenant')).statusCode).toBe(
      404,
    );
    // Bob's own policy of the same id is his own.
    expect((await put(bob, 'support', policyBody('Bob persona'))).statusCode).toBe(201);
    expect((await t.call(alice, 'GET', '/api/policy/support')).json().version).toBe(1);
  });
});

describe('POST /api/policy/{policy_id}/assemble', () => {
  const inputs = {
    label: 'latest',
    conversation_id: 'conv-1',
    variables: { customer: 'ACME' },
    context: { tier: 'pro' },
  };

  it('renders deterministically: static sections first, conditions, variables, model and settings', async () => {
    const first = await assemble(member, 'support', inputs);
    expect(first.statusCode, first.body).toBe(200);
    const again = await assemble(member, 'support', inputs);
    expect(again.json()).toEqual(first.json());
    const result = first.json();
    expect(result.assembly_id).toMatch(/^asm_[0-9a-f]{32}$/);
    expect(result).toMatchObject({ policy_id: 'support', version: 2, label: 'latest', experiment: null });
    expect(result.sections.map((s: { name: string }) => s.name)).toEqual([
      'persona',
      'rules',
      'greeting',
      'pro',
      'example',
    ]);
    expect(result.messages).toEqual([
      {
        role: 'system',
        content:
          'You are a concise support agent.\n\nNever share internal ticket ids.\n\nThe customer is ACME.\n\nOffer the priority line.',
      },
      { role: 'user', content: 'Example question about billing' },
    ]);
    expect(result.model).toMatchObject({ provider: 'openai', name: 'gpt-4o-mini' });
    expect(result.retrieval).toEqual({ sources: ['handbook'], top_k: 5, mode: 'hybrid' });
    expect(result.tools).toEqual([{ name: 'knowledge_search' }]);
    expect(result.playbooks).toEqual(['pb-1']);
    expect(result.tokens).toMatchObject({ budget: 1000, truncated: [] });

    const basic = (await assemble(member, 'support', { ...inputs, context: { tier: 'free' } })).json();
    expect(basic.sections.find((s: { name: string }) => s.name === 'pro')).toMatchObject({
      included: false,
      reason: 'condition_false',
    });
    expect(basic.assembly_id).not.toBe(result.assembly_id);
  });

  it('answers 422 naming a required variable that is missing', async () => {
    const response = await assemble(member, 'support', { label: 'latest' });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({
      code: 'policy_variable_missing',
      errors: [{ field: 'body.variables.customer' }],
    });
  });

  it('drops droppable sections from the end when over the budget, and lists unresolved variables', async () => {
    const long = 'x'.repeat(400);
    const written = await put(alice, 'tight', {
      sections: [
        { name: 'core', kind: 'instructions', text: 'Do the job.' },
        { name: 'background', kind: 'context', text: long },
        { name: 'who', kind: 'context', text: 'Talking to {{name}} about {{thing}}.', required: true },
      ],
      token_budget: 50,
    });
    expect(written.statusCode, written.body).toBe(201);
    const result = (await assemble(member, 'tight', { variables: { name: 'Ann' } })).json();
    expect(result.tokens.truncated).toEqual(['background']);
    expect(result.tokens.total).toBeLessThanOrEqual(50);
    expect(result.unresolved_variables).toEqual(['thing']);
    expect(result.sections.find((s: { name: string }) => s.name === 'core')).toMatchObject({
      included: true,
    });
  });

  it('names bad input: label and version together, unknown fields', async () => {
    const both = await assemble(member, 'support', {
      label: 'latest',
      version: 1,
      variables: { customer: 'x' },
    });
    expect(both.statusCode).toBe(400);
    expect(both.json().errors[0].field).toBe('body.version');
    const unknown = await assemble(member, 'support', { nonsense: true });
    expect(unknown.statusCode).toBe(400);
  });
});

/** Two versions of a policy `id` (v1 production, v2 latest). */
async function twoVersions(id: string) {
  expect(
    (await put(alice, id, { ...policyBody('control persona'), labels: ['production'] })).statusCode,
  ).toBe(201);
  expect((await put(alice, id, policyBody('treatment persona'))).statusCode).toBe(200);
}

/** Assembles for each conversation and answers the variant each got. */
async function traffic(id: string, conversations: string[]): Promise<Map<string, 'a' | 'b'>> {
  const variants = new Map<string, 'a' | 'b'>();
  for (const conversation of conversations) {
    const response = await assemble(alice, id, {
      conversation_id: conversation,
      variables: { customer: 'c' },
    });
    expect(response.statusCode, response.body).toBe(200);
    variants.set(conversation, response.json().experiment.variant);
  }
  return variants;
}

/** Inserts finished runs recorded with the experiment's variant for each unit. */
async function insertRuns(
  workspaceId: string,
  experimentId: string,
  rows: {
    unit: string;
    variant: string;
    status: string;
    cost: number;
    duration: number;
    /** Results found by each of the run's knowledge_search calls (none: no search). */
    searches?: number[];
  }[],
) {
  const plan = {
    goal: 'g',
    execution_policy: { mode: 'sequential', error_handling: 'stop', max_retries: 0, timeout_seconds: 900 },
  };
  await t.rows(sql`insert into runs (workspace_id, workflow_name, status, plan, agent_ids, cost, duration_ms,
      policy_id, policy_version, policy_variant, experiment_id, experiment_unit)
    select ${workspaceId}, 'wf', x.status, ${JSON.stringify(plan)}::jsonb, '{}'::uuid[], x.cost, x.duration,
      'p', 1, x.variant, ${experimentId}, x.unit
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        as x(unit text, variant text, status text, cost float8, duration int)`);
  // Each run's knowledge_search calls, as the engine records them on its step.
  const steps = rows
    .filter((row) => row.searches && row.searches.length > 0)
    .map((row) => ({
      unit: row.unit,
      calls: (row.searches ?? []).map((found, i) => ({
        id: `call-${i}`,
        name: 'knowledge_search',
        input: { query: 'q' },
        output: { results: Array.from({ length: found }, (_, n) => ({ title: `doc ${n}` })) },
      })),
    }));
  if (steps.length === 0) return;
  await t.rows(sql`insert into run_steps (run_id, workspace_id, position, kind, status, tool_calls)
    select r.id, r.workspace_id, 0, 'agent', 'Completed', x.calls
      from jsonb_to_recordset(${JSON.stringify(steps)}::jsonb) as x(unit text, calls jsonb)
      join runs r on r.experiment_id = ${experimentId} and r.experiment_unit = x.unit`);
}

describe('A/B tests: POST /api/policy/abtest/set and GET /api/policy/abtest/get', () => {
  it('assigns sticky variants, records exposures (not on dry_run), and reads a verdict', async () => {
    await twoVersions('ab-main');
    const set = await setTest(alice, {
      policy_a: { policy_id: 'ab-main', version: 1 },
      policy_b: { policy_id: 'ab-main', version: 2 },
      primary_metric: 'success_rate',
      guardrail_metrics: ['cost_per_run', 'p95_latency', 'retrieval_hit_rate'],
    });
    expect(set.statusCode, set.body).toBe(200);
    const experiment = set.json();
    expect(experiment).toMatchObject({
      status: 'running',
      unit: 'conversation',
      weights: [50, 50],
      coverage: 1,
    });

    const conversations = Array.from({ length: 300 }, (_, i) => `conv-${i}`);
    const variants = await traffic('ab-main', conversations);
    // Sticky: the same unit gets the same variant again, and the version of its arm.
    const again = (
      await assemble(member, 'ab-main', { conversation_id: 'conv-7', variables: { customer: 'c' } })
    ).json();
    expect(again.experiment.variant).toBe(variants.get('conv-7'));
    expect(again.version).toBe(again.experiment.variant === 'a' ? 1 : 2);
    // A pinned version is served as asked, outside the experiment.
    expect(
      (
        await assemble(member, 'ab-main', {
          version: 2,
          conversation_id: 'conv-7',
          variables: { customer: 'c' },
        })
      ).json().experiment,
    ).toBeNull();
    // dry_run serves a variant without recording an exposure.
    const dry = await assemble(member, 'ab-main', {
      conversation_id: 'dry-only',
      dry_run: true,
      variables: { customer: 'c' },
    });
    expect(dry.json().experiment).not.toBeNull();

    const counts = { a: 0, b: 0 };
    for (const v of variants.values()) counts[v] += 1;
    // Guardrails equal by construction: each arm cycles through the same durations in its own
    // order of arrival, so only the primary metric differs (the split depends on the salt).
    const seen = { a: 0, b: 0 };
    const runs = conversations.map((unit) => {
      const variant = variants.get(unit) as 'a' | 'b';
      const k = seen[variant]++;
      // 50 % against 90 %, by each arm's own order of arrival: exact whatever the split.
      const success = variant === 'a' ? k % 2 === 0 : k % 10 !== 0;
      return {
        unit,
        variant,
        status: success ? 'Completed' : 'Failed',
        cost: 0.01,
        duration: 1000 + (k % 50),
        // Two searches each: arm b's find something more often (3 of 4 against 1 of 2).
        searches: variant === 'a' ? [k % 2, 1] : [k % 4 === 0 ? 0 : 2, 1],
      };
    });
    await insertRuns(alice.workspaceId, experiment.id, runs);

    const read = await getTest(viewer, 'ab-main', 'ab-main');
    expect(read.statusCode, read.body).toBe(200);
    const results = read.json();
    expect(results.units).toEqual(counts);
    expect(results.srm.mismatch).toBe(false);
    expect(results.metrics.map((m: { metric: string }) => m.metric)).toEqual([
      'success_rate',
      'cost_per_run',
      'p95_latency',
      'retrieval_hit_rate',
    ]);
    const success = results.metrics[0];
    expect(success.a).toBeGreaterThan(0.4);
    expect(success.a).toBeLessThan(0.65);
    expect(success.b).toBeGreaterThan(0.85);
    expect(success.chance_to_win).toBeGreaterThan(0.95);
    const hitRate = results.metrics[3];
    expect(hitRate.unavailable_reason).toBeNull();
    expect(hitRate.a).toBeCloseTo(0.75, 1);
    expect(hitRate.b).toBeCloseTo(0.875, 1);
    expect(hitRate.chance_to_win).toBeGreaterThan(0.95);
    expect(results.verdict.decision).toBe('treatment_wins');

    // Choosing the winner moves production to version 2 and ends the experiment.
    const chosen = await setTest(alice, {
      policy_a: { policy_id: 'ab-main', version: 1 },
      policy_b: { policy_id: 'ab-main', version: 2 },
      action: 'choose_winner',
      winner: 'b',
    });
    expect(chosen.statusCode, chosen.body).toBe(200);
    expect(chosen.json()).toMatchObject({ status: 'concluded', winner: 'b' });
    expect((await t.call(viewer, 'GET', '/api/policy/ab-main')).json()).toMatchObject({
      version: 2,
      labels: { production: 2 },
    });
    const after = (
      await assemble(member, 'ab-main', { conversation_id: 'conv-1', variables: { customer: 'c' } })
    ).json();
    expect(after).toMatchObject({ version: 2, experiment: null });
  });

  it('counts no unit for a member’s assemble outside a run, whatever unit ids it invents', async () => {
    await twoVersions('ab-invented');
    const ref = {
      policy_a: { policy_id: 'ab-invented', version: 1 },
      policy_b: { policy_id: 'ab-invented', version: 2 },
    };
    expect((await setTest(alice, ref)).statusCode).toBe(200);
    await traffic(
      'ab-invented',
      Array.from({ length: 10 }, (_, i) => `real-${i}`),
    );
    const before = (await getTest(alice, 'ab-invented', 'ab-invented')).json();
    expect(before.units.a + before.units.b).toBe(10);

    // 1000 invented conversations: each is served its variant, none becomes a unit.
    for (let i = 0; i < 1000; i += 1) {
      const answer = await assemble(member, 'ab-invented', {
        conversation_id: `invented-${i}`,
        variables: { customer: 'c' },
      });
      expect(answer.statusCode, answer.body).toBe(200);
      if (i === 0) expect(answer.json().experiment).not.toBeNull();
    }
    // The same with the user as the unit and invented user ids.
    expect((await setTest(alice, { ...ref, unit: 'user' })).statusCode).toBe(200);
    for (let i = 0; i < 100; i += 1) {
      const answer = await assemble(member, 'ab-invented', {
        user_id: `invented-user-${i}`,
        variables: { customer: 'c' },
      });
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json().experiment).not.toBeNull();
    }
    // The member's own assemble without user_id (the caller as the unit) does not count either.
    expect(
      (await assemble(member, 'ab-invented', { variables: { customer: 'c' } })).json().experiment,
    ).not.toBeNull();
    const after = (await getTest(alice, 'ab-invented', 'ab-invented')).json();
    expect(after.units).toEqual(before.units);
    expect(after.srm).toEqual(before.srm);
    expect(after.metrics).toEqual(before.metrics);
    expect(after.verdict).toEqual(before.verdict);
    const [stored] = await t.rows<{ n: number }>(
      sql`select count(*)::int as n from policy_exposures where unit_id like 'invented-%'`,
    );
    expect(stored?.n).toBe(0);
  });

  it('refuses a verdict under 100 units per arm', async () => {
    await twoVersions('ab-small');
    const set = await setTest(alice, {
      policy_a: { policy_id: 'ab-small', label: 'production' },
      policy_b: { policy_id: 'ab-small', label: 'latest' },
      guardrail_metrics: ['retrieval_hit_rate'],
    });
    expect(set.statusCode, set.body).toBe(200);
    await traffic(
      'ab-small',
      Array.from({ length: 40 }, (_, i) => `small-${i}`),
    );
    const results = (await getTest(alice, 'ab-small', 'ab-small')).json();
    expect(results.units.a + results.units.b).toBe(40);
    expect(results.verdict.decision).toBe('insufficient_data');
    // No run searched: no hit-rate, and the reason why instead of a number.
    const hitRate = results.metrics.find((m: { metric: string }) => m.metric === 'retrieval_hit_rate');
    expect(hitRate).toMatchObject({ a: null, b: null });
    expect(hitRate.unavailable_reason).toContain('knowledge_search');
  });

  it('detects a sample ratio mismatch when assignment is skewed', async () => {
    await twoVersions('ab-skew');
    const experiment = (
      await setTest(alice, {
        policy_a: { policy_id: 'ab-skew', version: 1 },
        policy_b: { policy_id: 'ab-skew', version: 2 },
      })
    ).json();
    // Exposures as a broken logger would leave them: 400 against 200 on a 50/50 split.
    await t.rows(sql`insert into policy_exposures (experiment_id, workspace_id, unit_id, variant)
      select ${experiment.id}, ${alice.workspaceId}, 'u-' || g, case when g <= 400 then 'a' else 'b' end
        from generate_series(1, 600) g`);
    const results = (await getTest(alice, 'ab-skew', 'ab-skew')).json();
    expect(results.units).toEqual({ a: 400, b: 200 });
    expect(results.srm.mismatch).toBe(true);
    expect(results.verdict.decision).toBe('sample_ratio_mismatch');
  });

  it('stops an experiment (assemble serves production again), and keeps experiments to their workspace', async () => {
    await twoVersions('ab-stop');
    const ref = {
      policy_a: { policy_id: 'ab-stop', version: 1 },
      policy_b: { policy_id: 'ab-stop', version: 2 },
    };
    expect((await setTest(alice, ref)).json().status).toBe('running');
    expect((await setTest(alice, { ...ref, action: 'stop' })).json().status).toBe('stopped');
    expect(
      (await assemble(member, 'ab-stop', { conversation_id: 'c', variables: { customer: 'c' } })).json(),
    ).toMatchObject({
      version: 1,
      experiment: null,
    });
    expect((await getTest(bob, 'ab-stop', 'ab-stop')).json().code).toBe('experiment_not_found');
    // Bob cannot start an experiment on Alice's policy: it does not exist for him.
    const bobs = await setTest(bob, ref);
    expect(bobs.statusCode).toBe(400);
    expect(bobs.json().errors[0].field).toBe('body.policy_a');
  });

  it('names bad input: weights, choose_winner without a winner, a version that does not exist', async () => {
    const base = {
      policy_a: { policy_id: 'support', version: 1 },
      policy_b: { policy_id: 'support', version: 2 },
    };
    const zero = await setTest(alice, { ...base, weights: [0, 0] });
    expect(zero.json().errors[0].field).toBe('body.weights');
    const noWinner = await setTest(alice, { ...base, action: 'choose_winner' });
    expect(noWinner.json().errors[0].field).toBe('body.winner');
    const missing = await setTest(alice, { ...base, policy_b: { policy_id: 'support', version: 99 } });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors[0].field).toBe('body.policy_b');
    const badUnit = await setTest(alice, { ...base, unit: 'session' });
    expect(badUnit.statusCode).toBe(400);
    expect(JSON.stringify(badUnit.json().errors)).toContain('body.unit');
    const badQuery = await t.call(alice, 'GET', '/api/policy/abtest/get?policy_a=support');
    expect(badQuery.statusCode).toBe(400);
  });
});
