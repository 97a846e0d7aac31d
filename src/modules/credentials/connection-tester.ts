import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { TestEndpoint } from '../../db/schema/credentials.ts';
import { type AddressPolicy, vetHost } from '../../lib/net/address-guard.ts';
import { fillPlaceholders, placeholdersOf } from '../../lib/placeholders.ts';

/** How a credential type is tested; comes from the type's `test_endpoint.kind`. */
export type TestKind = TestEndpoint['kind'];

/**
 * The HTTP probe of an API credential type: its stored `test_endpoint` with the URL present.
 * `{{field}}` placeholders in the URL and header values are filled from the data (URL parts
 * encoded), so one type serves every tenant. Always GET: a test must never change anything on
 * the remote side. `expected_status` defaults to [200].
 */
export type HttpTestEndpoint = Pick<TestEndpoint, 'headers' | 'expected_status'> & { url: string };

/** Everything a connection test needs; the caller has already decrypted and audited the access. */
export interface ConnectionTestRequest {
  /** Which probe to run. */
  kind: TestKind;
  /** Decrypted credential fields, named as in the system credential types. */
  data: Record<string, unknown>;
  /** Fields whose values must never appear in a message (the type's password and hidden fields). */
  secretFields: string[];
  /** The HTTP probe, required for kind 'http'. */
  endpoint?: HttpTestEndpoint;
  /** Where the probe may connect: the workspace's policy under the platform's (address-guard). */
  policy: AddressPolicy;
  /** Limits of spec section 8 by default (5 s, 5 s, 10 s); smaller values keep tests fast. */
  timeouts?: { databaseMs?: number; cacheMs?: number; httpMs?: number };
}

/** Stored on the credential as test_status / test_message and written to the `tested` audit record. */
export interface ConnectionTestResult {
  passed: boolean;
  message: string;
  duration_ms: number;
}

const DEFAULT_TIMEOUTS = { databaseMs: 5_000, cacheMs: 5_000, httpMs: 10_000 };

/**
 * Field names that are secret in every system type. They are scrubbed even when a caller forgets to
 * list them in secretFields, because a leaked secret in test_message cannot be taken back.
 */
const ALWAYS_SECRET_FIELDS = [
  'password',
  'access_token',
  'refresh_token',
  'client_secret',
  'api_key',
  'token',
];

/**
 * The fields each socket-level probe dials (where it sends the credential's secrets) and its
 * TLS switch (whether they travel encrypted): turning TLS off is redirecting them too.
 */
const DIALED_FIELDS: Partial<Record<TestKind, string[]>> = {
  postgres: ['host', 'port', 'ssl'],
  redis: ['host', 'port', 'tls'],
};

/**
 * The fields of a credential whose values decide where (and how) its connection test sends the
 * secrets: the fields a socket probe dials with its TLS switch, and every `{{field}}` placeholder
 * of an HTTP probe's URL (scheme, host, port and path all come from them). Only fields the type
 * defines count.
 */
export function destinationFields(
  kind: TestKind,
  fieldNames: readonly string[],
  endpointUrl?: string,
): string[] {
  const placeholders = placeholdersOf(endpointUrl ?? '');
  const candidates = new Set([...(DIALED_FIELDS[kind] ?? []), ...(kind === 'http' ? placeholders : [])]);
  return fieldNames.filter((name) => candidates.has(name));
}

type Outcome = { passed: boolean; message: string };

const pass = (message: string): Outcome => ({ passed: true, message });
const fail = (message: string): Outcome => ({ passed: false, message });

/** A failure found before any connection is attempted (missing field, refused address). */
class Refusal extends Error {}

class TimedOut extends Error {}

