/**
 * Runs executed by worker processes on the machine's Redis and PostgreSQL (CI's second
 * pass): an API process that only enqueues (RUN_MODE=api), real `src/worker.ts` processes,
 * and a loopback model. Every run executes exactly once across two workers; a worker killed
 * with SIGKILL mid-run loses nothing: another one takes the run over after its lease and
 * continues after the last completed step.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { killSpawned, type ScriptProcess, spawnScript, until } from '../helpers/queue-workers.ts';
import {
  createTestApp,
  createTestDatabaseEnv,
  onPostgres,
  type TestApp,
  type TestDatabaseEnv,
} from '../helpers/test-app.ts';
import { redisUrl } from '../helpers/test-redis.ts';

vi.setConfig({ testTimeout: 120_000 });

const LEASE_MS = '2000';

describe.runIf(onPostgres && redisUrl)('runs on worker processes', () => {
  let dbEnv: TestDatabaseEnv;
  let t: TestApp;
  let llm: LlmServer;
  let alice: Actor;
  const workers: ScriptProcess[] = [];

  const startWorker = async (leaseMs = LEASE_MS) => {
    const worker = spawnScript('src/worker.ts', {
      ...dbEnv.env,
      RUN_MODE: 'worker',
      RUN_LEASE_MS: leaseMs,
      QUEUE_LOCK_MS: '2000',
      VAULT_ALLOW_LOOPBACK: 'true',
      LOG_LEVEL: 'info',
    });
    workers.push(worker);
    await until(() => worker.output().includes('worker started'), 'the worker to start');
    return worker;
  };

  beforeAll(async () => {
    dbEnv = await createTestDatabaseEnv();
    t = await createTestApp({ reuse: dbEnv, env: { RUN_MODE: 'api', VAULT_ALLOW_LOOPBACK: 'true' } });
    llm = await startOpenAiServer();
    alice = await t.newWorkspace('alice');
    const settings = await t.call(alice, 'PUT', '/api/settings/providers', {
      providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
      default_model: { provider: 'loop', name: 'm' },
    });
    expect(settings.statusCode, settings.body).toBe(200);
  });
  afterAll(async () => {
    killSpawned();
    await t?.close();
    await llm?.close();
  });

  async function runAll(runIds: string[], timeoutMs = 60_000) {
    return until(
      async () => {
        const runs = await Promise.all(
          runIds.map(async (id) => (await t.call(alice, 'GET', `/api/runs/${id}`)).json()),
        );
        return runs.every((run) => ['Completed', 'Failed', 'Cancelled'].includes(run.status)) && runs;
      },
      'every run to finish',
      timeoutMs,
    );
  }

  it('two workers share the queue and every run executes exactly once', async () => {
    await Promise.all([startWorker(), startWorker()]);
    llm.reset();
    llm.fallbackReply = { type: 'text', text: 'done', firstByteDelayMs: 20 };
    const agent = await buildAgent(t, alice, { model: null });
    const workflow = await buildWorkflow(t, alice, { goal: 'Item {{n}}', agents: [agent.id] });
    const runIds: string[] = [];
    for (let n = 0; n < 40; n++) {
      const response = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {
        inputs: { n: String(n) },
      });
      expect(response.statusCode).toBe(202);
      runIds.push(response.json().id);
    }
    const runs = await runAll(runIds);
    expect(runs.map((run) => run.status)).toEqual(runIds.map(() => 'Completed'));
    for (const run of runs) {
      expect(run.attempts).toBe(1);
      expect(run.steps).toHaveLength(1);
    }
    // One model call per run: no run was executed twice.
    expect(llm.modelRequests()).toHaveLength(40);
    const prompts = llm.modelRequests().map((r) => JSON.stringify(r.body.messages));
    expect(new Set(prompts).size).toBe(40);
  });

  it('a worker killed mid-run loses nothing: another takes the run over after its lease', async () => {
    for (const worker of workers.splice(0)) worker.child.kill('SIGKILL');
    const first = await startWorker();
    llm.reset();
    llm.reply(
      { type: 'text', text: 'step one' },
      { type: 'text', text: 'never answered', firstByteDelayMs: 60_000 },
    );
    llm.fallbackReply = { type: 'text', text: 'after the takeover' };
    const agents = [
      await buildAgent(t, alice, { name: 'K0', model: null }),
      await buildAgent(t, alice, { name: 'K1', model: null }),
      await buildAgent(t, alice, { name: 'K2', model: null }),
    ];
    const workflow = await buildWorkflow(t, alice, { goal: 'Three steps', agents: agents.map((a) => a.id) });
    const started = await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {});
    const runId = started.json().id;
    await llm.waitForModelRequests(2);
    // Killed once the second step's start is recorded (a step's start is written when its
    // model has not answered within the engine's step start delay).
    await until(async () => {
      const steps = (await t.call(alice, 'GET', `/api/runs/${runId}`)).json().steps ?? [];
      return steps.some(
        (s: { position: number; status: string }) => s.position === 1 && s.status === 'Running',
      );
    }, 'the second step to be recorded Running');
    first.child.kill('SIGKILL');
    await first.exited;
    await startWorker();
    const [run] = await runAll([runId]);
    expect(run).toMatchObject({ status: 'Completed', attempts: 2, output: 'after the takeover' });
    expect(run.agents_used).toEqual(['K0', 'K1', 'K2']);
    expect(run.steps.filter((s: { position: number }) => s.position === 0)).toHaveLength(1);
    expect(
      run.steps.find((s: { position: number; status: string }) => s.position === 1 && s.status === 'Failed')
        ?.error,
    ).toMatch(/interrupted/);
  });

  it('a cancel through the API process reaches the worker process at once, not at its next lease renewal', async () => {
    for (const worker of workers.splice(0)) worker.child.kill('SIGKILL');
    // A lease of a minute: the worker's own control check (a third of it) comes after 20 s.
    await startWorker('60000');
    llm.reset();
    llm.reply({ type: 'text', text: 'never answered', firstByteDelayMs: 60_000 });
    const agent = await buildAgent(t, alice, { name: 'Cancelled', model: null });
    const workflow = await buildWorkflow(t, alice, { goal: 'Wait', agents: [agent.id] });
    const runId = (await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {})).json().id;
    await llm.waitForModelRequests(1);
    const asked = Date.now();
    expect((await t.call(alice, 'POST', `/api/runs/${runId}/cancel`)).statusCode).toBe(200);
    const [run] = await runAll([runId], 10_000);
    expect(run).toMatchObject({ status: 'Cancelled', failure_reason: 'cancelled' });
    expect(Date.now() - asked).toBeLessThan(5_000);
    await llm.modelRequests()[0]?.closed;
    expect(llm.modelRequests()[0]?.closedEarly).toBe(true);
  });
});
