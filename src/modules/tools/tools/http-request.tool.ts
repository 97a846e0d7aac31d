import { Type } from 'typebox';
import { AppError } from '../../../errors.ts';
import { AddressRefusedError } from '../../../lib/net/guarded-fetch.ts';
import { fillPlaceholders, placeholdersOf } from '../../../lib/placeholders.ts';
import { StringEnum } from '../../../lib/typebox.ts';
import { defineTool, type ToolContext, ToolError } from '../tool.ts';

/** Bytes of a response body handed to the model; the rest is cut and `truncated` says so. */
export const MAX_RESPONSE_BYTES = 32_768;
/** How long one request may take unless the agent's tool config says otherwise. */
export const DEFAULT_TIMEOUT_MS = 15_000;

/** Response headers worth showing the model; the others (cookies above all) are left out. */
const SHOWN_HEADERS = ['content-type', 'content-length', 'location', 'retry-after', 'etag', 'last-modified'];

/** Request headers the model may not set: the vault's credential decides authentication. */
const RESERVED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'host',
  'content-length',
]);

const Input = Type.Object(
  {
    method: StringEnum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const),
    url: Type.String({ minLength: 1, maxLength: 2000, description: 'absolute http or https URL' }),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: '^[A-Za-z0-9-]{1,100}$' }), Type.String({ maxLength: 2000 }), {
        maxProperties: 30,
        description: 'request headers; authentication comes from credential_id, not from here',
      }),
    ),
    body: Type.Optional(
      Type.String({ maxLength: 100_000, description: 'request body as text (JSON as a string)' }),
    ),
    credential_id: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'a vault credential this agent may use; the platform adds its authentication headers, which you never see, and only for the hosts the credential belongs to',
      }),
    ),
  },
  { additionalProperties: false },
);

const Config = Type.Object(
  {
    credentials: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1, maximum: 2_147_483_647 }), {
        maxItems: 20,
        uniqueItems: true,
        description: 'vault credential ids the model may name in credential_id; none when absent',
      }),
    ),
    allowed_hosts: Type.Optional(
      Type.Array(Type.String({ pattern: '^(\\*\\.)?[A-Za-z0-9.-]{1,253}$' }), {
        maxItems: 50,
        description:
          'host names the tool may call (`*.example.com` matches subdomains); any host when absent',
      }),
    ),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 60_000 })),
  },
  { additionalProperties: false },
);

/**
 * `http_request`: the model calls an HTTP API. Credentials are injected by reference: the model
 * names a credential the agent's config allows, the platform decrypts it through the vault
 * (audited as `tool:http_request`) and adds the headers its type authenticates with (the type's
 * test-endpoint headers: `Authorization: Bearer {{token}}`, `X-API-Key: {{api_key}}`, ...). The
 * model never sees the values, and any echo of them in the response is replaced by
 * `[redacted]`. The vault hands a credential out only for a host among its `allowed_hosts`
 * (rule C3b, docs/vault.md). The outbound address guard applies, redirects are not followed,
 * and the body handed back is cut at `MAX_RESPONSE_BYTES`.
 */
