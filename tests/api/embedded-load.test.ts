import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * The embedded default is what a new user and a small team run: with its default limits
 * (no DB_QUEUE_* set), 50 clients each keeping a two-step run in flight against a model that
 * answers at once, while others list agents and runs, get no 503 and no run fails.
 */

let t: TestApp;
let llm: LlmServer;
let actor: Actor;

beforeAll(async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-platform-embedded-load-'));
  // PGlite with the service's own defaults, whatever the suite runs on.
  t = await createTestApp({
    env: { VAULT_ALLOW_LOOPBACK: 'true' },
    reuse: {
      env: {
        NODE_ENV: 'test',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        POSTGRES_HOST: '',
        POSTGRES_DB: '',
        POSTGRES_USER: '',
        POSTGRES_PASSWORD: '',
      },
      dataDir,
      drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }),
    },
  });
  llm = await startOpenAiServer();
  llm.fallbackReply = { type: 'text', text: 'done', usage: { input_tokens: 5, output_tokens: 1 } };
  actor = await t.newWorkspace('embedded-load');
  const response = await t.call(actor, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
    default_model: { provider: 'loop', name: 'model-a' },
  });
  expect(response.statusCode, response.body).toBe(200);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await llm?.close();
});

const CLIENTS = 50;
const RUNS_PER_CLIENT = 3;
const READERS = 10;

describe('the embedded default under 50 concurrent runs', () => {
  it('answers every request and completes every run', { timeout: 240_000 }, async () => {
    const agents = [await buildAgent(t, actor, { model: null }), await buildAgent(t, actor, { model: null })];
    const workflow = await buildWorkflow(t, actor, { goal: 'Two steps', agents: agents.map((a) => a.id) });
    const refused: string[] = [];
    const runIds: string[] = [];
    const note = (what: string, response: { statusCode: number; body: string }) => {
      if (response.statusCode >= 300) refused.push(`${what} ${response.statusCode} ${response.body}`);
    };

    /** One client: starts a run, follows it to its end, then starts the next. */
    async function client(): Promise<void> {
      for (let i = 0; i < RUNS_PER_CLIENT; i++) {
        const started = await t.call(actor, 'POST', `/api/workflows/${workflow.id}/run`, {});
        note('POST run', started);
        if (started.statusCode !== 202) continue;
        const runId = started.json().id as string;
        runIds.push(runId);
        for (;;) {
          const read = await t.call(actor, 'GET', `/api/runs/${runId}`);
          note('GET run', read);
          if (['Completed', 'Failed', 'Cancelled'].includes(read.json().status)) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    }

    let clientsDone = false;
    /** Ordinary work beside the runs: the lists a console shows. */
    async function reader(): Promise<void> {
      while (!clientsDone) {
        note('GET agents', await t.call(actor, 'GET', '/api/agents?limit=20'));
        note('GET runs', await t.call(actor, 'GET', '/api/runs?limit=20'));
      }
    }

    const readers = Array.from({ length: READERS }, reader);
    await Promise.all(Array.from({ length: CLIENTS }, client));
    clientsDone = true;
    await Promise.all(readers);

    expect({ refused: refused.length, first: refused.slice(0, 3) }).toEqual({ refused: 0, first: [] });
    expect(runIds).toHaveLength(CLIENTS * RUNS_PER_CLIENT);
    const runs = await Promise.all(
      runIds.map(async (id) => (await t.call(actor, 'GET', `/api/runs/${id}`)).json()),
    );
    const failed = runs.filter((run) => run.status !== 'Completed');
    expect(failed.map((run) => `${run.status} ${run.failure_reason}: ${run.error}`)).toEqual([]);
  });
});
