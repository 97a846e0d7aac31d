import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { parseEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let alice: Actor;
let mallory: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
  mallory = await t.newWorkspace('mallory');
});
afterAll(() => t.close());

/** Polls the run until it reaches a final status. */
async function settled(actor: Actor, runId: string, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const response = await t.call(actor, 'GET', `/api/runs/${runId}`);
    const run = response.json();
    if (['Completed', 'Failed', 'Cancelled'].includes(run.status)) return run;
    if (Date.now() > until) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function twoAgentWorkflow(actor: Actor, overrides: Record<string, unknown> = {}) {
  const researcher = await buildAgent(t, actor, {
    name: 'Researcher',
    model: null,
    system_prompt: 'Find facts.',
  });
  const writer = await buildAgent(t, actor, { name: 'Writer', model: null });
  const workflow = await buildWorkflow(t, actor, {
    goal: 'Write a note about {{topic}} for {{audience}}',
    agents: [researcher.id, writer.id],
    context_template: { tone: 'plain' },
    ...overrides,
  });
  return { researcher, writer, workflow };
}

describe('running a workflow', () => {
  it('runs a workflow whose goal needs no inputs when the request has no body, or an empty one sent as JSON', async () => {
    const { workflow } = await twoAgentWorkflow(alice, { goal: 'Summarise the week' });
    const bare = await t.app.inject({
      method: 'POST',
      url: `/api/workflows/${workflow.id}/run`,
      headers: alice.headers,
    });
    expect(bare.statusCode, bare.body).toBe(202);
    expect((await settled(alice, bare.json().id)).status).toBe('Completed');
    // A client that sends `Content-Type: application/json` on every request (the README's
    // header array) and no body: the body is optional, so this is no body too.
    const empty = await t.app.inject({
      method: 'POST',
      url: `/api/workflows/${workflow.id}/run`,
      headers: { ...alice.headers, 'content-type': 'application/json' },
    });
    expect(empty.statusCode, empty.body).toBe(202);
    expect(empty.json().id).not.toBe(bare.json().id);
    // Where a body is required, an empty one is still refused, naming the body.
    const agent = await t.app.inject({
      method: 'POST',
      url: '/api/agents',
      headers: { ...alice.headers, 'content-type': 'application/json' },
    });
    expect(agent.statusCode).toBe(400);
    expect(agent.json().errors[0]).toMatchObject({ field: 'body', message: 'must not be empty' });
  });

  it('answers 202 with the queued run and a Location, then completes with the local provider', async () => {
    const { workflow, researcher, writer } = await twoAgentWorkflow(alice);
    const response = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {
      inputs: { topic: 'FP-Growth', audience: 'operators' },
      context: { ticket: 'OPS-1' },
    });
    expect(response.statusCode).toBe(202);
    const queued = response.json();
    expect(response.headers.location).toBe(`/api/runs/${queued.id}`);
    expect(queued).toMatchObject({
      status: 'Queued',
      workflow_id: workflow.id,
      agent_ids: [researcher.id, writer.id],
      plan: { goal: 'Write a note about FP-Growth for operators' },
      context: { tone: 'plain', ticket: 'OPS-1' },
      context_fields: ['ticket', 'tone'],
    });

    const run = await settled(alice, queued.id);
    expect(run).toMatchObject({
      status: 'Completed',
      next_step: 2,
      agents_used: ['Researcher', 'Writer'],
      failure_reason: null,
      attempts: 1,
    });
    expect(run.tokens_in).toBeGreaterThan(0);
    expect(run.duration_ms).toBeGreaterThanOrEqual(0);
    expect(run.steps).toHaveLength(2);
    const [first, second] = run.steps;
    expect(first).toMatchObject({
      position: 0,
      agent_name: 'Researcher',
      status: 'Completed',
      provider: 'local',
    });
    expect(first.prompt).toContain('Goal: Write a note about FP-Growth for operators');
    expect(first.output).toContain('No model provider is configured');
    // Sequential: the second agent is handed the first one's output.
    expect(second.prompt).toContain('Output of the previous agent (Researcher)');
    expect(run.output).toBe(second.output);

    const agent = await t.call(alice, 'GET', `/api/agents/${researcher.id}`);
    expect(agent.json().status).toBe('Idle');
    // The workflow shows its latest run's status.
    const shown = await t.call(alice, 'GET', `/api/workflows/${workflow.id}`);
    expect(shown.json().status).toBe('Completed');
  });

  it('names every missing goal input in one 400', async () => {
    const { workflow } = await twoAgentWorkflow(alice);
    const response = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, { inputs: {} });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors.map((e: { field: string }) => e.field)).toEqual([
      'body.inputs.topic',
      'body.inputs.audience',
    ]);
  });

  it('refuses a workflow without agents with 409', async () => {
    const workflow = await buildWorkflow(t, alice);
    const response = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {});
    expect(response.statusCode).toBe(409);
    expect(response.json().code).toBe('workflow_not_runnable');
  });

  it('answers the same run for a repeated Idempotency-Key, and 422 for a different body', async () => {
    const { workflow } = await twoAgentWorkflow(alice);
    const body = { inputs: { topic: 'a', audience: 'b' } };
    const headers = { 'idempotency-key': `key-${workflow.id}` };
    const first = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, body, { headers });
    const again = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, body, { headers });
    expect(again.statusCode).toBe(202);
    expect(again.json().id).toBe(first.json().id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await t.call(
      alice,
      'POST',
      `/api/workflows/${workflow.id}/run`,
      { inputs: { topic: 'other', audience: 'b' } },
      { headers },
    );
    expect(other.statusCode).toBe(422);
    expect(other.json().code).toBe('idempotency_key_reused');
    const list = await t.call(alice, 'GET', `/api/runs?workflow_id=${workflow.id}`);
    expect(list.json().total).toBe(1);
  });
});