export default defineTool({
  name: 'http_request',
  description:
    'Send an HTTP request and get the status, a few headers and the body (text, cut at 32 KiB). ' +
    'To authenticate, pass credential_id: the platform adds the credential, you never see it.',
  input: Input,
  config: Config,
  async execute(input, context) {
    let url: URL;
    try {
      url = new URL(input.url);
    } catch {
      throw new ToolError(`url is not an absolute URL: ${input.url.slice(0, 200)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ToolError(`only http and https URLs are allowed, not ${url.protocol.slice(0, -1)}`);
    }
    if (url.username || url.password) {
      throw new ToolError('credentials in the URL are not allowed; pass credential_id instead');
    }
    const hosts = context.config.allowed_hosts;
    if (hosts && !hosts.some((pattern) => hostMatches(url.hostname, pattern))) {
      throw new ToolError(`host ${url.hostname} is not among this agent's allowed hosts`);
    }

    const headers = new Headers();
    for (const [name, value] of Object.entries(input.headers ?? {})) {
      if (RESERVED_HEADERS.has(name.toLowerCase())) {
        throw new ToolError(`header ${name} may not be set; authentication comes from credential_id`);
      }
      headers.set(name, value);
    }
    const secrets =
      input.credential_id === undefined
        ? []
        : await addCredential(input.credential_id, url, headers, context);

    const timeoutMs = context.config.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    const signal = AbortSignal.any([context.signal, AbortSignal.timeout(timeoutMs)]);
    let response: Response;
    try {
      response = await context.services.fetch(url, {
        method: input.method,
        headers,
        ...(input.body === undefined || input.method === 'GET' || input.method === 'HEAD'
          ? {}
          : { body: input.body }),
        signal,
      });
    } catch (error) {
      context.signal.throwIfAborted();
      if (signal.aborted) throw new ToolError(`no answer from ${url.host} within ${timeoutMs} ms`);
      if (error instanceof AddressRefusedError) throw new ToolError(error.message);
      const code = (error as NodeJS.ErrnoException).code;
      throw new ToolError(`the request to ${url.host} failed${code ? ` (${code})` : ''}`);
    }
    const { text, truncated } = await readCapped(response, signal).catch(() => {
      context.signal.throwIfAborted();
      throw new ToolError(`the answer from ${url.host} broke off or took longer than ${timeoutMs} ms`);
    });
    const scrub = scrubber(secrets);
    const shown = Object.fromEntries(
      SHOWN_HEADERS.flatMap((name) => {
        const value = response.headers.get(name);
        return value === null ? [] : [[name, scrub(value)]];
      }),
    );
    return { status: response.status, headers: shown, body: scrub(text), truncated };
  },
});

/** `example.com` matches itself only; `*.example.com` matches its subdomains. */
function hostMatches(host: string, pattern: string): boolean {
  const name = host.toLowerCase();
  const wanted = pattern.toLowerCase();
  return wanted.startsWith('*.') ? name.endsWith(wanted.slice(1)) : name === wanted;
}

/**
 * Adds the credential's authentication headers, as its type's test endpoint sends them (OAuth
 * tokens as a bearer), and returns the secret values that must never reach the model. The vault
 * hands them out only for a URL whose host is among the credential's allowed hosts (rule C3b),
 * so neither the model nor whoever configured the agent can send them anywhere else; the access
 * record names the agent, the run or conversation and the destination.
 */
async function addCredential(
  id: number,
  url: URL,
  headers: Headers,
  context: ToolContext<{ credentials?: number[] }>,
): Promise<string[]> {
  if (!(context.config.credentials ?? []).includes(id)) {
    throw new ToolError(`credential ${id} is not available to this agent's http_request tool`);
  }
  const caller = { workspaceId: context.workspaceId, userId: context.userId };
  const { credentials } = context.services;
  try {
    const credential = await credentials.get(caller, id);
    const type = await credentials.getType(caller, credential.credential_type_id);
    const templates: Record<string, string> =
      type.test_endpoint?.kind === 'oauth2'
        ? { Authorization: 'Bearer {{access_token}}' }
        : type.test_endpoint?.kind === 'http'
          ? (type.test_endpoint.headers ?? {})
          : {};
    const fields = [...new Set(Object.values(templates).flatMap((template) => placeholdersOf(template)))];
    if (fields.length === 0) {
      throw new ToolError(`credential ${id} (${type.name}) does not authenticate HTTP requests`);
    }
    const data = await credentials.access({
      workspaceId: context.workspaceId,
      id,
      fields,
      serviceName: 'tool:http_request',
      userId: context.userId,
      destination: { url, allowedOnly: true },
      usedBy: context.usedBy,
    });
    const secrets: string[] = [];
    for (const [name, template] of Object.entries(templates)) {
      const value = fillPlaceholders(template, (field) => {
        const filled = data[field];
        if (filled === undefined || filled === null || filled === '') {
          throw new ToolError(`credential ${id} has no ${field}, which its type authenticates with`);
        }
        secrets.push(String(filled));
        return String(filled);
      });
      headers.set(name, value);
      secrets.push(value);
    }
    return secrets;
  } catch (error) {
    if (error instanceof AppError)
      throw new ToolError(`credential ${id}: ${error.message}`, { cause: error });
    throw error;
  }
}

/** Reads at most `MAX_RESPONSE_BYTES` of the body, then stops reading (the rest is never fetched). */
async function readCapped(
  response: Response,
  signal: AbortSignal,
): Promise<{ text: string; truncated: boolean }> {
  if (!response.body) return { text: '', truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    for (;;) {
      signal.throwIfAborted();
      const { done, value } = await reader.read();
      if (done) break;
      if (size + value.byteLength > MAX_RESPONSE_BYTES) {
        chunks.push(value.subarray(0, MAX_RESPONSE_BYTES - size));
        truncated = true;
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks)), truncated };
}

/** Replaces every secret value (raw, URL-encoded and base64) in text the model will read. */
function scrubber(secrets: string[]): (text: string) => string {
  const forms = [
    ...new Set(
      secrets
        .filter((secret) => secret.length >= 4)
        .flatMap((secret) => [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')]),
    ),
  ].sort((a, b) => b.length - a.length);
  return (text) => forms.reduce((out, secret) => out.split(secret).join('[redacted]'), text);
}
