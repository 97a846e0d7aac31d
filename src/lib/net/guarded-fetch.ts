import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { type AddressPolicy, vetHost } from './address-guard.ts';

/** The `fetch` signature the AI SDK's providers and the tools accept. */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Thrown when the address guard refuses a URL; the message says why and names no secret. */
export class AddressRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AddressRefusedError';
  }
}

/**
 * Idle keep-alive sockets close after this long (ms): below the 5 s that Node's and uvicorn's
 * servers keep an idle connection, so a socket is not reused just as the server closes it.
 */
const IDLE_SOCKET_MS = 4_000;
const MAX_PINNED_AGENTS = 256;
const pinnedAgents = new Map<string, http.Agent>();

/**
 * The keep-alive agent of one vetted address (protocol, address and port): a provider's
 * sockets are reused across calls instead of a TCP (and TLS) handshake per model call. Keyed
 * by the address the guard vetted for this request, so a pooled socket only ever leads where
 * a fresh one would; the host name is part of the agent's own pool key (Host header, SNI).
 */
function pinnedAgent(protocol: string, address: string, port: string): http.Agent {
  const key = `${protocol}//[${address}]:${port}`;
  const found = pinnedAgents.get(key);
  if (found) return found;
  const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const, maxSockets: 256 };
  const agent = protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
  if (pinnedAgents.size >= MAX_PINNED_AGENTS) {
    const [oldest, evicted] = pinnedAgents.entries().next().value as [string, http.Agent];
    pinnedAgents.delete(oldest);
    evicted.destroy();
  }
  pinnedAgents.set(key, agent);
  return agent;
}

/** Statuses whose response has no body (a `Response` refuses one). */
const NO_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * A `fetch` for URLs a user chose (LLM base URLs, the `http_request` tool): every request's
 * host is resolved once and vetted by the address guard under `policy`, and the socket is
 * pinned to that vetted address (the name stays in the Host header and TLS SNI, so HTTPS is
 * still verified against it). The global fetch cannot be pinned without re-resolving, which
 * would let a DNS answer that changes between check and connect (rebinding) redirect it.
 * Redirects are never followed: a 3xx is answered as it is. `policy` is read per request, so a
 * workspace's setting applies from its next request. Sockets are kept alive per vetted address.
 */
export function createGuardedFetch(policy: () => AddressPolicy | Promise<AddressPolicy>): FetchFunction {
  return async (input, init = {}) => {
    const request = input instanceof Request ? input : undefined;
    const url = new URL(request ? request.url : input instanceof URL ? input.href : input);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new AddressRefusedError(
        `only http and https URLs may be fetched, not ${url.protocol.slice(0, -1)}`,
      );
    }
    const signal = init.signal ?? request?.signal ?? undefined;
    signal?.throwIfAborted();
    const vetted = await vetHost(url.hostname, await policy());
    if (!vetted.ok) throw new AddressRefusedError(vetted.message);
    signal?.throwIfAborted();

    const headers = new Headers(request?.headers);
    for (const [name, value] of new Headers(init.headers)) headers.set(name, value);
    const body = bodyBytes(init.body);
    if (body && !headers.has('content-length')) headers.set('content-length', String(body.byteLength));
    const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
    const client = url.protocol === 'https:' ? https : http;

    return new Promise<Response>((resolve, reject) => {
      const outgoing = client.request(
        url,
        {
          method,
          headers: Object.fromEntries(headers),
          agent: pinnedAgent(url.protocol, vetted.address, url.port),
          lookup: pinnedLookup(vetted.address, vetted.family),
          ...(signal ? { signal } : {}),
        },
        (incoming) => {
          const status = incoming.statusCode ?? 502;
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) {
            if (value === undefined) continue;
            for (const item of Array.isArray(value) ? value : [value]) responseHeaders.append(name, item);
          }
          const stream =
            NO_BODY.has(status) || method === 'HEAD' ? null : (Readable.toWeb(incoming) as ReadableStream);
          if (!stream) incoming.resume();
          resolve(
            new Response(stream, {
              status,
              statusText: incoming.statusMessage ?? '',
              headers: responseHeaders,
            }),
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  };
}

/** The request body as bytes; the callers here send text or bytes, never streams or forms. */
function bodyBytes(body: RequestInit['body']): Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (body instanceof URLSearchParams) return Buffer.from(body.toString());
  throw new TypeError('guarded fetch sends string or byte bodies only');
}

/** Connects to the vetted address whatever name the URL carries. */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}
