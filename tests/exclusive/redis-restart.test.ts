/**
 * The machine's Redis restarted under a running service and a worker process
 * (`redis-cli shutdown nosave`, then started again exactly as `.ci/run` starts it).
 *
 * This file stops the machine-wide Redis, so nothing else may use Redis meanwhile. It is the
 * only file of the `exclusive` Vitest project, whose `sequence.groupOrder` is 1: Vitest runs
 * it after every file of the other projects (group 0) has finished, alone. A lock file or a
 * single-worker pool would not do: the other files run in other worker processes, and a
 * describe-level guard cannot see them. Redis is started again in `afterAll`, whatever
 * happened, so the rest of CI and other runs find it up.
 *
 * What a Redis restart without persistence (`--save ""`, no AOF) costs BullMQ: every key,
 * so every waiting, delayed and running job, the dedupe keys, and finished jobs' records.
 * What it does not cost: the work, because the database row is the truth. The queue sees
 * its marker key gone when it reconnects and calls its `onJobsLost` listeners, and the owner
 * (here the test, keeping its truth in a record file) re-enqueues what is not finished. A
 * job running during the restart finishes in its worker (it may then run a second time:
 * delivery is at least once, and handlers are idempotent).
 */
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EventHub } from '../../src/events/event-hub.ts';
import { createRedisEventHub } from '../../src/events/redis-event-hub.ts';
import { createBullmqQueue } from '../../src/jobs/bullmq-queue.ts';
import { type JobQueue, QueueUnavailableError } from '../../src/jobs/queue.ts';
import { createRedisConnection, type RedisConnection } from '../../src/lib/redis/redis-connection.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { killSpawned, startQueueWorker, until, workerRecords } from '../helpers/queue-workers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';
import { captureLog } from '../helpers/test-log.ts';
import { dropRedisPrefix, redisUrl, testRedisPrefix } from '../helpers/test-redis.ts';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

const target = redisUrl ? new URL(redisUrl) : undefined;
const port = target?.port || '6379';

function redisAnswers(): boolean {
  const ping = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', port, 'ping'], { encoding: 'utf8' });
  return ping.stdout.trim() === 'PONG';
}

/** Exactly as `.ci/run` starts it: no persistence, so a restart comes back empty. */
function startRedis(): void {
  spawnSync(
    'redis-server',
    ['--daemonize', 'yes', '--bind', '127.0.0.1', '--port', port, '--save', '', '--appendonly', 'no'],
    { encoding: 'utf8' },
  );
}

async function ensureRedisRunning(): Promise<void> {
  if (redisAnswers()) return;
  startRedis();
  await until(() => redisAnswers(), 'Redis to answer again', 30_000);
}