describe('run events', () => {
  it('replays the log, and from Last-Event-ID only what follows it', async () => {
    const { workflow } = await twoAgentWorkflow(alice);
    const started = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {
      inputs: { topic: 'x', audience: 'y' },
    });
    const runId = started.json().id;
    await settled(alice, runId);
    const stream = await t.call(alice, 'GET', `/api/runs/${runId}/events`);
    expect(stream.statusCode).toBe(200);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = parseEventStream(stream.body);
    expect(events.map((e) => e.event)).toEqual([
      'run',
      'run.queued',
      'run.started',
      'step.started',
      'step.completed',
      'step.started',
      'step.completed',
      'run.completed',
    ]);
    const ids = events.slice(1).map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const resumed = await t.call(alice, 'GET', `/api/runs/${runId}/events`, undefined, {
      headers: { 'last-event-id': String(ids[3]) },
    });
    expect(parseEventStream(resumed.body).map((e) => e.event)).toEqual([
      'run',
      'step.started',
      'step.completed',
      'run.completed',
    ]);
    const viaQuery = await t.call(alice, 'GET', `/api/runs/${runId}/events?after=${ids[5]}`);
    expect(parseEventStream(viaQuery.body).map((e) => e.event)).toEqual(['run', 'run.completed']);
    const bad = await t.call(alice, 'GET', `/api/runs/${runId}/events`, undefined, {
      headers: { 'last-event-id': 'abc' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].field).toBe('headers.last-event-id');
  });
});

describe('run control', () => {
  it('refuses to cancel, pause or resume a finished run with 409', async () => {
    const { workflow } = await twoAgentWorkflow(alice);
    const started = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {
      inputs: { topic: 'x', audience: 'y' },
    });
    await settled(alice, started.json().id);
    for (const action of ['cancel', 'pause', 'resume']) {
      const response = await t.call(alice, 'POST', `/api/runs/${started.json().id}/${action}`);
      expect(response.statusCode).toBe(409);
      expect(response.json().code).toBe('run_state_conflict');
      // These routes take no body: an empty one sent as JSON reaches the same answer.
      const asJson = await t.app.inject({
        method: 'POST',
        url: `/api/runs/${started.json().id}/${action}`,
        headers: { ...alice.headers, 'content-type': 'application/json' },
      });
      expect(asJson.statusCode, asJson.body).toBe(409);
      expect(asJson.json().code).toBe('run_state_conflict');
    }
  });
});

describe('listing runs', () => {
  it('filters by workflow, agent and status, and feeds the summary newest first', async () => {
    const { workflow, writer } = await twoAgentWorkflow(alice);
    const ids: string[] = [];
    for (const topic of ['one', 'two']) {
      const response = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {
        inputs: { topic, audience: 'z' },
      });
      ids.push(response.json().id);
    }
    for (const id of ids) await settled(alice, id);
    const byWorkflow = await t.call(alice, 'GET', `/api/runs?workflow_id=${workflow.id}&limit=1`);
    expect(byWorkflow.json()).toMatchObject({ total: 2, limit: 1, offset: 0 });
    expect(byWorkflow.json().items[0].id).toBe(ids[1]);
    const byAgent = await t.call(alice, 'GET', `/api/runs?agent_id=${writer.id}&status=Completed`);
    expect(
      byAgent
        .json()
        .items.map((r: { id: string }) => r.id)
        .sort(),
    ).toEqual([...ids].sort());
    const summary = await t.call(alice, 'GET', '/api/runs/summary?limit=50');
    expect(summary.statusCode).toBe(200);
    const item = summary.json().items.find((r: { id: string }) => r.id === ids[1]);
    expect(item).toMatchObject({ status: 'Completed', workflow_name: workflow.name });
    expect(item.duration_ms).toBeGreaterThanOrEqual(0);
  });
});

describe('workspace isolation', () => {
  it("answers 404 for another workspace's run on every route and never lists it", async () => {
    const { workflow } = await twoAgentWorkflow(alice);
    const started = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {
      inputs: { topic: 'secret', audience: 'y' },
    });
    const runId = started.json().id;
    await settled(alice, runId);
    for (const [method, url] of [
      ['GET', `/api/runs/${runId}`],
      ['GET', `/api/runs/${runId}/events`],
      ['POST', `/api/runs/${runId}/cancel`],
      ['POST', `/api/runs/${runId}/pause`],
      ['POST', `/api/runs/${runId}/resume`],
      ['POST', `/api/workflows/${workflow.id}/run`],
    ] as const) {
      const response = await t.call(mallory, method, url, method === 'POST' ? {} : undefined);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
    }
    const list = await t.call(mallory, 'GET', '/api/runs');
    expect(list.json().items.map((r: { id: string }) => r.id)).not.toContain(runId);
    const summary = await t.call(mallory, 'GET', '/api/runs/summary');
    expect(summary.json().items.map((r: { id: string }) => r.id)).not.toContain(runId);
  });
});
