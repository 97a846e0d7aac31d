import path from 'node:path';
import { isMasterKey } from './lib/crypto/envelope.ts';
import { type CidrRange, type PlatformAddressPolicy, parseCidr } from './lib/net/address-guard.ts';

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
      /** Milliseconds a request may wait while every pooled connection is in use before 503 `database_busy`. */
      queueTimeoutMs: number;
      /** Requests that may wait for a pooled connection at once; one more is answered 503 `database_busy` at once. */
      queueMax: number;
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
  | {
      mode: 'oidc';
      issuer: string;
      audience: string;
      jwksUrl?: string;
      algorithms: string[];
      /** The web console's public client at the issuer (authorization code + PKCE); unset, the console takes pasted tokens only. */
      consoleClientId?: string;
    }
  | { mode: 'dev'; issuer: string; audience: string; algorithms: string[] };

/** What this process does with jobs: `api` only enqueues, `worker` only consumes, `all` both. */
export type RunMode = 'api' | 'worker' | 'all';

/** The job queue: BullMQ on Redis when `redis` is set, else the in-process queue. */
export interface QueueConfig {
  /** Redis key prefix of the queue and the event hub's channels (isolates deployments and tests). */
  prefix: string;
  /** Jobs one process runs at once. */
  concurrency: number;
  /**
   * BullMQ's job lock: a worker renews it every half of it; a job whose worker died is handed
   * to another worker once it expires and the next stalled check (every lock duration) sees it.
   */
  lockMs: number;
  /** On shutdown, how long running jobs may finish before their signal is aborted and they are handed back. */
  stopGraceMs: number;
  /**
   * How long a worker's claim on a run lasts without renewal (renewed every third of it): a
   * run whose worker died is taken over by another once it runs out (`RUN_LEASE_MS`, 15 s).
   */
  runLeaseMs: number;
}

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
  /**
   * Live streams (activity SSE and WebSocket, run events) one user, and one workspace, may hold
   * open at once in this process; beyond, 429 `too_many_streams`.
   */
  streams: { perUser: number; perWorkspace: number };
  /** How long one `GET /api/system/metrics` answer is shared by its workspace's requests; 0 computes each. */
  metricsShareMs: number;
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
   * The operator's outbound address policy, for every request to an address a user chose:
   * `OUTBOUND_ALLOW_PRIVATE_NETWORKS` (private networks reachable at all; a workspace may still
   * refuse them) and `OUTBOUND_ALLOWED_CIDRS` (ranges always reachable, such as an internal model
   * gateway). The deprecated `VAULT_ALLOW_LOOPBACK=true` (development only) adds loopback to them.
   */
  outbound: PlatformAddressPolicy;
  /**
   * `SOURCES_ROOT`: the one server-side folder under which directory sources and code graph
   * directories may be read (absolute, resolved); absent means no directory may be read.
   */
  sourcesRoot?: string;
  /**
   * `EMBEDDING_MODELS_DIR`: the folder of local embedding models (absolute, resolved); a source
   * whose embedding provider is `local` names a model folder under it. Absent, no local model.
   */
  embeddingModelsDir?: string;
  /**
   * `METRICS_TOKEN`: the bearer token `GET /metrics` asks for; absent, only loopback clients
   * are answered (a scraper on the same host or behind a local agent).
   */
  metricsToken?: string;
  /** `UPLOAD_MAX_BYTES`: the largest uploaded file (documents, code archives); 25 MiB by default. */
  uploadMaxBytes: number;
  /**
   * `CODEGRAPH_SYNC_MAX_BYTES`: a code project with at most this many bytes of source is indexed
   * within its request (200); a larger one by a background job (202). 256 KiB by default, a few
   * hundred milliseconds of parsing on one core; 0 sends every index to the background.
   */
  codegraphSyncMaxBytes: number;
  /**
   * `MINE_SYNC_MAX_RUNS`: a playbook mine over at most this many finished runs is done within
   * its request (200); a larger one by a background job (202). 20,000 by default, about 0.3 s
   * (100,000 runs take 1.5 s on PostgreSQL, bench/RESULTS.md); 0 mines every request in the background.
   */
  mineSyncMaxRuns: number;
  /**
   * `SEARCH_POSTINGS_MB` and `SEARCH_POSTINGS_MIN_CHUNKS`: the memory the in-memory keyword
   * postings of large sources may take in this process (0 turns them off), and the chunks a
   * source needs to get them (docs/retrieval.md, "Postings in memory").
   */
  searchPostings: { maxBytes: number; minChunks: number };
  /** `REDIS_URL`; absent means the embedded mode: no Redis at all, jobs and events in-process. */
  redis?: { url: string };
  /** Gates the job consumers of this process (never the producers). */
  runMode: RunMode;
  queue: QueueConfig;
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
const RUN_MODES: readonly RunMode[] = ['api', 'worker', 'all'];
const QUEUE_PREFIX = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

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
  const streams = {
    perUser: int('STREAMS_PER_USER', 20, 1, 100_000),
    perWorkspace: int('STREAMS_PER_WORKSPACE', 200, 1, 1_000_000),
  };
  const metricsShareMs = int('SYSTEM_METRICS_SHARE_MS', 5_000, 0, 60_000);
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

  const outbound = readOutbound(env, production, problems);

  const { redis, runMode, queue } = readJobs(env, database, problems, int);
  const sourcesRootText = env.SOURCES_ROOT?.trim() || undefined;
  if (sourcesRootText !== undefined && !path.isAbsolute(sourcesRootText)) {
    problems.push(`SOURCES_ROOT must be an absolute path (got "${sourcesRootText}")`);
  }
  const sourcesRoot =
    sourcesRootText && path.isAbsolute(sourcesRootText) ? path.resolve(sourcesRootText) : undefined;
  const modelsDirText = env.EMBEDDING_MODELS_DIR?.trim() || undefined;
  if (modelsDirText !== undefined && !path.isAbsolute(modelsDirText)) {
    problems.push(`EMBEDDING_MODELS_DIR must be an absolute path (got "${modelsDirText}")`);
  }
  const embeddingModelsDir =
    modelsDirText && path.isAbsolute(modelsDirText) ? path.resolve(modelsDirText) : undefined;
  const uploadMaxBytes = int('UPLOAD_MAX_BYTES', 25 * 1024 * 1024, 1024, 1024 * 1024 * 1024);
  const codegraphSyncMaxBytes = int('CODEGRAPH_SYNC_MAX_BYTES', 256 * 1024, 0, 1024 * 1024 * 1024);
  const mineSyncMaxRuns = int('MINE_SYNC_MAX_RUNS', 20_000, 0, 1_000_000);
  const searchPostings = {
    maxBytes: int('SEARCH_POSTINGS_MB', 256, 0, 1024 * 1024) * 1024 * 1024,
    minChunks: int('SEARCH_POSTINGS_MIN_CHUNKS', 2_000, 1, 1_000_000_000),
  };

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    nodeEnv,
    production,
    host,
    port,
    dataDir,
    bodyLimit,
    wsPingIntervalMs,
    streams,
    metricsShareMs,
    logLevel,
    database,
    auth,
    encryptionKey,
    encryptionKeysPrevious,
    platformAdmins,
    outbound,
    ...(sourcesRoot ? { sourcesRoot } : {}),
    ...(embeddingModelsDir ? { embeddingModelsDir } : {}),
    ...(env.METRICS_TOKEN?.trim() ? { metricsToken: env.METRICS_TOKEN.trim() } : {}),
    uploadMaxBytes,
    codegraphSyncMaxBytes,
    mineSyncMaxRuns,
    searchPostings,
    redis,
    runMode,
    queue,
  };
}

