import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/client.ts';
import { DirectoryLockedError } from '../../src/db/lock.ts';
import { buildAgent } from '../helpers/factories.ts';
import {
  createTestApp,
  createTestDatabaseEnv,
  onPostgres,
  type TestDatabaseEnv,
} from '../helpers/test-app.ts';

const root = path.resolve(import.meta.dirname, '../..');

// These tests start whole processes and databases; on a loaded 2-core machine that takes time.
vi.setConfig({ testTimeout: 180_000 });
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Runs a TypeScript entry point as its own process, the way npm scripts do. */
function run(script: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

/** A port nothing listens on: dev-token asks PORT for a running service when none holds DATA_DIR. */
async function quietPort(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return String(address.port);
}

/**
 * CPU time (user + system, ms) of this process's children that have ended: what a command
 * cost, whatever else the machine runs at the time (Linux; undefined elsewhere).
 */
function childrenCpuMs(): number | undefined {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100; // clock ticks: USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

/** Polls `probe` (a read of the child's output) until it answers something, and answers that. */
async function until<T>(probe: () => T | undefined, what: string, ms = 90_000): Promise<T> {
  await expect
    .poll(probe, { timeout: ms, interval: 100, message: `timed out waiting for ${what}` })
    .toBeDefined();
  return probe() as T;
}

describe('persistence', () => {
  it('keeps data across a restart', async () => {
    const env = await createTestDatabaseEnv();
    const first = await createTestApp({ reuse: env });
    const agent = await buildAgent(first, first.owner, { name: 'Survivor' });
    await first.close({ keep: true });
    const second = await createTestApp({ reuse: env });
    try {
      const response = await second.call(second.owner, 'GET', `/api/agents/${agent.id}`);
      expect(response.statusCode).toBe(200);
      expect(response.json().name).toBe('Survivor');
    } finally {
      await second.close();
    }
  });

  it.skipIf(onPostgres)(
    'refuses a second opener of the same PGlite directory with a clear message',
    async () => {
      const env = await createTestDatabaseEnv();
      cleanups.push(env.drop);
      const config = loadConfig(env.env);
      const held = await openDatabase(config.database);
      try {
        const error = await openDatabase(config.database).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(DirectoryLockedError);
        expect((error as Error).message).toContain(`in use by process ${process.pid}`);
      } finally {
        await held.close();
      }
      const reopened = await openDatabase(config.database);
      await reopened.close();
    },
  );
});

describe('the service process and npm run dev-token', () => {
  let env: TestDatabaseEnv;
  let server: ReturnType<typeof run> | undefined;
  afterAll(() => {
    server?.child.kill('SIGKILL');
  });

  let port: string;
  const devToken = async (...args: string[]) => {
    const cli = run('src/cli/dev-token.ts', args, { ...env.env, PORT: port });
    const code = await cli.exited;
    expect(code, cli.output().stderr).toBe(0);
    const lines = cli.output().stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0] as string) as { token: string; workspace_id: string; user_id: string };
  };

  /**
   * A token for a directory set up before costs no start of the service: it reads the key and
   * the workspace id. Booting the service, as dev-token did, costs seconds of CPU; the bound is
   * generous against a busy machine, and CPU time is not wall time waiting for a core.
   */
  const expectQuickToken = async () => {
    const before = childrenCpuMs();
    const started = performance.now();
    const answer = await devToken();
    const after = childrenCpuMs();
    expect(performance.now() - started).toBeLessThan(20_000);
    if (before !== undefined && after !== undefined) expect(after - before).toBeLessThan(1500);
    expect(Object.keys(answer).sort()).toEqual(['token', 'user_id', 'workspace_id']);
    expect(answer.token.split('.')).toHaveLength(3);
    return answer;
  };

  it('works while the service is stopped, runs, and shuts down gracefully', async () => {
    env = await createTestDatabaseEnv();
    cleanups.push(env.drop);
    port = await quietPort();

    const stopped = await devToken();
    expect(stopped.user_id).toBe('dev-user');
    expect((await expectQuickToken()).workspace_id).toBe(stopped.workspace_id);
    const bob = await devToken('--user', 'bob', '--new-workspace');
    expect(bob.workspace_id).not.toBe(stopped.workspace_id);

    server = run('src/main.ts', [], { ...env.env, PORT: '0', HOST: '127.0.0.1' });
    const url = await until(() => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server?.output().stdout ?? '');
      return match?.[1];
    }, 'the service to listen');

    if (!onPostgres) {
      const second = run('src/main.ts', [], { ...env.env, PORT: '0' });
      expect(await second.exited).toBe(1);
      expect(second.output().stderr).toContain('is in use by process');
    }

    const running = await expectQuickToken();
    expect(running.workspace_id).toBe(stopped.workspace_id);
    const agents = await fetch(`${url}/api/agents`, {
      headers: { authorization: `Bearer ${running.token}`, 'x-workspace-id': running.workspace_id },
    });
    expect(agents.status).toBe(200);
    expect(await agents.json()).toMatchObject({ items: [], total: 0 });

    const carol = await devToken('--user', 'carol', '--new-workspace');
    const current = await fetch(`${url}/api/workspaces/current`, {
      headers: { authorization: `Bearer ${carol.token}`, 'x-workspace-id': carol.workspace_id },
    });
    expect(await current.json()).toMatchObject({ id: carol.workspace_id, role: 'owner', user_id: 'carol' });
    const bobsWorkspace = await fetch(`${url}/api/workspaces/current`, {
      headers: { authorization: `Bearer ${bob.token}`, 'x-workspace-id': bob.workspace_id },
    });
    expect(bobsWorkspace.status).toBe(200);
    const intruder = await fetch(`${url}/api/agents`, {
      headers: { authorization: `Bearer ${carol.token}`, 'x-workspace-id': bob.workspace_id },
    });
    expect(intruder.status).toBe(403);

    // Another DATA_DIR while this service runs on PORT: refused, saying so, and nothing set up there.
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'dev-token-elsewhere-'));
    cleanups.push(async () => fs.rmSync(elsewhere, { recursive: true, force: true }));
    const servicePort = new URL(url).port;
    const refused = run('src/cli/dev-token.ts', [], { ...env.env, DATA_DIR: elsewhere, PORT: servicePort });
    expect(await refused.exited).toBe(1);
    expect(refused.output().stdout).toBe('');
    expect(refused.output().stderr).toContain(`the service at http://127.0.0.1:${servicePort}`);
    expect(refused.output().stderr).toContain(`was started with another DATA_DIR than ${elsewhere}`);
    expect(fs.readdirSync(elsewhere)).toEqual([]);

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output().stdout).toContain('"msg":"stopped"');
    expect(fs.existsSync(path.join(env.dataDir, 'pglite.lock'))).toBe(false);
    server = undefined;
  });
});

