import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { openEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildCredential, buildWorkflow } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * The database failing inside work that calls out (a provider call, a tool, a policy's
 * assembly) is the platform's failure, not that work's: a run is handed back and continues
 * once the database is back (never `Failed`), a chat answers 503 `database_unavailable`
 * before it streams, and a stream that already started ends with a `database_unavailable`
 * event (never `internal_error`, never an answer made without the tool).
 *
 * The database goes away exactly at the statement under test: a trigger on the table that
 * statement writes raises SQLSTATE 57P01 (admin_shutdown), the error PostgreSQL gives a
 * statement whose backend is terminated (`pg_terminate_backend`), on PGlite and PostgreSQL
 * alike, for one workspace only. Dropping the trigger brings the database back.
 */

let t: TestApp;
let base: string;
let llm: LlmServer;

const API_KEY = 'sk-outage-canary-31c7e0';

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  llm = await startOpenAiServer();
  await t.rows(sql`create sequence outage_hits`);
  await t.rows(
    sql.raw(`create function outage() returns trigger language plpgsql as $$
    begin
      perform nextval('outage_hits');
      raise exception 'terminating connection due to administrator command' using errcode = 'admin_shutdown';
    end $$`),
  );
});
afterAll(async () => {
  await llm.close();
  await t.close();
});
afterEach(async () => {
  await databaseBack();
  llm.reset();
  llm.fallbackReply = { type: 'text', text: 'ok', usage: { input_tokens: 3, output_tokens: 1 } };
});

/** Every statement writing `table` for `workspaceId` fails as if its backend were terminated. */
async function databaseGoesAwayOn(table: string, workspaceId: string): Promise<void> {
  await t.rows(
    sql.raw(`create trigger outage before insert on ${table} for each row
      when (new.workspace_id = '${workspaceId}') execute function outage()`),
  );
}

async function databaseBack(): Promise<void> {
  for (const table of ['credential_audit_logs', 'policy_exposures']) {
    await t.rows(sql.raw(`drop trigger if exists outage on ${table}`));
  }
}

/** How many statements the outage has refused so far. */
async function outageHits(): Promise<number> {
  const [row] = await t.rows<{ hits: string }>(
    sql`select case when is_called then last_value else 0 end as hits from outage_hits`,
  );
  return Number(row?.hits ?? 0);
}