function formatDuration(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** Replaces every secret (raw and URL-encoded) with *** in a message, longest first. */
function createScrubber(secrets: string[]): (text: string) => string {
  const variants = new Set<string>();
  for (const secret of secrets) {
    if (secret === '') continue;
    variants.add(secret);
    variants.add(encodeURIComponent(secret));
    variants.add(encodeURIComponent(secret).replaceAll('%20', '+'));
  }
  const ordered = [...variants].sort((a, b) => b.length - a.length);
  return (text) => ordered.reduce((scrubbed, secret) => scrubbed.replaceAll(secret, '***'), text);
}

/** Every string leaf of a secret field, so a JSON key file stored in one field is scrubbed too. */
function secretValues(data: Record<string, unknown>, fields: string[]): string[] {
  const values: string[] = [];
  const collect = (value: unknown): void => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint') {
      values.push(String(value));
    } else if (value !== null && typeof value === 'object') {
      values.push(JSON.stringify(value));
      for (const nested of Object.values(value)) collect(nested);
    }
  };
  for (const field of new Set([...fields, ...ALWAYS_SECRET_FIELDS])) collect(data[field]);
  return values;
}

function requireString(data: Record<string, unknown>, field: string): string {
  const value = data[field];
  if (typeof value !== 'string' || value.trim() === '')
    throw new Refusal(`missing required field "${field}"`);
  return value.trim();
}

function optionalString(data: Record<string, unknown>, field: string): string | undefined {
  const value = data[field];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new Refusal(`field "${field}" must be a string`);
  return value;
}

function integerField(data: Record<string, unknown>, field: string, fallback: number, max: number): number {
  const value = data[field];
  if (value === undefined || value === null || value === '') return fallback;
  const number = typeof value === 'string' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < 0 || number > max) {
    throw new Refusal(`field "${field}" must be an integer between 0 and ${max}`);
  }
  return number;
}

function portField(data: Record<string, unknown>, fallback: number): number {
  const port = integerField(data, 'port', fallback, 65_535);
  if (port === 0) throw new Refusal('field "port" must be an integer between 1 and 65535');
  return port;
}

function booleanField(data: Record<string, unknown>, field: string): boolean {
  const value = data[field];
  return value === true || value === 'true';
}

/** `host:port` as a person types it, with the vetted address added when the host was a name. */
function describeTarget(host: string, address: string, port: number): string {
  const shown = isIP(host) === 6 ? `[${host}]` : host;
  return host === address ? `${shown}:${port}` : `${shown}:${port} (${address})`;
}

async function vet(host: string, policy: AddressPolicy): Promise<{ address: string; family: 4 | 6 }> {
  const vetted = await vetHost(host, policy);
  if (!vetted.ok) throw new Refusal(vetted.message);
  return vetted;
}

/**
 * Runs `work` with a deadline that covers DNS, connect, handshake and the probe itself. On expiry
 * the signal aborts so the work tears down its socket; a server that accepts TCP and never answers
 * therefore fails at the deadline instead of hanging the request.
 */
async function withDeadline<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new TimedOut());
    }, ms);
  });
  const running = work(controller.signal);
  running.catch(() => undefined);
  try {
    return await Promise.race([running, expired]);
  } finally {
    clearTimeout(timer);
  }
}

const TLS_CERT_CODES = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
]);

