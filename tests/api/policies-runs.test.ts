import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { openEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * An agent with a policy: a run's step sends the policy's assembled context (system text and
 * examples) to the model, and the run records the policy, its version and the A/B variant.
 */

let t: TestApp;
let llm: LlmServer;
let alice: Actor;
let base: string;

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  llm = await startOpenAiServer();
  alice = await t.newWorkspace('policy-runs');
  const response = await t.call(alice, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
    default_model: { provider: 'loop', name: 'model-a' },
    prices: [{ provider: 'loop', name: 'model-a', input_per_million: 1, output_per_million: 2 }],
  });
  expect(response.statusCode, response.body).toBe(200);
  llm.fallbackReply = { type: 'text', text: 'ok', usage: { input_tokens: 10, output_tokens: 5 } };
});
afterAll(async () => {
  await t.close();
  await llm.close();
});

type Run = Record<string, any>;

async function waitFor(runId: string): Promise<Run> {
  const until = Date.now() + 15_000;
  for (;;) {
    const run = (await t.call(alice, 'GET', `/api/runs/${runId}`)).json();
    if (['Completed', 'Failed', 'Cancelled'].includes(run.status)) return run;
    if (Date.now() > until) throw new Error(`run ${runId} is ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('runs of an agent with a policy', () => {
  it('send the assembled context and record the policy version and variant', async () => {
    const policy = {
      sections: [
        { name: 'persona', kind: 'persona', text: 'You are the policy persona.' },
        { name: 'region', kind: 'context', text: 'Region: {{region}}.' },
        { name: 'shot', kind: 'examples', role: 'assistant', text: 'Example answer.' },
      ],
      model: { provider: 'loop', name: 'model-a' },
    };
    expect((await t.call(alice, 'PUT', '/api/policy/runner', policy)).statusCode).toBe(201);
    const agent = await buildAgent(t, alice, {
      name: 'Pol',
      model: null,
      system_prompt: 'not used',
      policy: { id: 'runner' },
    });
    expect((await t.call(alice, 'GET', `/api/agents/${agent.id}`)).json().policy).toEqual({ id: 'runner' });
    const plain = await buildAgent(t, alice, { name: 'Plain', model: null });
    expect(plain.policy ?? null).toBeNull();

    const workflow = await buildWorkflow(t, alice, { goal: 'Help in {{region}}', agents: [agent.id] });
    const started = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {
      inputs: { region: 'eu' },
      context: { conversation_id: 'conv-run-1' },
    });
    expect(started.statusCode, started.body).toBe(202);
    const run = await waitFor(started.json().id);
    expect(run.status, run.error).toBe('Completed');
    expect(run).toMatchObject({
      policy_id: 'runner',
      policy_version: 1,
      policy_variant: null,
      experiment_id: null,
    });

    const body = llm.requests.find((r) => r.path.endsWith('/chat/completions'))?.body as {
      messages: { role: string; content: unknown }[];
    };
    expect(JSON.stringify(body.messages[0])).toContain('You are the policy persona.\\n\\nRegion: eu.');
    expect(JSON.stringify(body.messages)).not.toContain('not used');
    expect(JSON.stringify(body.messages[1])).toContain('Example answer.');
  });

  it('record the variant an A/B test served the run', async () => {
    expect(
      (
        await t.call(alice, 'PUT', '/api/policy/runner', {
          sections: [{ name: 'p', kind: 'persona', text: 'Version two.' }],
        })
      ).statusCode,
    ).toBe(200);
    const set = await t.call(alice, 'POST', '/api/policy/abtest/set', {
      policy_a: { policy_id: 'runner', version: 1 },
      policy_b: { policy_id: 'runner', version: 2 },
    });
    expect(set.statusCode, set.body).toBe(200);
    const agent = await buildAgent(t, alice, { name: 'Pol2', model: null, policy: { id: 'runner' } });
    const workflow = await buildWorkflow(t, alice, { goal: 'Go', agents: [agent.id] });
    const started = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {
      inputs: { region: 'us' },
      context: { conversation_id: 'conv-run-2' },
    });
    const run = await waitFor(started.json().id);
    expect(run.status, run.error).toBe('Completed');
    expect(run.experiment_id).toBe(set.json().id);
    expect(['a', 'b']).toContain(run.policy_variant);
    expect(run.policy_version).toBe(run.policy_variant === 'a' ? 1 : 2);
    const results = (
      await t.call(alice, 'GET', '/api/policy/abtest/get?policy_a=runner&policy_b=runner')
    ).json();
    expect(results.units.a + results.units.b).toBe(1);
  });

  it('chat turns of an agent with a policy speak its context, the conversation being the unit', async () => {
    expect(
      (
        await t.call(alice, 'PUT', '/api/policy/chatty', {
          sections: [{ name: 'p', kind: 'persona', text: 'You are the chat policy.' }],
        })
      ).statusCode,
    ).toBe(201);
    const agent = await buildAgent(t, alice, {
      name: 'Chatty',
      model: null,
      system_prompt: 'old prompt',
      policy: { id: 'chatty' },
    });
    llm.reset();
    const stream = await openEventStream(`${base}/api/chat`, alice.headers, {
      message: 'hi',
      agent_id: agent.id,
    });
    expect(stream.status).toBe(200);
    const events = await stream.done;
    expect(events.at(-1)?.event).toBe('done');
    const [request] = llm.modelRequests().slice(-1);
    expect(request?.body.messages[0]).toEqual({ role: 'system', content: 'You are the chat policy.' });
    expect(JSON.stringify(request?.body.messages)).not.toContain('old prompt');
  });
});
