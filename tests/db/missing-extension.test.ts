import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/client.ts';
import { MissingExtensionError, migrateDatabase } from '../../src/db/migrate.ts';
import { type PgliteWireServer, startPgliteWireServer } from '../helpers/pglite-wire.ts';

/**
 * PostgreSQL without pgvector: the service refuses before migrating, with one line naming the
 * package, instead of dying halfway through migration 0006 with a stack trace. The server is a
 * real one speaking the PostgreSQL protocol (PGlite behind a loopback port) on which `vector`
 * is not available, as on a server where pgvector was never installed.
 */
let withoutVector: PgliteWireServer;
let bare: PgliteWireServer;
let dataDir: string;

beforeAll(async () => {
  withoutVector = await startPgliteWireServer({ pg_trgm, btree_gin });
  bare = await startPgliteWireServer();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'missing-extension-'));
});
afterAll(async () => {
  await withoutVector?.close();
  await bare?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const envOf = (server: PgliteWireServer): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  NODE_ENV: 'development',
  DATA_DIR: dataDir,
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  POSTGRES_HOST: '127.0.0.1',
  POSTGRES_PORT: String(server.port),
  POSTGRES_USER: 'postgres',
  POSTGRES_PASSWORD: 'postgres',
  POSTGRES_DB: 'postgres',
});

/** Runs a script of the service with Node 24 until it exits. */
function run(script: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const PGVECTOR_LINE =
  /^PostgreSQL has no pgvector extension \(vector\): install the package postgresql-\d+-pgvector .*then start again$/;

describe('PostgreSQL without pgvector', () => {
  it('is refused before any migration runs, naming the package', async () => {
    const database = await openDatabase(loadConfig(envOf(withoutVector)).database);
    try {
      const refused = await migrateDatabase(database).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(MissingExtensionError);
      expect((refused as Error).message).toMatch(PGVECTOR_LINE);
      expect((refused as Error).message).not.toMatch(/pg_trgm|btree_gin/);
    } finally {
      await database.close();
    }
    // Nothing was applied: no migrations table, no table of the first migration.
    const { rows } = await withoutVector.pglite.query<{ migrations: string | null; agents: string | null }>(
      `select to_regclass('drizzle.__drizzle_migrations')::text as migrations, to_regclass('public.agents')::text as agents`,
    );
    expect(rows[0]).toEqual({ migrations: null, agents: null });
  });

  it('names every missing extension in one line', async () => {
    const database = await openDatabase(loadConfig(envOf(bare)).database);
    try {
      const refused = (await migrateDatabase(database).catch((error: unknown) => error)) as Error;
      expect(refused).toBeInstanceOf(MissingExtensionError);
      expect(refused.message).not.toContain('\n');
      for (const name of ['pgvector', 'pg_trgm', 'btree_gin']) expect(refused.message).toContain(name);
    } finally {
      await database.close();
    }
  });

  for (const [name, script, prefix] of [
    ['npm run db:migrate', 'src/cli/migrate.ts', 'db:migrate: '],
    ['the API process', 'src/main.ts', ''],
    ['the worker process', 'src/worker.ts', ''],
  ] as const) {
    it(`makes ${name} exit non-zero with one line and no stack trace`, async () => {
      const env = {
        ...envOf(withoutVector),
        ...(script === 'src/worker.ts' ? { REDIS_URL: 'redis://127.0.0.1:1' } : {}),
      };
      const { code, stderr } = await run(script, env);
      expect(code).toBe(1);
      const lines = stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]?.startsWith(prefix)).toBe(true);
      expect(lines[0]?.slice(prefix.length)).toMatch(PGVECTOR_LINE);
      expect(stderr).not.toMatch(/^\s+at /m);
    });
  }
});
