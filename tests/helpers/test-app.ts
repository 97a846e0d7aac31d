import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { SQL } from 'drizzle-orm';
import pg from 'pg';
import { type App, buildApp } from '../../src/app.ts';
import { boot, startServices } from '../../src/boot.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { Database } from '../../src/db/client.ts';
import { rowsOf } from '../../src/db/rows.ts';
import type { ConsolePages } from '../../src/http/console.ts';
import { createLogger } from '../../src/logger.ts';
import { DEV_USER_ID, readDevIdentity } from '../../src/modules/identity/dev-identity.ts';
import { mintDevToken } from '../../src/modules/identity/dev-issuer.ts';
import type { Services } from '../../src/services.ts';
import { type Actor, type CallOptions, callApi, type Method } from './api-client.ts';
import { testRedisEnv } from './test-redis.ts';

/** True when the suite runs against a real PostgreSQL server (CI's second pass). */
export const onPostgres = Boolean(process.env.POSTGRES_HOST);

/**
 * A throwaway database (a PGlite directory, or a fresh database on the PostgreSQL server) and,
 * when REDIS_URL is set, a Redis key prefix of its own (`QUEUE_PREFIX`) removed with it.
 */
export interface TestDatabaseEnv {
  env: NodeJS.ProcessEnv;
  dataDir: string;
  drop(): Promise<void>;
}

const adminConfig = () => ({
  host: process.env.POSTGRES_HOST,
  port: Number(process.env.POSTGRES_PORT ?? 5432),
  user: process.env.POSTGRES_USER,
  password: process.env.POSTGRES_PASSWORD,
  database: process.env.POSTGRES_DB,
});

/** Makes the environment of one isolated test database. */
export async function createTestDatabaseEnv(): Promise<TestDatabaseEnv> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-platform-test-'));
  const redis = testRedisEnv();
  const base: NodeJS.ProcessEnv = { NODE_ENV: 'test', DATA_DIR: dataDir, LOG_LEVEL: 'info', ...redis.env };
  if (!onPostgres) {
    return {
      env: {
        ...base,
        POSTGRES_HOST: '',
        POSTGRES_DB: '',
        POSTGRES_USER: '',
        POSTGRES_PASSWORD: '',
        // A busy CI machine can keep PGlite's connection longer than the service's 15 s
        // (a run executing beside the request): tests wait, and the tests of database_busy
        // set their own limits.
        DB_QUEUE_TIMEOUT_MS: '10000',
      },
      dataDir,
      drop: async () => {
        fs.rmSync(dataDir, { recursive: true, force: true });
        await redis.drop();
      },
    };
  }
  const name = `test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client(adminConfig());
  await admin.connect();
  // The schema needs pgvector: say so plainly instead of failing every migration.
  const vector = await admin.query(`select 1 from pg_available_extensions where name = 'vector'`);
  if (vector.rowCount === 0) {
    await admin.end();
    throw new Error(
      `PostgreSQL at ${process.env.POSTGRES_HOST} has no pgvector extension: install it (bash .ci/install-pgvector)`,
    );
  }
  await admin.query(`create database ${name}`);
  await admin.end();
  return {
    env: {
      ...base,
      POSTGRES_HOST: process.env.POSTGRES_HOST,
      POSTGRES_PORT: process.env.POSTGRES_PORT ?? '5432',
      POSTGRES_USER: process.env.POSTGRES_USER,
      POSTGRES_PASSWORD: process.env.POSTGRES_PASSWORD,
      POSTGRES_DB: name,
    },
    dataDir,
    drop: async () => {
      const client = new pg.Client(adminConfig());
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
      await redis.drop();
    },
  };
}

export interface TestApp {
  app: App;
  services: Services;
  database: Database;
  config: Config;
  dataDir: string;
  /** Every log line the app wrote, parsed. */
  logs: Record<string, unknown>[];
  /** The raw log text, to search for leaked secrets. */
  rawLogs(): string;
  /** A token for `userId` signed by the development issuer. */
  token(userId?: string, ttlSeconds?: number): Promise<string>;
  /** A new tenant and workspace owned by a new user, with headers to act as them. */
  newWorkspace(userId?: string): Promise<Actor>;
  /** `userId` acting in `workspaceId` with a fresh development token (membership is not checked here). */
  actor(userId: string, workspaceId: string): Promise<Actor>;
  /** Calls the API as `actor` (anonymously when undefined) through the one client, `callApi`. */
  call(
    actor: Actor | undefined,
    method: Method,
    url: string,
    payload?: unknown,
    options?: CallOptions,
  ): ReturnType<typeof callApi>;
  /** The default workspace and its owner. */
  owner: Actor;
  /** Runs raw SQL (to inspect or tamper with stored data, as an attacker with database access would). */
  rows<T>(query: SQL): Promise<T[]>;
  /** Closes the app and database; the database is dropped unless `keep` is set. */
  close(options?: { keep?: boolean }): Promise<void>;
}

/**
 * Boots the real service (migrations, services, its components and job consumers, Fastify)
 * on a throwaway database in development-auth mode, as the server does. One per test file;
 * tests isolate themselves by workspace.
 */
export async function createTestApp(
  options: { env?: NodeJS.ProcessEnv; reuse?: TestDatabaseEnv; console?: ConsolePages | false } = {},
): Promise<TestApp> {
  const dbEnv = options.reuse ?? (await createTestDatabaseEnv());
  const config = loadConfig({ ...dbEnv.env, ...options.env });
  let text = '';
  const logs: Record<string, unknown>[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      done();
    },
  });
  const { database, services } = await boot(config, { log: createLogger(config.logLevel, logStream) });
  const stopServices = await startServices(services);
  const app = await buildApp(services, {
    logStream,
    ...(options.console === undefined ? {} : { console: options.console }),
  });
  await app.ready();

  const token = async (userId = DEV_USER_ID, ttlSeconds = 3600) => {
    if (!services.devKey || config.auth.mode !== 'dev') throw new Error('dev tokens need development auth');
    return mintDevToken(services.devKey, {
      userId,
      issuer: config.auth.issuer,
      audience: config.auth.audience,
      ttlSeconds,
    });
  };
  const actor = async (userId: string, workspaceId: string): Promise<Actor> => {
    const bearer = await token(userId);
    return {
      userId,
      workspaceId,
      token: bearer,
      headers: { authorization: `Bearer ${bearer}`, 'x-workspace-id': workspaceId },
    };
  };
  const identity = readDevIdentity(config.dataDir);
  const owner =
    identity && config.auth.mode === 'dev' ? await actor(identity.user_id, identity.workspace_id) : undefined;

  return {
    app,
    services,
    database,
    config,
    dataDir: dbEnv.dataDir,
    logs,
    rawLogs: () => text,
    token,
    get owner() {
      if (!owner) throw new Error('the default owner exists in development auth mode only');
      return owner;
    },
    actor,
    call: (actor, method, url, payload, options) => callApi(app, actor, method, url, payload, options),
    async newWorkspace(userId = `user-${randomBytes(4).toString('hex')}`) {
      const created = await services.workspaces.createWorkspace(userId, { name: `${userId} workspace` });
      return actor(userId, created.id);
    },
    async rows<T>(query: SQL) {
      const result = await database.db.execute(query);
      return rowsOf<T>(result);
    },
    async close({ keep = false } = {}) {
      await app.close();
      await stopServices();
      await database.close();
      if (!keep) await dbEnv.drop();
    },
  };
}