describe('npm run dev-token -- --help', () => {
  it('prints the usage and exits 0 without reading the configuration', async () => {
    // Production mode would make any other call fail: --help answers before the config is read.
    const help = run('src/cli/dev-token.ts', ['--help'], { NODE_ENV: 'production' });
    expect(await help.exited).toBe(0);
    expect(help.output().stdout).toContain('Usage: npm run --silent dev-token');
    for (const option of ['--user', '--new-workspace', '--name', '--ttl', 'DATA_DIR', 'PORT']) {
      expect(help.output().stdout).toContain(option);
    }
    const short = run('src/cli/dev-token.ts', ['-h'], {});
    expect(await short.exited).toBe(0);
    expect(short.output().stdout).toContain('Usage:');
  });
});

describe('production mode', () => {
  it('refuses to start and names every missing variable', async () => {
    const child = run('src/main.ts', [], { NODE_ENV: 'production' });
    expect(await child.exited).toBe(1);
    const { stderr } = child.output();
    for (const name of [
      'POSTGRES_DB',
      'POSTGRES_USER',
      'POSTGRES_PASSWORD',
      'POSTGRES_HOST',
      'OIDC_ISSUER',
      'OIDC_AUDIENCE',
      'ENCRYPTION_KEY',
    ]) {
      expect(stderr).toContain(name);
    }
  });
});
