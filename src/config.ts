import path from 'node:path';
import { isMasterKey } from './lib/crypto/envelope.ts';

/** Where the service keeps its data: a PostgreSQL server, or PGlite embedded in `DATA_DIR`. */
export type DatabaseConfig =
  | {
      kind: 'postgres';
      host: string;
      port: number;
      database: string;
      user: string;
      password: string;
      poolMax: number;
    }
  | {
      kind: 'pglite';
      dataDir: string;
      /** Milliseconds a request may wait for PGlite's single connection before 503 `database_busy`. */
      queueTimeoutMs: number;
      /** Requests that may wait for it at once; one more is answered 503 `database_busy` at once. */
      queueMax: number;
    };

/**
 * How bearer tokens are verified. `oidc` trusts an external identity provider;
 * `dev` makes the service its own issuer (development only).
 */
export type AuthConfig =
  | { mode: 'oidc'; issuer: string; audience: string; jwksUrl?: string; algorithms: string[] }
  | { mode: 'dev'; issuer: string; audience: string; algorithms: string[] };

export interface Config {
  nodeEnv: string;
  production: boolean;
  host: string;
  port: number;
  /** Where PGlite, the development signing key and other local state live. */
  dataDir: string;
  /** Largest accepted request body, in bytes. */
  bodyLimit: number;
  /** WebSocket keep-alive: ping interval; a socket that missed the previous pong is closed. */
  wsPingIntervalMs: number;
  logLevel: string;
  database: DatabaseConfig;
  auth: AuthConfig;
  /** Base64 of 32 bytes; required in production, generated into DATA_DIR in development. */
  encryptionKey?: string;
  /** Retired master keys, still read until `npm run vault:rotate` re-wraps what they wrap. */
  encryptionKeysPrevious: string[];
  /** Operators: users who may see platform-wide state such as master key status. */
  platformAdmins: string[];
  /**
   * Development only: connection tests may reach loopback even where a workspace refuses
   * private networks (the default), so a developer can test against local services.
   */
  vaultAllowLoopback: boolean;
}

/** Thrown when the environment is unusable; the message lists every problem at once. */
export class ConfigError extends Error {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const DEV_ISSUER = 'urn:agent-platform:dev';
const DEFAULT_AUDIENCE = 'agent-platform';
const DEFAULT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA'];
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Reads the environment once at boot. Collects every problem before failing so an
 * operator fixes a deployment in one pass instead of one variable per restart.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const nodeEnv = env.NODE_ENV?.trim() || 'development';
  const production = nodeEnv === 'production';

  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer between ${min} and ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  };

  const host = env.HOST?.trim() || '0.0.0.0';
  const port = int('PORT', 8080, 0, 65535);
  const dataDir = path.resolve(env.DATA_DIR?.trim() || './data');
  const bodyLimit = int('BODY_LIMIT', 1024 * 1024, 1024, 1024 * 1024 * 1024);
  const wsPingIntervalMs = int('WS_PING_INTERVAL_MS', 30_000, 100, 600_000);
  const logLevel = env.LOG_LEVEL?.trim() || 'info';
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);

  const database = readDatabase(env, dataDir, production, problems, int);
  const auth = readAuth(env, production, problems);

  const encryptionKey = env.ENCRYPTION_KEY?.trim() || undefined;
  if (encryptionKey === undefined) {
    if (production) problems.push('ENCRYPTION_KEY is required in production (32 bytes, base64)');
  } else if (!isMasterKey(encryptionKey)) {
    problems.push(
      'ENCRYPTION_KEY must be exactly 32 bytes encoded as base64 (for example: openssl rand -base64 32)',
    );
  }

  const encryptionKeysPrevious = (env.ENCRYPTION_KEYS_PREVIOUS ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '');
  encryptionKeysPrevious.forEach((key, index) => {
    if (!isMasterKey(key))
      problems.push(`ENCRYPTION_KEYS_PREVIOUS: key ${index + 1} is not 32 bytes of base64`);
  });
  if (encryptionKeysPrevious.length > 0 && encryptionKey === undefined) {
    problems.push('ENCRYPTION_KEYS_PREVIOUS needs ENCRYPTION_KEY (the current key) as well');
  }
  const platformAdmins = (env.PLATFORM_ADMIN_USERS ?? (production ? '' : 'dev-user'))
    .split(',')
    .map((user) => user.trim())
    .filter((user) => user !== '');

  const allowLoopbackText = env.VAULT_ALLOW_LOOPBACK?.trim().toLowerCase() || 'false';
  if (!['true', 'false'].includes(allowLoopbackText)) {
    problems.push('VAULT_ALLOW_LOOPBACK must be true or false');
  }
  const vaultAllowLoopback = allowLoopbackText === 'true';
  if (vaultAllowLoopback && production) {
    problems.push('VAULT_ALLOW_LOOPBACK=true is for development only; it is refused in production');
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    nodeEnv,
    production,
    host,
    port,
    dataDir,
    bodyLimit,
    wsPingIntervalMs,
    logLevel,
    database,
    auth,
    encryptionKey,
    encryptionKeysPrevious,
    platformAdmins,
    vaultAllowLoopback,
  };
}

