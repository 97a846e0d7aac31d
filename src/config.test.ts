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

  it('takes an absolute EMBEDDING_MODELS_DIR, resolved, and refuses a relative one', () => {
    expect(loadConfig({}).embeddingModelsDir).toBeUndefined();
    expect(loadConfig({ EMBEDDING_MODELS_DIR: '/srv/models/../models' }).embeddingModelsDir).toBe(
      '/srv/models',
    );
    expect(problems({ EMBEDDING_MODELS_DIR: 'models' })).toEqual([
      'EMBEDDING_MODELS_DIR must be an absolute path (got "models")',
    ]);
  });

  it('bounds the wait for a connection: 15 s and 1000 waiting by default, both settable and checked', () => {
    expect(loadConfig({}).database).toMatchObject({ queueTimeoutMs: 15_000, queueMax: 1000 });
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
    // The pool's size and the line in front of it (README "Pool sizing").
    expect(config.database).toMatchObject({ poolMax: 20, queueTimeoutMs: 15_000, queueMax: 1000 });
  });

  it('refuses private networks unless the operator opens them, with listed exceptions', () => {
    expect(loadConfig({}).outbound).toEqual({ allowPrivateNetworks: false, allowed: [] });
    expect(loadConfig({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'TRUE' }).outbound.allowPrivateNetworks).toBe(true);
    const listed = loadConfig({ OUTBOUND_ALLOWED_CIDRS: ' 10.1.2.3 , fd00:1::/64,127.0.0.1/32' }).outbound;
    expect(listed.allowed.map((range) => range.cidr)).toEqual(['10.1.2.3/32', 'fd00:1::/64', '127.0.0.1/32']);
    expect(problems({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'yes' })).toEqual([
      'OUTBOUND_ALLOW_PRIVATE_NETWORKS must be true or false',
    ]);
    expect(problems({ OUTBOUND_ALLOWED_CIDRS: '10.0.0.0/33,example.com,1.2.3.4/8/9' })).toEqual([
      'OUTBOUND_ALLOWED_CIDRS: "10.0.0.0/33" is not an address or an address/prefix',
      'OUTBOUND_ALLOWED_CIDRS: "example.com" is not an address or an address/prefix',
      'OUTBOUND_ALLOWED_CIDRS: "1.2.3.4/8/9" is not an address or an address/prefix',
    ]);
  });

  it('keeps the deprecated VAULT_ALLOW_LOOPBACK: loopback allowed, in development only', () => {
    expect(loadConfig({ VAULT_ALLOW_LOOPBACK: 'true' }).outbound).toMatchObject({
      allowPrivateNetworks: false,
      allowed: [{ cidr: '127.0.0.0/8' }, { cidr: '::1/128' }],
    });
    expect(problems({ VAULT_ALLOW_LOOPBACK: 'yes' })).toEqual(['VAULT_ALLOW_LOOPBACK must be true or false']);
    expect(problems({ NODE_ENV: 'production', VAULT_ALLOW_LOOPBACK: 'true' })).toContain(
      'VAULT_ALLOW_LOOPBACK=true is for development only; it is refused in production (use OUTBOUND_ALLOWED_CIDRS)',
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

  it('runs embedded by default: no Redis, RUN_MODE all, the queue settings at their defaults', () => {
    const config = loadConfig({});
    expect(config.redis).toBeUndefined();
    expect(config.runMode).toBe('all');
    expect(config.queue).toEqual({
      prefix: 'bull',
      concurrency: 10,
      lockMs: 30_000,
      stopGraceMs: 5000,
      runLeaseMs: 15_000,
    });
  });

  it('takes REDIS_URL, the run mode and the queue settings', () => {
    const config = loadConfig({
      ...postgres,
      REDIS_URL: ' redis://:pw@cache:6380/2 ',
      RUN_MODE: 'worker',
      QUEUE_PREFIX: 'staging-1',
      WORKER_CONCURRENCY: '4',
      QUEUE_LOCK_MS: '5000',
      WORKER_STOP_GRACE_MS: '0',
      RUN_LEASE_MS: '2000',
    });
    expect(config.redis).toEqual({ url: 'redis://:pw@cache:6380/2' });
    expect(config.runMode).toBe('worker');
    expect(config.queue).toEqual({
      prefix: 'staging-1',
      concurrency: 4,
      lockMs: 5000,
      stopGraceMs: 0,
      runLeaseMs: 2000,
    });
    expect(loadConfig({ REDIS_URL: 'rediss://cache.example.com', RUN_MODE: 'all' }).redis?.url).toBe(
      'rediss://cache.example.com',
    );
  });

  it('refuses a REDIS_URL that is not a Redis URL, without echoing it (it may hold a password)', () => {
    for (const url of ['http://cache:6379', 'cache:6379', 'redis//:secret@cache']) {
      const found = problems({ REDIS_URL: url });
      expect(found).toEqual([
        'REDIS_URL must be a redis:// or rediss:// URL (for example redis://127.0.0.1:6379)',
      ]);
    }
  });

  it('refuses an unknown RUN_MODE, naming it', () => {
    expect(problems({ RUN_MODE: 'both' })).toEqual(['RUN_MODE must be one of api, worker, all (got "both")']);
  });

  it('refuses RUN_MODE worker or api without REDIS_URL, and on PGlite, saying why', () => {
    expect(problems({ ...postgres, RUN_MODE: 'worker' })).toEqual([
      'RUN_MODE=worker needs REDIS_URL: a worker consumes jobs that API processes enqueue, so they must share a queue on Redis (without Redis, use RUN_MODE=all)',
    ]);
    expect(problems({ ...postgres, RUN_MODE: 'api' })[0]).toMatch(
      /^RUN_MODE=api needs REDIS_URL: an API process only enqueues/,
    );
    expect(problems({ REDIS_URL: 'redis://cache', RUN_MODE: 'worker' })).toEqual([
      'RUN_MODE=worker needs PostgreSQL (POSTGRES_*): a worker consumes jobs that API processes enqueue, and the embedded PGlite database can be opened by one process only',
    ]);
    expect(loadConfig({ ...postgres, REDIS_URL: 'redis://cache', RUN_MODE: 'api' }).runMode).toBe('api');
  });

  it('bounds the queue settings', () => {
    expect(problems({ QUEUE_PREFIX: 'a:b' })[0]).toContain('QUEUE_PREFIX');
    expect(problems({ QUEUE_PREFIX: 'x*' })[0]).toContain('QUEUE_PREFIX');
    expect(problems({ WORKER_CONCURRENCY: '0', QUEUE_LOCK_MS: '999', WORKER_STOP_GRACE_MS: '-1' })).toEqual([
      'WORKER_CONCURRENCY must be an integer between 1 and 1000 (got "0")',
      'QUEUE_LOCK_MS must be an integer between 1000 and 600000 (got "999")',
      'WORKER_STOP_GRACE_MS must be an integer between 0 and 600000 (got "-1")',
    ]);
  });
});

const postgres = { POSTGRES_HOST: 'db', POSTGRES_DB: 'app', POSTGRES_USER: 'u', POSTGRES_PASSWORD: 'p' };