/** Turns the socket-level errors every probe shares into a sentence naming the target. */
function describeSocketError(error: unknown, target: string): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  switch (code) {
    case 'ECONNREFUSED':
      return `connection refused on ${target}`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `connection reset by ${target}`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${target} is unreachable from this server (${code})`;
    case 'ETIMEDOUT':
      return `timed out connecting to ${target}`;
    default:
      if (code && TLS_CERT_CODES.has(code)) return `TLS certificate of ${target} was rejected: ${message}`;
      if (code?.startsWith('ERR_SSL') || code === 'EPROTO')
        return `TLS handshake with ${target} failed: ${message}`;
      return undefined;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function testPostgres(request: ConnectionTestRequest, timeoutMs: number): Promise<Outcome> {
  const { data } = request;
  const host = requireString(data, 'host');
  const database = requireString(data, 'database');
  const user = requireString(data, 'username');
  const port = portField(data, 5432);
  const password = optionalString(data, 'password');
  const ssl = booleanField(data, 'ssl');
  let target = `${host}:${port}`;
  try {
    return await withDeadline(timeoutMs, async (signal) => {
      const { address } = await vet(host, request.policy);
      target = describeTarget(host, address, port);
      const socket = new Socket();
      signal.addEventListener('abort', () => socket.destroy(), { once: true });
      if (signal.aborted) throw new TimedOut();
      // Loaded by the first test of its kind: the service itself may run on neither (PGlite, no Redis).
      const { default: pg } = await import('pg');
      const client = new pg.Client({
        host: address,
        port,
        database,
        user,
        // A function, because pg replaces a missing or empty password with this server's own
        // PGPASSWORD or ~/.pgpass entry and would send it to whatever host the user typed.
        password: () => password ?? '',
        // Connecting to the vetted address keeps DNS rebinding out; servername keeps the
        // certificate checked against the name the user typed.
        ssl: ssl ? (isIP(host) ? {} : { servername: host }) : false,
        stream: () => socket,
        connectionTimeoutMillis: timeoutMs,
        query_timeout: timeoutMs,
        application_name: 'credential-connection-test',
      });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
      } catch (error) {
        socket.destroy();
        throw error;
      }
      return pass(`connected to ${target}/${database} as ${user} (SELECT 1 ok)`);
    });
  } catch (error) {
    if (error instanceof Refusal) return fail(error.message);
    if (error instanceof TimedOut)
      return fail(`timed out after ${formatDuration(timeoutMs)} connecting to ${target}`);
    return fail(describePostgresError(error, { target, user, database, timeoutMs }));
  }
}

function describePostgresError(
  error: unknown,
  context: { target: string; user: string; database: string; timeoutMs: number },
): string {
  const { target, user, database, timeoutMs } = context;
  const sqlState = (error as { code?: string }).code;
  const message = errorMessage(error);
  switch (sqlState) {
    case '28P01':
    case '28000':
      return `authentication failed for user ${user}: ${message}`;
    case '3D000':
      return `database ${database} does not exist on ${target}`;
    case '53300':
      return `${target} refused the connection: too many connections`;
  }
  const socketError = describeSocketError(error, target);
  if (socketError) return socketError;
  if (/timeout expired|connection timeout|Query read timeout/i.test(message)) {
    return `timed out after ${formatDuration(timeoutMs)} connecting to ${target}`;
  }
  if (/does not support SSL/i.test(message))
    return `${target} does not accept SSL; turn ssl off in the credential`;
  if (/client password must be a string/i.test(message)) {
    return `authentication failed for user ${user}: the server asks for a password and the credential has none`;
  }
  if (/terminated unexpectedly/i.test(message)) {
    return `${target} closed the connection during the handshake; is it a PostgreSQL server?`;
  }
  return sqlState
    ? `${target} answered: ${message} (SQLSTATE ${sqlState})`
    : `could not connect to ${target}: ${message}`;
}

async function testRedis(request: ConnectionTestRequest, timeoutMs: number): Promise<Outcome> {
  const { data } = request;
  const host = requireString(data, 'host');
  const port = portField(data, 6379);
  const username = optionalString(data, 'username');
  const password = optionalString(data, 'password');
  const database = integerField(data, 'database', 0, 1_000_000);
  const tls = booleanField(data, 'tls');
  let target = `${host}:${port}`;
  let step = 'connect';
  let socketError: unknown;
  try {
    return await withDeadline(timeoutMs, async (signal) => {
      const { address } = await vet(host, request.policy);
      target = describeTarget(host, address, port);
      if (signal.aborted) throw new TimedOut();
      const { Redis } = await import('ioredis');
      const redis = new Redis({
        host: address,
        port,
        tls: tls ? (isIP(host) ? {} : { servername: host }) : undefined,
        lazyConnect: true,
        enableOfflineQueue: false,
        enableReadyCheck: false,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        reconnectOnError: () => false,
        connectTimeout: timeoutMs,
        commandTimeout: timeoutMs,
      });
      redis.on('error', (error: unknown) => {
        socketError ??= error;
      });
      signal.addEventListener('abort', () => redis.disconnect(), { once: true });
      try {
        await redis.connect();
        // AUTH and SELECT are sent here rather than through ioredis options so a refusal is
        // reported as such: ioredis only warns when a password is sent to a server without one.
        if (password !== undefined) {
          step = 'auth';
          await (username === undefined ? redis.auth(password) : redis.auth(username, password));
        }
        if (database !== 0) {
          step = 'select';
          await redis.select(database);
        }
        step = 'ping';
        const reply = await redis.ping();
        if (reply !== 'PONG') return fail(`${target} answered PING with an unexpected reply`);
        return pass(`PING to ${target} answered PONG${database === 0 ? '' : ` (database ${database})`}`);
      } finally {
        redis.disconnect();
      }
    });
  } catch (error) {
    if (error instanceof Refusal) return fail(error.message);
    if (error instanceof TimedOut) {
      const hint = tls ? '; check that the server speaks TLS' : '';
      return fail(`timed out after ${formatDuration(timeoutMs)} waiting for ${target}${hint}`);
    }
    return fail(describeRedisError(socketError ?? error, { target, step, username, database, timeoutMs }));
  }
}

function describeRedisError(
  error: unknown,
  context: { target: string; step: string; username?: string; database: number; timeoutMs: number },
): string {
  const { target, step, username, database, timeoutMs } = context;
  const message = errorMessage(error);
  const who = username ?? 'default';
  if (message.startsWith('WRONGPASS')) return `authentication failed for user ${who}: ${message}`;
  if (/without any password configured|no password is set/i.test(message)) {
    return `authentication failed for user ${who}: ${target} has no password configured, remove the password from the credential or set one on the server`;
  }
  if (message.startsWith('NOAUTH')) return `${target} requires a password and the credential has none`;
  if (step === 'select') return `database ${database} cannot be selected on ${target}: ${message}`;
  const socketError = describeSocketError(error, target);
  if (socketError) return socketError;
  if (/timed out/i.test(message)) return `timed out after ${formatDuration(timeoutMs)} waiting for ${target}`;
  if (/Connection is closed/i.test(message)) {
    return `${target} closed the connection during ${step}; is it a Redis server?`;
  }
  return `${step} to ${target} failed: ${message}`;
}

/**
 * Fills `{{field}}` placeholders. A placeholder that opens the template is a base URL
 * (`{{base_url}}/models`, `{{test_url}}`) and goes in as it is; any other is encoded.
 */
function fillTemplate(
  template: string,
  data: Record<string, unknown>,
  encode: (value: string) => string,
): string {
  return fillPlaceholders(template, (field, offset) => {
    const value = data[field];
    if (value === undefined || value === null || value === '' || typeof value === 'object') {
      throw new Refusal(`the test endpoint needs field "${field}", which the credential does not have`);
    }
    return offset === 0 ? String(value) : encode(String(value));
  });
}

/** The URL with secret placeholders as ***, no userinfo and no query, safe to store in a message. */
function displayUrl(template: string, data: Record<string, unknown>, secretFields: Set<string>): string {
  const shown = fillPlaceholders(template, (field, offset) => {
    const value = data[field];
    if (secretFields.has(field) || value === undefined || value === null) return '***';
    return offset === 0 ? String(value) : encodeURIComponent(String(value));
  });
  try {
    const url = new URL(shown);
    url.username = '';
    url.password = '';
    return `${url.origin}${url.pathname}${url.search === '' ? '' : '?…'}`;
  } catch {
    return template;
  }
}

/**
 * Pins the connection to the vetted address. node:http keeps the URL's host name for the Host header
 * and for TLS SNI and certificate checks, so https stays verified against the real name while the
 * socket goes only where the guard allowed; fetch cannot be pinned this way without re-resolving.
 */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

async function testHttp(request: ConnectionTestRequest, timeoutMs: number): Promise<Outcome> {
  const { data, endpoint } = request;
  if (!endpoint?.url) return fail('this credential type has no HTTP test endpoint configured');
  const secrets = new Set([...request.secretFields, ...ALWAYS_SECRET_FIELDS]);
  const shownUrl = displayUrl(endpoint.url, data, secrets);
  const expected = endpoint.expected_status?.length ? endpoint.expected_status : [200];
  try {
    const url = new URL(fillTemplate(endpoint.url, data, encodeURIComponent));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      return fail(`the test endpoint must use http or https, not ${url.protocol.slice(0, -1)}`);
    }
    const headers: Record<string, string> = { 'user-agent': 'credential-connection-test', accept: '*/*' };
    for (const [name, value] of Object.entries(endpoint.headers ?? {})) {
      headers[name.toLowerCase()] = fillTemplate(value, data, (text) => text);
    }
    if ((url.username || url.password) && headers.authorization === undefined) {
      const userinfo = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      headers.authorization = `Basic ${Buffer.from(userinfo).toString('base64')}`;
    }
    url.username = '';
    url.password = '';
    const status = await withDeadline(timeoutMs, async (signal) => {
      const { address, family } = await vet(url.hostname, request.policy);
      const client = url.protocol === 'https:' ? https : http;
      return new Promise<{ code: number; location?: string }>((resolve, reject) => {
        const outgoing = client.request(
          url,
          { method: 'GET', headers, agent: false, signal, lookup: pinnedLookup(address, family) },
          (response) => {
            resolve({ code: response.statusCode ?? 0, location: response.headers.location });
            response.destroy();
          },
        );
        outgoing.on('error', reject);
        outgoing.end();
      });
    });
    const summary = `HTTP ${status.code} from ${shownUrl}`;
    if (expected.includes(status.code)) return pass(summary);
    const wanted = `expected ${expected.join(' or ')}`;
    if (status.code >= 300 && status.code < 400) {
      const target = status.location && URL.canParse(status.location, url.href) ? status.location : undefined;
      const to = target ? ` to ${displayUrl(new URL(target, url).href, {}, secrets)}` : '';
      return fail(`${summary} redirects${to}; redirects are not followed (${wanted})`);
    }
    return fail(`${summary} (${wanted})`);
  } catch (error) {
    if (error instanceof Refusal) return fail(error.message);
    if (error instanceof TimedOut)
      return fail(`timed out after ${formatDuration(timeoutMs)} waiting for ${shownUrl}`);
    if (error instanceof TypeError && /Invalid URL/i.test(error.message)) {
      return fail(`the test endpoint URL is not valid once filled: ${endpoint.url}`);
    }
    const target = shownUrl;
    return fail(describeSocketError(error, target) ?? `GET ${target} failed: ${errorMessage(error)}`);
  }
}

function testOAuth2(data: Record<string, unknown>): Outcome {
  const token = data.access_token;
  return typeof token === 'string' && token.trim() !== ''
    ? pass('access token present')
    : fail('no access_token: authorise the credential again to obtain one');
}

async function runTest(request: ConnectionTestRequest): Promise<Outcome> {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...request.timeouts };
  switch (request.kind) {
    case 'postgres':
      return testPostgres(request, timeouts.databaseMs);
    case 'redis':
      return testRedis(request, timeouts.cacheMs);
    case 'http':
      return testHttp(request, timeouts.httpMs);
    case 'oauth2':
      return testOAuth2(request.data);
    case 'none':
      return fail('this credential type has no connection test');
    default:
      return fail(`unknown connection test kind "${String(request.kind)}"`);
  }
}

/**
 * Tests decrypted credential data against the real service (rule T) so a user learns whether a
 * credential works before a workflow depends on it. It never throws: every failure, including a
 * refused address or a missing field, is a result whose message says what to fix and has every
 * secret value replaced by ***, because the message is stored and shown to other members.
 */
export async function testConnection(request: ConnectionTestRequest): Promise<ConnectionTestResult> {
  const started = performance.now();
  const data = request.data ?? {};
  const userinfo = request.endpoint?.url ? userinfoSecrets(request.endpoint.url, data) : [];
  const scrub = createScrubber([...secretValues(data, request.secretFields ?? []), ...userinfo]);
  let outcome: Outcome;
  try {
    outcome = await runTest({ ...request, data, secretFields: request.secretFields ?? [] });
  } catch (error) {
    outcome =
      error instanceof Refusal
        ? fail(error.message)
        : fail(`the connection test failed unexpectedly: ${errorMessage(error)}`);
  }
  return {
    passed: outcome.passed,
    message: scrub(outcome.message),
    duration_ms: Math.round(performance.now() - started),
  };
}

/** Userinfo of the filled URL (user and password, raw and decoded), which must never be shown. */
function userinfoSecrets(template: string, data: Record<string, unknown>): string[] {
  try {
    const url = new URL(fillTemplate(template, data, encodeURIComponent));
    return [url.username, url.password, decodeURIComponent(url.username), decodeURIComponent(url.password)];
  } catch {
    return [];
  }
}
