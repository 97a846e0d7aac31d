/**
 * The database goes away under a running service: backends terminated while transactions are
 * in flight, connections refused, a server that accepts and never answers, a database that
 * stops accepting connections. The service must stay up, answer 503 `database_unavailable`
 * (never 500), never report a rolled-back write as created, and recover by itself.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/client.ts';
import { readDevIdentity } from '../../src/modules/identity/dev-identity.ts';
import { loadDevSigningKey, mintDevToken } from '../../src/modules/identity/dev-issuer.ts';
import { createServices } from '../../src/services.ts';
import { type Actor, callApi } from '../helpers/api-client.ts';
import {
  createTestApp,
  createTestDatabaseEnv,
  onPostgres,
  type TestDatabaseEnv,
} from '../helpers/test-app.ts';

const repositoryRoot = path.resolve(import.meta.dirname, '../..');

/** The service as a real process: an unhandled 'error' event would end it, and we would see that. */
interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** Set once the process has exited; a healthy service never sets it during the test. */
  exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  output(): string;
  stop(): Promise<void>;
}

async function startService(env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: repositoryRoot,
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exitedPromise = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
  });
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  // Fastify logs the address it listens on; the port was chosen by the system (PORT=0).
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the service did not start:\n${output}`)), 60_000);
    const poll = setInterval(() => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match?.[1]) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve(match[1]);
      } else if (exited) {
        clearInterval(poll);
        clearTimeout(timer);
        reject(new Error(`the service exited while starting:\n${output}`));
      }
    }, 50);
  });
  return {
    url,
    child,
    exit: () => exited,
    output: () => output,
    stop: async () => {
      if (!exited) child.kill('SIGTERM');
      await exitedPromise;
    },
  };
}

/** A status, headers and body; status 0 when the connection itself failed (a dead process). */
interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : {} };
  } catch (error) {
    return { status: 0, headers: new Headers(), body: { error: String(error) } };
  }
}

function expectUnavailable(answer: Answer): void {
  expect(answer.status).toBe(503);
  expect(answer.headers.get('content-type')).toContain('application/problem+json');
  expect(answer.headers.get('retry-after')).toBe('5');
  expect(answer.body).toMatchObject({ status: 503, code: 'database_unavailable' });
}

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// PGlite is embedded: it has no backends to terminate and no server to take away, so the
// terminate and ALLOW_CONNECTIONS parts run on PostgreSQL only (CI's second pass). The
// unreachable-server tests below run on both passes: they need no database at all.
describe.skipIf(!onPostgres)('backends terminated under load (PostgreSQL)', () => {
  const ROUNDS = 20;
  const CONCURRENCY = 10;
  let dbEnv: TestDatabaseEnv;
  let service: ServiceProcess;
  /** Connected to the service's database: terminates its backends, inspects its rows. */
  let admin: pg.Client;
  /** Connected to the server's maintenance database: PostgreSQL refuses ALTER DATABASE on the current one. */
  let server: pg.Client;
  let headers: Record<string, string>;
  let workspaceId: string;

  beforeAll(async () => {
    dbEnv = await createTestDatabaseEnv();
    service = await startService(dbEnv.env);
    const config = loadConfig(dbEnv.env);
    const identity = readDevIdentity(dbEnv.dataDir);
    if (!identity) throw new Error('the service did not write its development identity');
    workspaceId = identity.workspace_id;
    const token = await mintDevToken(await loadDevSigningKey(dbEnv.dataDir), {
      userId: identity.user_id,
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      ttlSeconds: 3600,
    });
    headers = {
      authorization: `Bearer ${token}`,
      'x-workspace-id': workspaceId,
      'content-type': 'application/json',
    };
    const connection = {
      host: dbEnv.env.POSTGRES_HOST,
      port: Number(dbEnv.env.POSTGRES_PORT),
      user: dbEnv.env.POSTGRES_USER,
      password: dbEnv.env.POSTGRES_PASSWORD,
    };
    admin = new pg.Client({ ...connection, database: dbEnv.env.POSTGRES_DB });
    await admin.connect();
    server = new pg.Client({ ...connection, database: process.env.POSTGRES_DB });
    await server.connect();
  });

  afterAll(async () => {
    await service?.stop();
    await admin?.end();
    if (server) {
      await server.query(`alter database "${dbEnv.env.POSTGRES_DB}" allow_connections true`);
      await server.end();
    }
    await dbEnv?.drop();
  });

  /** Terminates every backend of the service's database but this admin connection. */
  async function terminateBackends(): Promise<number> {
    const result = await admin.query<{ terminated: string }>(
      `select count(*) filter (where pg_terminate_backend(pid)) as terminated
         from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
    );
    return Number(result.rows[0]?.terminated ?? 0);
  }

  it('stays up, answers 201 or 503 (never 500), keeps every committed row and no phantom', async () => {
    const agentIds: string[] = [];
    for (const name of ['Writer', 'Reviewer']) {
      const created = await call(`${service.url}/api/agents`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name, model: { provider: 'openai', name: 'gpt-4o-mini' } }),
      });
      expect(created.status).toBe(201);
      agentIds.push(created.body.id as string);
    }

    const created = new Map<string, string>();
    const statuses = new Map<number, number>();
    let terminated = 0;
    for (let round = 0; round < ROUNDS; round += 1) {
      const requests = Array.from({ length: CONCURRENCY }, (_, index) =>
        call(`${service.url}/api/workflows`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ name: `outage ${round}.${index}`, agents: agentIds }),
        }),
      );
      // A few milliseconds: some requests are checking out, some in BEGIN, some holding locks.
      await new Promise((resolve) => setTimeout(resolve, 2 + (round % 8)));
      terminated += await terminateBackends();
      for (const answer of await Promise.all(requests)) {
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status === 201) {
          expect(answer.body.agents).toEqual(agentIds);
          created.set(answer.body.id as string, answer.body.name as string);
        } else {
          expect(answer.status, `round ${round}: ${JSON.stringify(answer.body)}\n${service.output()}`).toBe(
            503,
          );
          expectUnavailable(answer);
        }
      }
      expect(service.exit(), service.output()).toBeUndefined();
    }
    // The scenario really happened: backends died under requests that then failed.
    expect(terminated).toBeGreaterThan(0);
    expect(statuses.get(503) ?? 0).toBeGreaterThan(0);

    // The pool recovers without a restart: every following request succeeds.
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (let attempt = 0; attempt < 12; attempt += 1) {
      const list = await call(`${service.url}/api/workflows?limit=1`, { headers });
      expect(list.status, JSON.stringify(list.body)).toBe(200);
    }

    // Every 201 was committed, and nothing was committed that was not answered 201.
    const stored = await admin.query<{ id: string; name: string; agents: string[] }>(
      'select id, name, agents from workflows where workspace_id = $1',
      [workspaceId],
    );
    expect(new Map(stored.rows.map((row) => [row.id, row.name]))).toEqual(created);
    for (const row of stored.rows) expect(row.agents).toEqual(agentIds);
    expect(service.output()).not.toContain('internal_error');
    expect(service.output()).not.toMatch(/"level":50/);
  });

  it('loses no run when backends die under runs being started and executed', async () => {
    const agent = await call(`${service.url}/api/agents`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Runner' }),
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    const workflow = await call(`${service.url}/api/workflows`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'runs under outage', goal: 'Say hello', agents: [agent.body.id] }),
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const workflowId = workflow.body.id as string;

    const accepted = new Set<string>();
    let terminated = 0;
    for (let round = 0; round < 12; round += 1) {
      const requests = Array.from({ length: 8 }, () =>
        call(`${service.url}/api/workflows/${workflowId}/run`, { method: 'POST', headers, body: '{}' }),
      );
      // Some requests are inserting, and earlier runs are being claimed, started and ended.
      await new Promise((resolve) => setTimeout(resolve, 2 + (round % 8)));
      terminated += await terminateBackends();
      for (const answer of await Promise.all(requests)) {
        if (answer.status === 202) accepted.add(answer.body.id as string);
        else expectUnavailable(answer);
      }
      expect(service.exit(), service.output()).toBeUndefined();
    }
    expect(terminated).toBeGreaterThan(0);
    expect(accepted.size).toBeGreaterThan(0);

    // Every run the database holds ends (a lost worker's lease expires, the sweep hands the
    // run over again), and ends Completed: the outage was the engine's, never a step's.
    type Row = { id: string; status: string; completed_steps: number; completions: number };
    let rows: Row[] = [];
    const deadline = Date.now() + 90_000;
    for (;;) {
      const result = await admin.query<Row>(
        `select r.id, r.status,
            (select count(*) from run_steps s where s.run_id = r.id and s.status = 'Completed')::int as completed_steps,
            (select count(*) from run_events e where e.run_id = r.id and e.type = 'run.completed')::int as completions
           from runs r where r.workspace_id = $1 and r.workflow_id = $2`,
        [workspaceId, workflowId],
      );
      rows = result.rows;
      if (rows.every((row) => row.status === 'Completed' || row.status === 'Failed')) break;
      if (Date.now() > deadline) {
        throw new Error(
          `runs did not end: ${JSON.stringify(rows.filter((row) => row.status !== 'Completed'))}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const stored = new Set(rows.map((row) => row.id));
    for (const id of accepted) expect(stored.has(id), `run ${id} was answered 202`).toBe(true);
    for (const row of rows) {
      expect(row, JSON.stringify(row)).toMatchObject({
        status: 'Completed',
        completed_steps: 1,
        completions: 1,
      });
    }
    expect(service.output()).not.toContain('internal_error');
  }, 150_000);

  it('answers 503 while the database refuses connections, and recovers when it accepts them again', async () => {
    const database = dbEnv.env.POSTGRES_DB as string;
    await server.query(`alter database "${database}" allow_connections false`);
    await terminateBackends();

    let started = performance.now();
    const health = await call(`${service.url}/api/system/health`, { headers });
    expect(health.status).toBe(503);
    expect(health.body.status).toBe('Down');
    expect(health.body.components).toContainEqual(
      expect.objectContaining({ name: 'Database', status: 'down' }),
    );
    expect(performance.now() - started).toBeLessThan(4000);

    started = performance.now();
    expectUnavailable(await call(`${service.url}/api/workflows`, { headers }));
    expectUnavailable(
      await call(`${service.url}/api/workflows`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'while down' }),
      }),
    );
    expect(performance.now() - started).toBeLessThan(4000);

    await server.query(`alter database "${database}" allow_connections true`);
    const recovered = await call(`${service.url}/api/system/health`, { headers });
    expect(recovered.status).toBe(200);
    expect(recovered.body.status).toBe('Operational');
    expect((await call(`${service.url}/api/workflows`, { headers })).status).toBe(200);
    expect(service.exit(), service.output()).toBeUndefined();
  });
});

describe('a database server that cannot be reached', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-platform-outage-'));
  let silent: net.Server;
  const held: net.Socket[] = [];

  beforeAll(async () => {
    // Accepts TCP connections and never says a word: a blackholed or hung server.
    silent = net.createServer((socket) => {
      held.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** The real service over a PostgreSQL address where `port` leads nowhere useful. */
  async function serviceAt(port: number) {
    const config = loadConfig({
      NODE_ENV: 'test',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      POSTGRES_HOST: '127.0.0.1',
      POSTGRES_PORT: String(port),
      POSTGRES_USER: 'nobody',
      POSTGRES_PASSWORD: 'never-used',
      POSTGRES_DB: 'absent',
    });
    const database = await openDatabase(config.database);
    const services = await createServices(config, database);
    const app = await buildApp(services, { logStream: new PassThrough() });
    if (!services.devKey) throw new Error('development auth expected');
    const token = await mintDevToken(services.devKey, {
      userId: 'dev-user',
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      ttlSeconds: 600,
    });
    const workspaceId = randomUUID();
    const actor: Actor = {
      userId: 'dev-user',
      workspaceId,
      token,
      headers: { authorization: `Bearer ${token}`, 'x-workspace-id': workspaceId },
    };
    return {
      app,
      actor,
      close: async () => {
        await app.close();
        await database.close();
      },
    };
  }

  it.each([
    ['refuses connections', async () => closedPort()],
    ['accepts and never answers', async () => (silent.address() as net.AddressInfo).port],
  ])(
    'when it %s: health is 503 Down, routes are 503 database_unavailable within seconds',
    async (_, port) => {
      const service = await serviceAt(await port());
      try {
        let started = performance.now();
        const health = await callApi(service.app, service.actor, 'GET', '/api/system/health');
        expect(health.statusCode).toBe(503);
        expect(health.json().status).toBe('Down');
        expect(health.json().components[1]).toMatchObject({ name: 'Database', status: 'down' });
        // The 3 s checkout limit plus the answer; a loaded CI machine adds a second or two.
        expect(performance.now() - started).toBeLessThan(6000);

        started = performance.now();
        const list = await callApi(service.app, service.actor, 'GET', '/api/workflows');
        expect(list.statusCode).toBe(503);
        expect(list.headers['content-type']).toContain('application/problem+json');
        expect(list.headers['retry-after']).toBe('5');
        expect(list.json()).toMatchObject({ code: 'database_unavailable', status: 503 });
        expect(performance.now() - started).toBeLessThan(6000);

        // A bad token is still 401: an outage does not let anonymous callers see the health report.
        const anonymous = await callApi(service.app, undefined, 'GET', '/api/system/health');
        expect(anonymous.statusCode).toBe(401);
      } finally {
        await service.close();
      }
    },
  );
});

describe('logging a failed statement', () => {
  it('logs the statement and the SQLSTATE of a 500, never the parameter values', async () => {
    const t = await createTestApp();
    try {
      const marker = `sentinel-${randomUUID()}`;
      // A rule the service does not know about makes its own insert fail unexpectedly.
      await t.rows(
        sql.raw(`alter table agents add constraint no_sentinel check (system_prompt not like '%sentinel-%')`),
      );
      const response = await t.call(t.owner, 'POST', '/api/agents', {
        name: `Agent ${marker}`,
        system_prompt: `You are secret ${marker}`,
        model: { provider: 'openai', name: 'gpt-4o-mini' },
      });
      expect(response.statusCode).toBe(500);
      expect(response.json().code).toBe('internal_error');
      expect(response.body).not.toContain(marker);

      const failure = t.logs.find((line) => line.msg === 'request failed');
      expect(failure?.err).toMatchObject({
        code: '23514',
        constraint: 'no_sentinel',
        query: expect.stringMatching(/^insert into "agents"/),
      });
      expect(t.rawLogs()).not.toContain(marker);
    } finally {
      await t.close();
    }
  });
});
