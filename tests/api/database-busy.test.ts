import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/** PGlite whatever the suite runs on: the gate exists for the embedded database only. */
async function pgliteApp(env: NodeJS.ProcessEnv): Promise<TestApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-platform-busy-'));
  return createTestApp({
    env,
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
}

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const createAgent = (app: TestApp, actor: Actor, name: string) =>
  app.call(actor, 'POST', '/api/agents', { name, model: { provider: 'openai', name: 'gpt-4o-mini' } });

/** Sends `count` creations at once; returns the names created and the refusals. */
async function burst(app: TestApp, actor: Actor, count: number) {
  const responses = await Promise.all(
    Array.from({ length: count }, (_, i) => createAgent(app, actor, `burst-${i}`).then((r) => ({ i, r }))),
  );
  const created = responses.filter(({ r }) => r.statusCode === 201).map(({ i }) => `burst-${i}`);
  const refused = responses.filter(({ r }) => r.statusCode !== 201).map(({ r }) => r);
  return { created, refused };
}

async function storedNames(app: TestApp, actor: Actor): Promise<string[]> {
  const names: string[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await app.call(actor, 'GET', `/api/agents?limit=100&offset=${offset}`);
    expect(page.statusCode).toBe(200);
    const items = page.json().items as { name: string }[];
    names.push(...items.map((item) => item.name));
    if (items.length < 100) return names.sort();
  }
}

function expectBusy(response: Awaited<ReturnType<typeof createAgent>>) {
  expect(response.statusCode).toBe(503);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(response.headers['retry-after']).toBe('1');
  expect(response.json()).toMatchObject({ status: 503, code: 'database_busy' });
}

/** Holds PGlite's connection for `ms` with a transaction, as a long write would. */
const holdDatabase = (app: TestApp, ms: number) =>
  app.database.db.transaction(async () => {
    await new Promise((resolve) => setTimeout(resolve, ms));
  });

describe('PGlite under more load than its single connection serves', () => {
  it('answers 503 database_busy with Retry-After past DB_QUEUE_TIMEOUT_MS, and loses nothing', async () => {
    t = await pgliteApp({ DB_QUEUE_TIMEOUT_MS: '100', DB_QUEUE_MAX: '10000' });
    const actor = await t.newWorkspace();
    expect((await createAgent(t, actor, 'before')).statusCode).toBe(201);
    const held = holdDatabase(t, 1500);
    const started = performance.now();
    const { created, refused } = await burst(t, actor, 20);
    // Nobody waited for the transaction: every request gave up after about 100 ms.
    expect(performance.now() - started).toBeLessThan(1400);
    expect(created).toEqual([]);
    expect(refused).toHaveLength(20);
    for (const response of refused) expectBusy(response);
    await held;
    // Once the connection is free the service answers normally, and no refused creation was stored.
    expect((await createAgent(t, actor, 'after')).statusCode).toBe(201);
    expect(await storedNames(t, actor)).toEqual(['after', 'before']);
  });

  it('refuses at once beyond DB_QUEUE_MAX waiting requests, serves the others once free', async () => {
    t = await pgliteApp({ DB_QUEUE_TIMEOUT_MS: '10000', DB_QUEUE_MAX: '3' });
    const actor = await t.newWorkspace();
    expect((await createAgent(t, actor, 'before')).statusCode).toBe(201);
    const held = holdDatabase(t, 300);
    const { created, refused } = await burst(t, actor, 12);
    await held;
    expect(created.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThanOrEqual(12 - 3);
    for (const response of refused) expectBusy(response);
    expect(await storedNames(t, actor)).toEqual(['before', ...created].sort());
  });

  it('health says the database is busy (Degraded), not Down, while its connection is held', async () => {
    t = await pgliteApp({ DB_QUEUE_TIMEOUT_MS: '100' });
    const actor = await t.newWorkspace();
    const held = holdDatabase(t, 1500);
    const answer = await t.call(actor, 'GET', '/api/system/health');
    await held;
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json().status).toBe('Degraded');
    const database = answer.json().components.find((c: { name: string }) => c.name === 'Database');
    expect(database).toMatchObject({ status: 'up' });
    expect(database.detail).toMatch(/busy/);
  });

  it('serves a burst within the default limits without refusing anyone', async () => {
    t = await pgliteApp({});
    const actor = await t.newWorkspace();
    const { created, refused } = await burst(t, actor, 40);
    expect(refused).toEqual([]);
    expect(await storedNames(t, actor)).toEqual(created.sort());
  });
});

describe('a busy embedded database inside a run step', () => {
  it('hands the run back instead of failing it; the run completes once the database is free', async () => {
    t = await pgliteApp({ DB_QUEUE_TIMEOUT_MS: '1000', VAULT_ALLOW_LOOPBACK: 'true' });
    const llm = await startOpenAiServer();
    try {
      const actor = await t.newWorkspace();
      const settings = await t.call(actor, 'PUT', '/api/settings/providers', {
        providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
        default_model: { provider: 'loop', name: 'model-a' },
      });
      expect(settings.statusCode, settings.body).toBe(200);
      const agents = [
        await buildAgent(t, actor, { model: null }),
        await buildAgent(t, actor, { model: null }),
      ];
      const workflow = await buildWorkflow(t, actor, { goal: 'Two steps', agents: agents.map((a) => a.id) });
      llm.fallbackReply = { type: 'text', text: 'ok' };
      // The first step's model answers while a long transaction holds the database: the step's
      // own write of its answer waits past DB_QUEUE_TIMEOUT_MS (1 s) and is refused
      // database_busy; the database is free again half a second later, in time for whatever
      // the engine writes next (a failed run, before the fix).
      llm.reply({ type: 'text', text: 'first' });
      const held = llm.waitForModelRequests(1).then(() => holdDatabase(t as TestApp, 1500));
      const started = await t.call(actor, 'POST', `/api/workflows/${workflow.id}/run`, {});
      expect(started.statusCode, started.body).toBe(202);
      const runId = started.json().id as string;
      await held;
      let run: Record<string, any> = {};
      await expect
        .poll(
          async () => {
            run = (await (t as TestApp).call(actor, 'GET', `/api/runs/${runId}`)).json();
            return run.status;
          },
          { timeout: 30_000, interval: 100 },
        )
        .toBeOneOf(['Completed', 'Failed', 'Cancelled']);
      expect(run.status, JSON.stringify(run)).toBe('Completed');
      expect(run.failure_reason).toBeNull();
      // The model was asked again for the first step: its refused answer was never recorded.
      expect(llm.modelRequests().length).toBeGreaterThanOrEqual(3);
      // Handed back and claimed again, rather than failed by the worker that met the busy database.
      expect(run.attempts).toBeGreaterThanOrEqual(2);
    } finally {
      await llm.close();
    }
  }, 60_000);
});