const until = (check: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> =>
  expect.poll(check, { timeout: ms, interval: 25, message: `timed out waiting for ${what}` }).toBe(true);

/** A workspace whose models are the loopback server's, its key in the vault unless `keyless`. */
async function workspaceWithProvider(name: string, keyless = false): Promise<Actor> {
  const actor = await t.newWorkspace(name);
  const credential = keyless
    ? undefined
    : await buildCredential(t, actor, { credential_type: 'openai_credentials', data: { api_key: API_KEY } });
  const response = await t.call(actor, 'PUT', '/api/settings/providers', {
    providers: [
      { id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: credential?.id ?? null },
    ],
    default_model: { provider: 'loop', name: 'model-a' },
  });
  expect(response.statusCode, response.body).toBe(200);
  return actor;
}

type Run = Record<string, any>;

const readRun = async (actor: Actor, runId: string): Promise<Run> =>
  (await t.call(actor, 'GET', `/api/runs/${runId}`)).json();

async function runOf(actor: Actor, agents: { id: string }[]): Promise<string> {
  const workflow = await buildWorkflow(t, actor, { goal: 'Do the thing', agents: agents.map((a) => a.id) });
  const response = await t.call(actor, 'POST', `/api/workflows/${workflow.id}/run`, {});
  expect(response.statusCode, response.body).toBe(202);
  return response.json().id as string;
}

/** The run met the outage, was not failed for it, and completes both steps once the database is back. */
async function expectHandedBackThenCompleted(actor: Actor, runId: string, hitsBefore: number) {
  await until(async () => (await outageHits()) > hitsBefore, 'the outage to be met');
  // Long enough for a failure to have been recorded, were it taken for the step's own.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const during = await readRun(actor, runId);
  expect(during.status, JSON.stringify(during)).not.toBe('Failed');
  expect(during.failure_reason).toBeNull();

  await databaseBack();
  let run = await readRun(actor, runId);
  await until(
    async () => {
      run = await readRun(actor, runId);
      return ['Completed', 'Failed', 'Cancelled'].includes(run.status);
    },
    'the run to finish',
    30_000,
  );
  expect(run.status, JSON.stringify(run)).toBe('Completed');
  const completed = run.steps.filter((step: Run) => step.status === 'Completed');
  expect(completed.map((step: Run) => step.position)).toEqual([0, 1]);
  // No agent was shown as failing, and no step was recorded as the agent's failure.
  for (const step of run.steps.filter((s: Run) => s.status === 'Failed')) {
    expect(step.error).toMatch(/^interrupted: /);
  }
  const agents = await Promise.all(
    run.agent_ids.map(async (id: string) => (await t.call(actor, 'GET', `/api/agents/${id}`)).json()),
  );
  for (const agent of agents) expect(agent.status).not.toBe('Error');
}

describe('the database away during the vault read of the provider key', () => {
  it('a run is handed back, not failed, and completes once the database is back', async () => {
    const actor = await workspaceWithProvider('vault-run');
    const agents = [await buildAgent(t, actor, { model: null }), await buildAgent(t, actor, { model: null })];
    const hits = await outageHits();
    await databaseGoesAwayOn('credential_audit_logs', actor.workspaceId);
    const runId = await runOf(actor, agents);
    await expectHandedBackThenCompleted(actor, runId, hits);
  });

  it('a run handed back more often than a run may lose its worker is still not failed', async () => {
    const actor = await workspaceWithProvider('vault-run-often');
    const agents = [await buildAgent(t, actor, { model: null }), await buildAgent(t, actor, { model: null })];
    const hits = await outageHits();
    await databaseGoesAwayOn('credential_audit_logs', actor.workspaceId);
    const runId = await runOf(actor, agents);
    // Three lost workers fail a run (`interrupted`); hand-backs for the database are not lost workers.
    await expect
      .poll(
        async () => (await outageHits()) >= hits + 4 || (await readRun(actor, runId)).status === 'Failed',
        { timeout: 45_000, interval: 100 },
      )
      .toBe(true);
    const during = await readRun(actor, runId);
    expect(during.status, JSON.stringify(during)).not.toBe('Failed');
    expect(await outageHits()).toBeGreaterThanOrEqual(hits + 4);
    await expectHandedBackThenCompleted(actor, runId, hits);
  }, 90_000);

  it('chat answers 503 database_unavailable with Retry-After, not 502, and stores nothing', async () => {
    const actor = await workspaceWithProvider('vault-chat');
    await databaseGoesAwayOn('credential_audit_logs', actor.workspaceId);
    const stream = await openEventStream(`${base}/api/chat`, actor.headers, { message: 'hello' });
    expect(stream.status).toBe(503);
    expect(stream.headers['content-type']).toContain('application/problem+json');
    expect(stream.headers['retry-after']).toBe('5');
    expect(stream.problem).toMatchObject({ status: 503, code: 'database_unavailable' });
    expect(llm.modelRequests()).toHaveLength(0);
    const conversations = await t.call(actor, 'GET', '/api/chat/conversations');
    expect(conversations.json().items).toEqual([]);
  });
});

describe('the database away during a tool’s database use (its vault read)', () => {
  /** An agent whose http_request tool may use a stored key; the model asks for it. */
  async function toolAgent(actor: Actor) {
    const credential = await buildCredential(t, actor, {
      credential_type: 'openai_credentials',
      data: { api_key: API_KEY },
      allowed_hosts: [new URL(llm.url).host],
    });
    const agent = await buildAgent(t, actor, {
      model: null,
      tools: [{ name: 'http_request', config: { credentials: [credential.id] } }],
    });
    const call = {
      type: 'tool_calls' as const,
      calls: [
        {
          name: 'http_request',
          input: { method: 'GET', url: `${llm.url}/models`, credential_id: credential.id },
        },
      ],
    };
    return { agent, call };
  }

  it('a chat stream that started ends with a database_unavailable event, not an answer without the tool', async () => {
    const actor = await workspaceWithProvider('tool-chat', true);
    const { agent, call } = await toolAgent(actor);
    llm.reply(call, { type: 'text', text: 'answered without the tool' });
    await databaseGoesAwayOn('credential_audit_logs', actor.workspaceId);
    const stream = await openEventStream(`${base}/api/chat`, actor.headers, {
      message: 'fetch it',
      agent_id: agent.id,
    });
    expect(stream.status).toBe(200);
    const events = await stream.done;
    expect(events.map((event) => event.event)).toEqual(['start', 'tool_call', 'error']);
    expect(events.at(-1)?.data).toMatchObject({ code: 'database_unavailable' });
    // The model was not asked to go on without the tool's result.
    expect(llm.modelRequests()).toHaveLength(1);
  });

  it('a run is handed back, not failed, and completes once the database is back', async () => {
    const actor = await workspaceWithProvider('tool-run', true);
    const { agent, call } = await toolAgent(actor);
    const second = await buildAgent(t, actor, { model: null });
    // Each attempt calls the tool: the first meets the outage, the one after it gets the result.
    llm.reply(call, call);
    const hits = await outageHits();
    await databaseGoesAwayOn('credential_audit_logs', actor.workspaceId);
    const runId = await runOf(actor, [agent, second]);
    await expectHandedBackThenCompleted(actor, runId, hits);
    const run = await readRun(actor, runId);
    const step = run.steps.find((s: Run) => s.status === 'Completed' && s.position === 0);
    // The step that completed used the tool's real result, not a failure the model was told of.
    expect(step.tool_calls).toHaveLength(1);
    expect(step.tool_calls[0].error).toBeUndefined();
    expect(step.tool_calls[0].output).toMatchObject({ status: 200 });
  });
});

describe('the database away during a policy’s assembly (its A/B exposure write)', () => {
  /** An agent whose policy is in an A/B test: assembling its context records the unit's exposure. */
  async function policyAgent(actor: Actor) {
    for (const text of ['Version one.', 'Version two.']) {
      const saved = await t.call(actor, 'PUT', '/api/policy/persona', {
        sections: [{ name: 'p', kind: 'persona', text }],
      });
      expect(saved.statusCode, saved.body).toBeLessThan(300);
    }
    const set = await t.call(actor, 'POST', '/api/policy/abtest/set', {
      policy_a: { policy_id: 'persona', version: 1 },
      policy_b: { policy_id: 'persona', version: 2 },
    });
    expect(set.statusCode, set.body).toBe(200);
    return buildAgent(t, actor, { model: null, policy: { id: 'persona' } });
  }

  it('a run is handed back, not failed, and completes once the database is back', async () => {
    const actor = await workspaceWithProvider('policy-run', true);
    const agents = [await policyAgent(actor), await buildAgent(t, actor, { model: null })];
    const hits = await outageHits();
    await databaseGoesAwayOn('policy_exposures', actor.workspaceId);
    const workflow = await buildWorkflow(t, actor, { goal: 'Do the thing', agents: agents.map((a) => a.id) });
    const started = await t.call(actor, 'POST', `/api/workflows/${workflow.id}/run`, {
      context: { conversation_id: 'conv-policy-run' },
    });
    expect(started.statusCode, started.body).toBe(202);
    await expectHandedBackThenCompleted(actor, started.json().id, hits);
  });

  it('chat answers 503 database_unavailable before streaming, and the model is not called', async () => {
    const actor = await workspaceWithProvider('policy-chat', true);
    const agent = await policyAgent(actor);
    await databaseGoesAwayOn('policy_exposures', actor.workspaceId);
    const stream = await openEventStream(`${base}/api/chat`, actor.headers, {
      message: 'hello',
      agent_id: agent.id,
    });
    expect(stream.status).toBe(503);
    expect(stream.problem).toMatchObject({ status: 503, code: 'database_unavailable' });
    expect(llm.modelRequests()).toHaveLength(0);
  });
});