/** `true` or `false` (any case), the fallback when unset; a problem otherwise. */
function readBoolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean, problems: string[]): boolean {
  const text = env[name]?.trim().toLowerCase() || String(fallback);
  if (!['true', 'false'].includes(text)) problems.push(`${name} must be true or false`);
  return text === 'true';
}

/** Loopback, which the deprecated `VAULT_ALLOW_LOOPBACK=true` adds to the allowed ranges. */
const LOOPBACK_CIDRS = ['127.0.0.0/8', '::1/128'];

/**
 * The platform's outbound address policy. Private networks are refused unless the operator
 * says otherwise: tenants of a shared service must not reach the operator's network, so no
 * workspace setting can open it (docs/outbound.md).
 */
function readOutbound(
  env: NodeJS.ProcessEnv,
  production: boolean,
  problems: string[],
): PlatformAddressPolicy {
  const allowPrivateNetworks = readBoolean(env, 'OUTBOUND_ALLOW_PRIVATE_NETWORKS', false, problems);
  const vaultAllowLoopback = readBoolean(env, 'VAULT_ALLOW_LOOPBACK', false, problems);
  if (vaultAllowLoopback && production) {
    problems.push(
      'VAULT_ALLOW_LOOPBACK=true is for development only; it is refused in production (use OUTBOUND_ALLOWED_CIDRS)',
    );
  }
  const listed = (env.OUTBOUND_ALLOWED_CIDRS ?? '')
    .split(',')
    .map((cidr) => cidr.trim())
    .filter((cidr) => cidr !== '');
  const allowed: CidrRange[] = [];
  for (const cidr of [...listed, ...(vaultAllowLoopback ? LOOPBACK_CIDRS : [])]) {
    const parsed = parseCidr(cidr);
    if (parsed) allowed.push(parsed);
    else problems.push(`OUTBOUND_ALLOWED_CIDRS: "${cidr}" is not an address or an address/prefix`);
  }
  return { allowPrivateNetworks, allowed };
}

