import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/**
 * A throwaway database on the PostgreSQL server named by POSTGRES_* (or the machine's
 * 127.0.0.1:5432), with the environment to boot the service on it; undefined when no
 * server answers.
 */
export async function createBenchPostgres(
  prefix: string,
): Promise<{ env: NodeJS.ProcessEnv; drop(): Promise<void> } | undefined> {
  const admin = {
    host: process.env.POSTGRES_HOST || '127.0.0.1',
    port: Number(process.env.POSTGRES_PORT ?? 5432),
    user: process.env.POSTGRES_USER || 'postgres',
    password: process.env.POSTGRES_PASSWORD || 'postgres',
    database: process.env.POSTGRES_DB || 'postgres',
  };
  const name = `${prefix}_${process.pid}`;
  const client = new pg.Client(admin);
  try {
    await client.connect();
  } catch {
    return undefined;
  }
  await client.query(`create database ${name}`);
  await client.end();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  return {
    env: {
      DATA_DIR: dataDir,
      POSTGRES_HOST: admin.host,
      POSTGRES_PORT: String(admin.port),
      POSTGRES_USER: admin.user,
      POSTGRES_PASSWORD: admin.password,
      POSTGRES_DB: name,
      POSTGRES_POOL_MAX: process.env.POSTGRES_POOL_MAX ?? '10',
    },
    drop: async () => {
      const again = new pg.Client(admin);
      await again.connect();
      await again.query(`drop database if exists ${name} with (force)`);
      await again.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