describe.runIf(redisUrl)('a Redis restart', () => {
  let t: TestApp | undefined;
  const records = workerRecords();
  const prefix = testRedisPrefix();
  const owner = captureLog();
  let redis: RedisConnection;
  let producer: JobQueue;
  let hub: EventHub;
  let llm: LlmServer;

  beforeAll(async () => {
    // This test restarts the Redis it is given; only the machine's own can be restarted from here.
    expect(['127.0.0.1', 'localhost'], 'REDIS_URL must be the machine’s Redis').toContain(target?.hostname);
    await ensureRedisRunning();
    redis = createRedisConnection({ url: redisUrl as string, log: owner.log });
    producer = createBullmqQueue({ redis, log: owner.log, prefix, lockMs: 2000, stopGraceMs: 500 });
    await redis.start();
    await producer.start();
    t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
    llm = await startOpenAiServer();
    hub = createRedisEventHub({ redis, prefix: t.config.queue.prefix, log: owner.log });
    await hub.start();
  });

  afterAll(async () => {
    killSpawned();
    // Whatever happened above, Redis is up again for the rest of CI.
    await ensureRedisRunning();
    await hub?.stop();
    await producer?.stop();
    await redis?.stop();
    await t?.close();
    await llm?.close();
    await dropRedisPrefix(prefix);
    records.remove();
  });

  it('leaves every process up, reports Redis down and Degraded meanwhile, and loses no recorded work', async () => {
    const app = t as TestApp;
    const worker = await startQueueWorker(
      { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, QUEUE_LOCK_MS: '2000', WORKER_CONCURRENCY: '4' },
      records,
    );
    // The owner's truth: the jobs it recorded. What is not done when Redis forgets the queue is enqueued again.
    const recorded = [1, 2, 3];
    producer.onJobsLost(() => {
      const done = records.doneCounts();
      for (const n of recorded.filter((n) => !done[n])) {
        producer.enqueue('test.record', { n, hold_ms: 0 }, { jobId: `job-${n}` }).catch(() => {});
      }
    });
    const runsStartedWhileDown: string[] = [];
    const wakeUps: number[] = [];
    app.services.eventHub.subscribe('restart:1', (id) => wakeUps.push(id));

    await producer.enqueue('test.record', { n: 1, hold_ms: 60_000 }, { jobId: 'job-1' });
    await producer.enqueue('test.record', { n: 2, hold_ms: 0 }, { jobId: 'job-2', delayMs: 30_000 });
    await producer.enqueue('test.record', { n: 3, hold_ms: 0 }, { jobId: 'job-3', delayMs: 30_000 });
    await until(() => records.started().includes(`1:${worker.pid}`), 'job 1 to start');

    // A workflow run in flight (its first step answers slowly) while Redis goes away.
    const alice = await app.newWorkspace('alice');
    const configured = await app.call(alice, 'PUT', '/api/settings/providers', {
      providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
      default_model: { provider: 'loop', name: 'm' },
    });
    expect(configured.statusCode, configured.body).toBe(200);
    llm.reply({ type: 'text', text: 'slow first step', firstByteDelayMs: 3000 });
    const runAgents = [
      await buildAgent(app, alice, { model: null }),
      await buildAgent(app, alice, { model: null }),
    ];
    const runWorkflow = await buildWorkflow(app, alice, {
      goal: 'Survive',
      agents: runAgents.map((a) => a.id),
    });
    const inFlight = (await app.call(alice, 'POST', `/api/workflows/${runWorkflow.id}/run`, {})).json().id;
    await llm.waitForModelRequests(1);

    const shutdown = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', port, 'shutdown', 'nosave'], {
      encoding: 'utf8',
    });
    expect(shutdown.status, shutdown.stderr).toBe(0);
    try {
      await until(() => !redisAnswers(), 'Redis to stop', 10_000);
      const down = await until(async () => {
        const response = await app.call(app.owner, 'GET', '/api/system/health');
        const report = response.json();
        const row = report.components.find((c: { name: string }) => c.name === 'Redis');
        return row.status === 'down' ? { statusCode: response.statusCode, report } : undefined;
      }, 'the health report to see Redis down');
      expect(down.statusCode).toBe(200);
      expect(down.report.status).toBe('Degraded');
      expect(down.report.components.find((c: { name: string }) => c.name === 'Database').status).toBe('up');

      // The API refuses new jobs at once instead of hanging; the owner's row stays and its sweep re-enqueues.
      const refusedAt = performance.now();
      await expect(app.services.queue.enqueue('test.record', { n: 99, hold_ms: 0 })).rejects.toBeInstanceOf(
        QueueUnavailableError,
      );
      expect(performance.now() - refusedAt).toBeLessThan(500);
      // A run started while Redis is away is recorded (202); the sweep hands it over later.
      const whileDown = await app.call(alice, 'POST', `/api/workflows/${runWorkflow.id}/run`, {});
      expect(whileDown.statusCode).toBe(202);
      runsStartedWhileDown.push(whileDown.json().id);
      await sleep(1000);
    } finally {
      startRedis();
    }
    await until(() => redisAnswers(), 'Redis to answer again', 30_000);

    const back = await until(async () => {
      const response = await app.call(app.owner, 'GET', '/api/system/health');
      return response.json().status === 'Operational' ? response : undefined;
    }, 'the health report to be Operational again');
    expect(back.statusCode).toBe(200);
    expect(back.json().components.find((c: { name: string }) => c.name === 'Redis').status).toBe('up');

    // Jobs 2 and 3 were only in Redis (delayed) when it went: re-enqueued by the owner, they run.
    await until(() => {
      const done = records.doneCounts();
      return recorded.every((n) => (done[n] ?? 0) >= 1);
    }, 'every recorded job to be done');
    const done = records.doneCounts();
    expect(done[2]).toBe(1);
    expect(done[3]).toBe(1);
    // Job 1 was running when Redis went: re-enqueued as unfinished, it ran again (at least once),
    // while its first delivery still runs in the worker.
    expect(records.started().filter((entry) => entry.startsWith('1:'))).toHaveLength(2);
    expect(owner.lines.some((l) => String(l.msg).startsWith('Redis came back without the queue'))).toBe(true);

    // Both runs complete: the one in flight and the one recorded while Redis was away.
    for (const runId of [inFlight, ...runsStartedWhileDown]) {
      const run = await until(async () => {
        const body = (await app.call(alice, 'GET', `/api/runs/${runId}`)).json();
        return ['Completed', 'Failed', 'Cancelled'].includes(body.status) ? body : undefined;
      }, `run ${runId} to finish`);
      expect(run.status).toBe('Completed');
      expect(run.steps.filter((s: { status: string }) => s.status === 'Completed')).toHaveLength(2);
    }

    // Nothing died: the worker process still runs and takes new jobs; the API enqueues again.
    expect(worker.child.exitCode).toBeNull();
    await producer.enqueue('test.record', { n: 4, hold_ms: 0 });
    await until(() => records.doneCounts()[4] === 1, 'a job after the restart');
    await app.services.queue.enqueue('test.unhandled', {});

    // The app's hub subscribed again: it woke its listener (id 0) and hears publishes again.
    await until(() => wakeUps.includes(0), 'the hub to wake its listeners after the reconnect');
    hub.publish('restart:1', 42);
    await until(() => wakeUps.includes(42), 'a publish after the restart');
    expect(app.logs.some((l) => l.msg === 'Redis connection lost; reconnecting')).toBe(true);
    expect(app.logs.some((l) => l.msg === 'Redis connection is back')).toBe(true);
  });
});