/**
 * Redis, the run mode and the queue. A split into API and worker processes needs a queue
 * and a database they share: Redis, and PostgreSQL (PGlite is open in one process only).
 */
function readJobs(
  env: NodeJS.ProcessEnv,
  database: DatabaseConfig,
  problems: string[],
  int: (name: string, fallback: number, min: number, max: number) => number,
): Pick<Config, 'redis' | 'runMode' | 'queue'> {
  const url = env.REDIS_URL?.trim() || undefined;
  if (url !== undefined && !/^rediss?:$/.test(URL.parse(url)?.protocol ?? '')) {
    // The value may hold a password: name the variable, never echo it.
    problems.push('REDIS_URL must be a redis:// or rediss:// URL (for example redis://127.0.0.1:6379)');
  }
  const modeText = env.RUN_MODE?.trim() || 'all';
  const runMode = RUN_MODES.find((mode) => mode === modeText);
  if (!runMode) {
    problems.push(`RUN_MODE must be one of ${RUN_MODES.join(', ')} (got "${modeText}")`);
  } else if (runMode !== 'all') {
    const role =
      runMode === 'worker'
        ? 'a worker consumes jobs that API processes enqueue'
        : 'an API process only enqueues jobs for worker processes';
    if (url === undefined) {
      problems.push(
        `RUN_MODE=${runMode} needs REDIS_URL: ${role}, so they must share a queue on Redis (without Redis, use RUN_MODE=all)`,
      );
    }
    if (database.kind === 'pglite') {
      problems.push(
        `RUN_MODE=${runMode} needs PostgreSQL (POSTGRES_*): ${role}, and the embedded PGlite database can be opened by one process only`,
      );
    }
  }
  const prefix = env.QUEUE_PREFIX?.trim() || 'bull';
  if (!QUEUE_PREFIX.test(prefix)) {
    problems.push(
      'QUEUE_PREFIX must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit',
    );
  }
  return {
    redis: url === undefined ? undefined : { url },
    runMode: runMode ?? 'all',
    queue: {
      prefix,
      concurrency: int('WORKER_CONCURRENCY', 10, 1, 1000),
      lockMs: int('QUEUE_LOCK_MS', 30_000, 1000, 600_000),
      stopGraceMs: int('WORKER_STOP_GRACE_MS', 5000, 0, 600_000),
      runLeaseMs: int('RUN_LEASE_MS', 15_000, 1000, 600_000),
    },
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
  const poolMax = int('POSTGRES_POOL_MAX', 20, 1, 1000);
  const queueTimeoutMs = int('DB_QUEUE_TIMEOUT_MS', 15_000, 1, 60_000);
  const queueMax = int('DB_QUEUE_MAX', 1000, 1, 100_000);
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
    queueTimeoutMs,
    queueMax,
  };
}

function readAuth(env: NodeJS.ProcessEnv, production: boolean, problems: string[]): AuthConfig {
  const issuer = env.OIDC_ISSUER?.trim();
  const audience = env.OIDC_AUDIENCE?.trim();
  const jwksUrl = env.OIDC_JWKS_URL?.trim() || undefined;
  const consoleClientId = env.OIDC_CONSOLE_CLIENT_ID?.trim() || undefined;
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
    return { mode: 'oidc', issuer, audience: audience ?? '', jwksUrl, algorithms, consoleClientId };
  }
  if (production) {
    problems.push(
      'OIDC_ISSUER and OIDC_AUDIENCE are required in production (the development issuer is disabled)',
    );
  }
  return { mode: 'dev', issuer: DEV_ISSUER, audience: audience || DEFAULT_AUDIENCE, algorithms: ['EdDSA'] };
}
