import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

const problems = (env: NodeJS.ProcessEnv): string[] => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('loadConfig', () => {
  it('defaults to PGlite in ./data and development auth', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ host: '0.0.0.0', port: 8080, bodyLimit: 1_048_576, production: false });
    expect(config.database).toMatchObject({ kind: 'pglite' });
    expect(config.dataDir.endsWith('/data')).toBe(true);
    expect(config.auth).toMatchObject({ mode: 'dev', algorithms: ['EdDSA'] });
  });

  it('bounds the wait for PGlite: 300 ms and 256 waiting by default, both settable and checked', () => {
    expect(loadConfig({}).database).toMatchObject({ queueTimeoutMs: 300, queueMax: 256 });
    expect(loadConfig({ DB_QUEUE_TIMEOUT_MS: '50', DB_QUEUE_MAX: '8' }).database).toMatchObject({
      queueTimeoutMs: 50,
      queueMax: 8,
    });
    expect(problems({ DB_QUEUE_TIMEOUT_MS: '0', DB_QUEUE_MAX: 'many' })).toEqual([
      'DB_QUEUE_TIMEOUT_MS must be an integer between 1 and 60000 (got "0")',
      'DB_QUEUE_MAX must be an integer between 1 and 100000 (got "many")',
    ]);
  });

  it('uses PostgreSQL when the four settings are given, port 5432 by default', () => {
    const config = loadConfig({
      POSTGRES_HOST: 'db',
      POSTGRES_DB: 'app',
      POSTGRES_USER: 'u',
      POSTGRES_PASSWORD: 'p',
    });
    expect(config.database).toMatchObject({ kind: 'postgres', host: 'db', port: 5432, database: 'app' });
  });

  it('admits loopback for connection tests in development only, when asked', () => {
    expect(loadConfig({}).vaultAllowLoopback).toBe(false);
    expect(loadConfig({ VAULT_ALLOW_LOOPBACK: 'true' }).vaultAllowLoopback).toBe(true);
    expect(problems({ VAULT_ALLOW_LOOPBACK: 'yes' })).toEqual(['VAULT_ALLOW_LOOPBACK must be true or false']);
    expect(problems({ NODE_ENV: 'production', VAULT_ALLOW_LOOPBACK: 'true' })).toContain(
      'VAULT_ALLOW_LOOPBACK=true is for development only; it is refused in production',
    );
  });

  it('requires the four PostgreSQL settings together', () => {
    expect(problems({ POSTGRES_HOST: 'db' })).toEqual([
      'POSTGRES_DB, POSTGRES_USER, POSTGRES_PASSWORD are required when any POSTGRES_* setting is given (POSTGRES_DB, POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_HOST go together)',
    ]);
  });

  it('lists every problem of a production environment at once', () => {
    const found = problems({ NODE_ENV: 'production', PORT: 'eighty' });
    expect(found).toHaveLength(4);
    expect(found.join('\n')).toMatch(
      /PORT.*POSTGRES_DB, POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_HOST.*OIDC_ISSUER.*ENCRYPTION_KEY/s,
    );
  });

  it('accepts a complete production environment', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      POSTGRES_HOST: 'db',
      POSTGRES_DB: 'app',
      POSTGRES_USER: 'u',
      POSTGRES_PASSWORD: 'p',
      OIDC_ISSUER: 'https://id.example.com',
      OIDC_AUDIENCE: 'api',
      ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    expect(config.auth).toMatchObject({ mode: 'oidc', issuer: 'https://id.example.com', audience: 'api' });
  });

  it('rejects an encryption key that is not 32 bytes of base64', () => {
    expect(problems({ ENCRYPTION_KEY: Buffer.alloc(16).toString('base64') })[0]).toContain(
      'exactly 32 bytes',
    );
    expect(problems({ ENCRYPTION_KEY: 'not base64 at all!' })[0]).toContain('exactly 32 bytes');
  });

  it('rejects symmetric or unknown token algorithms and a missing audience', () => {
    expect(problems({ OIDC_ISSUER: 'https://id', OIDC_ALGORITHMS: 'HS256' })).toEqual([
      'OIDC_ALGORITHMS: "HS256" is not an accepted asymmetric JWS algorithm',
      'OIDC_AUDIENCE is required when OIDC_ISSUER is set',
    ]);
  });

  it('bounds numeric settings', () => {
    expect(problems({ BODY_LIMIT: '10' })[0]).toContain('BODY_LIMIT');
    expect(problems({ PORT: '70000' })[0]).toContain('PORT');
  });
});
