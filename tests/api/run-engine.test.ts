import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { parseEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * The run engine against a loopback OpenAI-compatible server: each error-handling mode,
 * the parallel merge, the run timeout, cancel and pause aborting or waiting for the step in
 * flight, and a run whose worker vanished continuing after its last completed step.
 */

let t: TestApp;
let llm: LlmServer;
let alice: Actor;

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  llm = await startOpenAiServer();
  alice = await t.newWorkspace('alice');
  const response = await t.call(alice, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
    default_model: { provider: 'loop', name: 'model-a' },
    prices: [{ provider: 'loop', name: 'model-a', input_per_million: 1, output_per_million: 2 }],
  });
  expect(response.statusCode, response.body).toBe(200);
});
afterAll(async () => {
  await t.close();
  await llm.close();
});
beforeEach(() => {
  llm.reset();
  llm.fallbackReply = { type: 'text', text: 'ok', usage: { input_tokens: 10, output_tokens: 5 } };
});

type Run = Record<string, any>;

async function waitFor(runId: string, done: (run: Run) => boolean, timeoutMs = 15_000): Promise<Run> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const run = (await t.call(alice, 'GET', `/api/runs/${runId}`)).json();
    if (done(run)) return run;
    if (Date.now() > until)
      throw new Error(
        `run ${runId} is ${run.status} (${run.failure_reason}: ${run.error}): ${JSON.stringify(run.steps)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
const finished = (run: Run) => ['Completed', 'Failed', 'Cancelled'].includes(run.status);

async function startRun(agentCount: number, policy: Record<string, unknown> = {}) {
  const agents = [];
  for (let i = 0; i < agentCount; i++)
    agents.push(await buildAgent(t, alice, { name: `A${i}`, model: null }));
  const workflow = await buildWorkflow(t, alice, {
    goal: 'Do the thing',
    agents: agents.map((a) => a.id),
    execution_policy: policy,
  });
  const response = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {});
  expect(response.statusCode, response.body).toBe(202);
  return { runId: response.json().id as string, agents };
}

describe('error handling', () => {
  it('stop: the first failed step fails the run, the agent shows Error, later agents never run', async () => {
    llm.reply({ type: 'error', status: 500, message: 'model exploded' });
    const { runId, agents } = await startRun(2, { error_handling: 'stop' });
    const run = await waitFor(runId, finished);
    expect(run).toMatchObject({ status: 'Failed', failure_reason: 'step_failed', next_step: 0 });
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]).toMatchObject({ status: 'Failed', agent_name: 'A0' });
    expect(run.steps[0].error).toBeTruthy();
    const agent = (await t.call(alice, 'GET', `/api/agents/${agents[0]?.id}`)).json();
    expect(agent.status).toBe('Error');
  });

  it('continue: the failure is recorded and the next agent runs', async () => {
    llm.reply({ type: 'error', status: 500 }, { type: 'text', text: 'second answer' });
    const { runId } = await startRun(2, { error_handling: 'continue' });
    const run = await waitFor(runId, finished);
    expect(run.status).toBe('Completed');
    expect(run.steps.map((s: Run) => [s.position, s.status])).toEqual([
      [0, 'Failed'],
      [1, 'Completed'],
    ]);
    expect(run.output).toBe('second answer');
    expect(run.agents_used).toEqual(['A1']);
  });

  it('retry: a failed step is tried again with backoff, each attempt recorded', async () => {
    llm.reply({ type: 'error', status: 503 }, { type: 'text', text: 'worked the second time' });
    const { runId } = await startRun(1, { error_handling: 'retry', max_retries: 2 });
    const run = await waitFor(runId, finished);
    expect(run.status).toBe('Completed');
    expect(run.steps.map((s: Run) => [s.attempt, s.status])).toEqual([
      [1, 'Failed'],
      [2, 'Completed'],
    ]);
    const gap = Date.parse(run.steps[1].started_at) - Date.parse(run.steps[0].finished_at);
    expect(gap).toBeGreaterThanOrEqual(200); // the first backoff is 250-500 ms
  });

  it('retry: spent retries fail the run', async () => {
    llm.reply({ type: 'error', status: 500 }, { type: 'error', status: 500 });
    const { runId } = await startRun(1, { error_handling: 'retry', max_retries: 1 });
    const run = await waitFor(runId, finished);
    expect(run).toMatchObject({ status: 'Failed', failure_reason: 'step_failed' });
    expect(run.steps).toHaveLength(2);
  });
});

describe('execution modes', () => {
  it('sequential: totals add up over steps with the workspace prices', async () => {
    const { runId } = await startRun(2);
    const run = await waitFor(runId, finished);
    expect(run).toMatchObject({ status: 'Completed', tokens_in: 20, tokens_out: 10 });
    expect(run.cost).toBeCloseTo((20 * 1 + 10 * 2) / 1_000_000, 12);
    expect(run.steps.map((s: Run) => s.provider)).toEqual(['loop', 'loop']);
    // Each step keeps the prices its cost was computed with, so the cost can be explained later.
    const price = { input_per_million: 1, output_per_million: 2 };
    expect(run.steps.map((s: Run) => s.price)).toEqual([price, price]);
  });

  it('parallel: agents run at once, then a merge step combines their outputs', async () => {
    llm.fallbackReply = { type: 'text', text: 'part', firstByteDelayMs: 1500 };
    const { runId } = await startRun(3, { mode: 'parallel' });
    const run = await waitFor(runId, finished);
    expect(run.status).toBe('Completed');
    const kinds = run.steps.map((s: Run) => [s.position, s.kind]);
    expect(kinds).toEqual([
      [0, 'agent'],
      [1, 'agent'],
      [2, 'agent'],
      [3, 'merge'],
    ]);
    // At once: every agent step started before the first one finished.
    const agentSteps = run.steps.filter((s: Run) => s.kind === 'agent');
    const lastStart = Math.max(...agentSteps.map((s: Run) => Date.parse(s.started_at)));
    const firstEnd = Math.min(...agentSteps.map((s: Run) => Date.parse(s.finished_at)));
    expect(lastStart).toBeLessThan(firstEnd);
    const merge = llm.modelRequests().at(-1)?.body;
    const prompt = JSON.stringify(merge.messages);
    expect(prompt).toContain('### A0');
    expect(prompt).toContain('### A2');
  });
});

describe("a step's start", () => {
  /** The run's log as stored: type, the step it names, and the commit (transaction) time. */
  async function storedEvents(runId: string) {
    return t.rows<{ type: string; step_id: string | null; at_ms: number }>(
      sql`select type, data->>'step_id' as step_id,
            (extract(epoch from created_at) * 1000)::float8 as at_ms from run_events
          where run_id = ${runId} order by id`,
    );
  }

  it('a quick step is written once: started and completed in one commit, events and feed in order', async () => {
    const { runId, agents } = await startRun(1);
    const run = await waitFor(runId, finished);
    expect(run.status).toBe('Completed');
    const [step] = run.steps;
    expect(Date.parse(step.started_at)).toBeLessThanOrEqual(Date.parse(step.finished_at));
    const events = await storedEvents(runId);
    expect(events.map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'step.started',
      'step.completed',
      'run.completed',
    ]);
    const started = events.find((e) => e.type === 'step.started');
    const completed = events.find((e) => e.type === 'step.completed');
    expect(started?.step_id).toBe(step.id);
    expect(completed?.step_id).toBe(step.id);
    expect(started?.at_ms).toBe(completed?.at_ms);
    const feed = (await t.call(alice, 'GET', '/api/activity?limit=20')).json().items;
    const kinds = feed
      .filter((e: Run) => e.subject_id === agents[0]?.id)
      .map((e: Run) => e.kind)
      .reverse();
    expect(kinds).toEqual(['agent.created', 'agent.started', 'agent.completed']);
  });

  it('a slow step shows Running, its agent Busy, before its model answers', async () => {
    llm.reply({ type: 'text', text: 'slow', firstByteDelayMs: 2000 });
    const { runId, agents } = await startRun(1);
    const running = await waitFor(runId, (r) => r.steps.some((s: Run) => s.status === 'Running'), 1500);
    expect(running.steps[0]).toMatchObject({ status: 'Running', agent_name: 'A0' });
    const agent = (await t.call(alice, 'GET', `/api/agents/${agents[0]?.id}`)).json();
    expect(agent.status).toBe('Busy');
    expect((await storedEvents(runId)).map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'step.started',
    ]);
    const run = await waitFor(runId, finished);
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]).toMatchObject({ status: 'Completed', output: 'slow', id: running.steps[0].id });
    const events = await storedEvents(runId);
    const started = events.find((e) => e.type === 'step.started');
    const completed = events.find((e) => e.type === 'step.completed');
    expect(Number(completed?.at_ms) - Number(started?.at_ms)).toBeGreaterThanOrEqual(500);
  });

  it('a quick failure records the step with its start: started and failed in one commit', async () => {
    llm.reply({ type: 'error', status: 400, message: 'bad request' });
    const { runId } = await startRun(1, { error_handling: 'stop' });
    const run = await waitFor(runId, finished);
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]).toMatchObject({ status: 'Failed', agent_name: 'A0' });
    const events = await storedEvents(runId);
    expect(events.map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'step.started',
      'step.failed',
      'run.failed',
    ]);
    expect(events[2]?.step_id).toBe(run.steps[0].id);
    expect(events[2]?.at_ms).toBe(events[3]?.at_ms);
  });
});

describe('timeout and control', () => {
  it('a run past its timeout fails with reason timeout and the provider call is aborted', async () => {
    llm.reply({ type: 'text', text: 'too late', firstByteDelayMs: 10_000 });
    const { runId } = await startRun(1, { timeout_seconds: 1 });
    const run = await waitFor(runId, finished);
    expect(run).toMatchObject({ status: 'Failed', failure_reason: 'timeout' });
    const request = llm.modelRequests()[0];
    await request?.closed;
    expect(request?.closedEarly).toBe(true);
  });

  it('cancel aborts the step in flight and ends the run Cancelled', async () => {
    llm.reply({ type: 'text', text: 'never', firstByteDelayMs: 10_000 });
    const { runId } = await startRun(2);
    await llm.waitForModelRequests(1);
    const cancel = await t.call(alice, 'POST', `/api/runs/${runId}/cancel`);
    expect(cancel.statusCode).toBe(200);
    const run = await waitFor(runId, finished, 5_000);
    expect(run).toMatchObject({ status: 'Cancelled', failure_reason: 'cancelled' });
    await llm.modelRequests()[0]?.closed;
    expect(llm.modelRequests()).toHaveLength(1);
  });

  it('pause waits for the step in flight; resume continues with the next step, not from the start', async () => {
    llm.reply({ type: 'text', text: 'first', firstByteDelayMs: 500 }, { type: 'text', text: 'second' });
    const { runId } = await startRun(2);
    await llm.waitForModelRequests(1);
    const pause = await t.call(alice, 'POST', `/api/runs/${runId}/pause`);
    expect(pause.json()).toMatchObject({ status: 'Running', control: 'pause' });
    const paused = await waitFor(runId, (run) => run.status === 'Paused');
    expect(paused).toMatchObject({ next_step: 1, control: null });
    // The events of a paused run end at its pause (it may rest for days).
    const whilePaused = await t.call(alice, 'GET', `/api/runs/${runId}/events`);
    expect(
      parseEventStream(whilePaused.body)
        .map((e) => e.event)
        .slice(-2),
    ).toEqual(['step.completed', 'run.paused']);
    expect(paused.steps.map((s: Run) => s.status)).toEqual(['Completed']);
    const again = await t.call(alice, 'POST', `/api/runs/${runId}/pause`);
    expect(again.statusCode).toBe(409);
    const resume = await t.call(alice, 'POST', `/api/runs/${runId}/resume`);
    expect(resume.json().status).toBe('Queued');
    const run = await waitFor(runId, finished);
    expect(run).toMatchObject({ status: 'Completed', output: 'second', agents_used: ['A0', 'A1'] });
    expect(llm.modelRequests()).toHaveLength(2);
    // Replayed after the resume, the same log goes on past the pause to the end.
    const events = parseEventStream((await t.call(alice, 'GET', `/api/runs/${runId}/events`)).body);
    expect(events.map((e) => e.event)).toContain('run.paused');
    expect(events.at(-1)?.event).toBe('run.completed');
    // Resumed after its last event, a finished run's stream has nothing more: 204, so an
    // EventSource stops reconnecting.
    const atEnd = await t.call(alice, 'GET', `/api/runs/${runId}/events`, undefined, {
      headers: { 'last-event-id': String(events.at(-1)?.id) },
    });
    expect(atEnd.statusCode).toBe(204);
  });

  it('pause and cancel a queued run at once', async () => {
    llm.fallbackReply = { type: 'text', text: 'slow', firstByteDelayMs: 400 };
    // Paused right after the 202, or, if a worker claimed it first, after its first step.
    const { runId } = await startRun(2);
    const pause = await t.call(alice, 'POST', `/api/runs/${runId}/pause`);
    expect(pause.statusCode, pause.body).toBe(200);
    const paused = await waitFor(runId, (run) => run.status === 'Paused' || finished(run));
    if (paused.status !== 'Paused') {
      const log = await t.call(alice, 'GET', `/api/runs/${runId}/events`);
      throw new Error(`${pause.body}\n${log.body}`);
    }
    expect(paused.status).toBe('Paused');
    const cancel = await t.call(alice, 'POST', `/api/runs/${runId}/cancel`);
    expect(cancel.json()).toMatchObject({ status: 'Cancelled', failure_reason: 'cancelled' });
    expect((await t.call(alice, 'POST', `/api/runs/${runId}/resume`)).statusCode).toBe(409);
  });
});

describe('recovery', () => {
  it('a run whose worker vanished is claimed again and continues after its last completed step', async () => {
    llm.reply({ type: 'text', text: 'step one' }, { type: 'text', text: 'held', firstByteDelayMs: 10_000 });
    const { runId } = await startRun(3);
    await llm.waitForModelRequests(2);
    // The worker "dies": its lease is taken away as if it had expired long ago.
    await t.rows(
      sql`update runs set lease_owner = 'vanished-worker', lease_expires_at = now() - interval '1 minute' where id = ${runId}`,
    );
    llm.reply({ type: 'text', text: 'step two' }, { type: 'text', text: 'step three' });
    expect(await t.services.runs.recoverStranded()).toBeGreaterThanOrEqual(1);
    const run = await waitFor(runId, finished);
    expect(run).toMatchObject({ status: 'Completed', attempts: 2, output: 'step three' });
    expect(run.agents_used).toEqual(['A0', 'A1', 'A2']);
    const positions = run.steps.filter((s: Run) => s.status === 'Completed').map((s: Run) => s.position);
    expect(positions).toEqual([0, 1, 2]);
    // Step 0 ran once; step 1 twice (the interrupted attempt and the one after recovery).
    expect(run.steps.filter((s: Run) => s.position === 0)).toHaveLength(1);
  });
});

describe('tools in a run', () => {
  it('records the tool call with its input and output in the step, the run and its events', async () => {
    const target = http.createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ path: request.url, weather: 'sunny' }));
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/forecast`;
    try {
      llm.reply(
        {
          type: 'tool_calls',
          calls: [{ id: 'call-1', name: 'http_request', input: { method: 'GET', url } }],
        },
        { type: 'text', text: 'It will be sunny.' },
      );
      const agent = await buildAgent(t, alice, {
        name: 'Forecaster',
        model: null,
        tools: [{ name: 'http_request' }],
      });
      const workflow = await buildWorkflow(t, alice, { goal: 'Tell the weather', agents: [agent.id] });
      const runId = (await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {})).json().id;
      const run = await waitFor(runId, finished);
      expect(run, `${run.error} ${JSON.stringify(run.steps.map((x: Run) => x.error))}`).toMatchObject({
        status: 'Completed',
        output: 'It will be sunny.',
        tools_used: ['http_request'],
      });
      const [call] = run.steps[0].tool_calls;
      expect(call).toMatchObject({ id: 'call-1', name: 'http_request', input: { method: 'GET', url } });
      expect(JSON.stringify(call.output)).toContain('sunny');
      const events = parseEventStream((await t.call(alice, 'GET', `/api/runs/${runId}/events`)).body);
      expect(events.find((e) => e.event === 'tool_call')?.data).toMatchObject({ name: 'http_request' });
    } finally {
      await new Promise((resolve) => target.close(resolve));
    }
  });
});