function readDatabase(
  env: NodeJS.ProcessEnv,
  dataDir: string,
  production: boolean,
  problems: string[],
  int: (name: string, fallback: number, min: number, max: number) => number,
): DatabaseConfig {
  const required = ['POSTGRES_DB', 'POSTGRES_USER', 'POSTGRES_PASSWORD', 'POSTGRES_HOST'] as const;
  const given = required.filter((name) => env[name] !== undefined && env[name] !== '');
  const port = int('POSTGRES_PORT', 5432, 1, 65535);
  const poolMax = int('POSTGRES_POOL_MAX', 10, 1, 1000);
  const queueTimeoutMs = int('DB_QUEUE_TIMEOUT_MS', 300, 1, 60_000);
  const queueMax = int('DB_QUEUE_MAX', 256, 1, 100_000);
  if (given.length === 0 && !production) return { kind: 'pglite', dataDir, queueTimeoutMs, queueMax };
  const missing = required.filter((name) => !given.includes(name));
  if (missing.length > 0) {
    problems.push(
      production
        ? `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required in production`
        : `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required when any POSTGRES_* setting is given (${required.join(', ')} go together)`,
    );
  }
  return {
    kind: 'postgres',
    host: env.POSTGRES_HOST ?? '',
    port,
    database: env.POSTGRES_DB ?? '',
    user: env.POSTGRES_USER ?? '',
    password: env.POSTGRES_PASSWORD ?? '',
    poolMax,
  };
}

function readAuth(env: NodeJS.ProcessEnv, production: boolean, problems: string[]): AuthConfig {
  const issuer = env.OIDC_ISSUER?.trim();
  const audience = env.OIDC_AUDIENCE?.trim();
  const jwksUrl = env.OIDC_JWKS_URL?.trim() || undefined;
  const algorithms = env.OIDC_ALGORITHMS?.trim()
    ? env.OIDC_ALGORITHMS.split(',').map((a) => a.trim())
    : DEFAULT_ALGORITHMS;
  for (const alg of algorithms) {
    if (!DEFAULT_ALGORITHMS.includes(alg) && !['RS384', 'RS512', 'PS384', 'PS512', 'ES512'].includes(alg)) {
      problems.push(`OIDC_ALGORITHMS: "${alg}" is not an accepted asymmetric JWS algorithm`);
    }
  }
  if (jwksUrl !== undefined && !URL.canParse(jwksUrl)) problems.push('OIDC_JWKS_URL must be a URL');
  if (issuer) {
    if (!audience) problems.push('OIDC_AUDIENCE is required when OIDC_ISSUER is set');
    return { mode: 'oidc', issuer, audience: audience ?? '', jwksUrl, algorithms };
  }
  if (production) {
    problems.push(
      'OIDC_ISSUER and OIDC_AUDIENCE are required in production (the development issuer is disabled)',
    );
  }
  return { mode: 'dev', issuer: DEV_ISSUER, audience: audience || DEFAULT_AUDIENCE, algorithms: ['EdDSA'] };
}
