import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { openEventStream, parseEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildCredential, buildWorkflow } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Failures tell the truth: a provider that answers 401 (a wrong key) against a loopback
 * OpenAI-compatible server. Without `local` in the fallback chain a run fails and keeps the
 * provider's own status and message on the step, the run and their events; with it, the
 * built-in provider's answer is marked degraded with that cause, never a silent echo claiming
 * that no provider is configured. The key never appears in what is answered.
 */

const API_KEY = 'sk-wrong-key-3c9a71d2';
const REFUSAL = 'Incorrect API key provided: sk-wrong-key-3c9a71d2 is not valid';

let t: TestApp;
let base: string;
let llm: LlmServer;

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  llm = await startOpenAiServer();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t.close();
  await llm.close();
});
beforeEach(() => {
  llm.reset();
  // Every call is refused as a provider refuses a wrong key.
  llm.fallbackReply = { type: 'error', status: 401, message: REFUSAL };
});

/** A workspace whose one provider is the loopback server, keyed with a credential, and `fallback`. */
async function workspaceWith(name: string, fallback: { provider: string; name: string }[]): Promise<Actor> {
  const actor = await t.newWorkspace(name);
  const credential = await buildCredential(t, actor, {
    credential_type: 'openai_credentials',
    data: { api_key: API_KEY },
  });
  const response = await t.call(actor, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: credential.id }],
    default_model: { provider: 'loop', name: 'model-a' },
    fallback,
  });
  expect(response.statusCode, response.body).toBe(200);
  return actor;
}

type Run = Record<string, any>;

async function runToTheEnd(actor: Actor): Promise<{ run: Run; events: { event: string; data: any }[] }> {
  const agent = await buildAgent(t, actor, { name: 'Writer', model: null });
  const workflow = await buildWorkflow(t, actor, { goal: 'Write', agents: [agent.id] });
  const started = await t.call(actor, 'POST', `/api/workflows/${workflow.id}/run`, {});
  expect(started.statusCode, started.body).toBe(202);
  const runId = started.json().id as string;
  let run: Run = {};
  await expect
    .poll(
      async () => {
        run = (await t.call(actor, 'GET', `/api/runs/${runId}`)).json();
        return run.status;
      },
      { timeout: 15_000, interval: 50 },
    )
    .toMatch(/^(Completed|Failed|Cancelled)$/);
  const stream = await t.call(actor, 'GET', `/api/runs/${runId}/events`);
  return { run, events: parseEventStream(stream.body) };
}

describe('a provider answering 401', () => {
  it('fails the run with the provider’s status and message on the step, the run and their events', async () => {
    const actor = await workspaceWith('wrong-key', []);
    const { run, events } = await runToTheEnd(actor);

    const cause = /loop\/model-a: HTTP 401: Incorrect API key provided: \[redacted\] is not valid/;
    expect(run).toMatchObject({ status: 'Failed', failure_reason: 'step_failed' });
    expect(run.error).toMatch(cause);
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]).toMatchObject({ status: 'Failed', degraded: null });
    expect(run.steps[0].error).toMatch(cause);
    expect(run.steps[0].error).toMatch(/^every model failed \(1 tried\): /);
    const stepFailed = events.find((event) => event.event === 'step.failed');
    const runFailed = events.find((event) => event.event === 'run.failed');
    expect(stepFailed?.data.error).toMatch(cause);
    expect(runFailed?.data).toMatchObject({ status: 'Failed', error: expect.stringMatching(cause) });
    expect(JSON.stringify({ run, events })).not.toContain(API_KEY);
  });

  it('marks a step the built-in local provider answered as degraded, with the cause', async () => {
    const actor = await workspaceWith('wrong-key-local', [{ provider: 'local', name: 'echo' }]);
    const { run, events } = await runToTheEnd(actor);

    expect(run.status).toBe('Completed');
    const [step] = run.steps;
    expect(step).toMatchObject({ status: 'Completed', provider: 'local', model: 'echo' });
    expect(step.degraded).toMatch(
      /^every model before local\/echo failed: loop\/model-a: HTTP 401: Incorrect API key provided/,
    );
    // The answer says what happened, not that no provider is configured.
    expect(step.output).not.toContain('No model provider is configured');
    expect(step.output).toMatch(/^\[local provider\] No model answered \(loop\/model-a: HTTP 401: /);
    const completed = events.find((event) => event.event === 'step.completed');
    expect(completed?.data).toMatchObject({
      provider: 'local',
      degraded: step.degraded,
      fallbacks: [{ provider: 'loop', model: 'model-a', error: expect.stringContaining('HTTP 401') }],
    });
    expect(JSON.stringify({ run, events })).not.toContain(API_KEY);
  });

  it('tells a chat client the answer is degraded, and a 502 names the provider’s answer', async () => {
    const degraded = await workspaceWith('chat-wrong-key-local', [{ provider: 'local', name: 'echo' }]);
    const answered = await openEventStream(`${base}/api/chat`, degraded.headers, { message: 'hello?' });
    const received = await answered.done;
    const done = received.find((event) => event.event === 'done');
    expect(done?.data).toMatchObject({
      provider: 'local',
      degraded: expect.stringMatching(/loop\/model-a: HTTP 401: Incorrect API key provided/),
    });

    const failing = await workspaceWith('chat-wrong-key', []);
    const refused = await openEventStream(`${base}/api/chat`, failing.headers, { message: 'hello?' });
    expect(refused.status).toBe(502);
    expect(refused.problem).toMatchObject({
      code: 'provider_error',
      detail: expect.stringMatching(/every model failed \(1 tried\): loop\/model-a: HTTP 401: /),
    });
    expect(JSON.stringify(refused.problem)).not.toContain(API_KEY);
  });
});

describe('one base URL per key', () => {
  it('tests an OpenAI key against the base URL of the provider that uses it', async () => {
    const actor = await t.newWorkspace('key-tested-where-used');
    // The credential's own base_url (OpenAI's API by default) plays no part once a provider uses it.
    const credential = await buildCredential(t, actor, {
      credential_type: 'openai_credentials',
      data: { api_key: API_KEY, base_url: 'https://api.openai.invalid/v1' },
    });
    const configured = await t.call(actor, 'PUT', '/api/settings/providers', {
      providers: [
        { id: 'loop', kind: 'openai_compatible', base_url: `${llm.url}/`, credential_id: credential.id },
      ],
      default_model: { provider: 'loop', name: 'model-a' },
    });
    expect(configured.statusCode, configured.body).toBe(200);

    const tested = await t.call(actor, 'POST', `/api/credentials/${credential.id}/test`);
    expect(tested.statusCode, tested.body).toBe(200);
    expect(tested.json()).toMatchObject({ status: 'passed' });
    const probe = llm.requests.find((request) => request.path === '/v1/models');
    expect(probe?.method).toBe('GET');
    expect(probe?.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });
});
