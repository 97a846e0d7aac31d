import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { codegraphOf } from '../../../tests/helpers/codegraph.ts';
import {
  embedText,
  type LlmServer,
  startAnthropicServer,
  startOpenAiServer,
} from '../../../tests/helpers/llm-servers.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import type { Role } from '../../caller.ts';
import { AppError } from '../../errors.ts';
import { type AddressPolicy, cidrRange, workspaceAddressPolicy } from '../../lib/net/address-guard.ts';
import { testConnection } from '../credentials/connection-tester.ts';
import { createCredentialsService } from '../credentials/credentials.service.ts';
import { createVaultKeys, loadKeyring } from '../credentials/vault-keys.ts';
import { createRetrievalService } from '../retrieval/retrieval.service.ts';
import { createSettingsService } from '../settings/settings.service.ts';
import { loadToolDefinitions } from '../tools/tool-registry.ts';
import { createToolsService } from '../tools/tools.service.ts';
import { createWorkspacesService } from '../workspaces/workspaces.service.ts';
import { createModelGateway, HEALTH_CACHE_MS } from './ai-gateway.ts';
import {
  createModelTurns,
  type ModelEvent,
  type ModelGateway,
  type ModelRequest,
  type ModelTurns,
} from './model-gateway.ts';
import { createProvidersService, type ProviderSettingsChanges } from './providers.service.ts';

/**
 * The model gateway on a real database, wired as `src/services.ts` wires it (settings, the vault,
 * the tool registry), against loopback servers that speak the OpenAI and Anthropic protocols:
 * streaming, usage and cost, keys from the vault, fallback on errors, 429s and timeouts, the
 * end of fallback once output started, aborts, tool round trips with injected credentials, the
 * address guard, and health.
 */

let db: TestDb;
let credentials: ReturnType<typeof createCredentialsService>;
let providers: ReturnType<typeof createProvidersService>;
let workspaces: ReturnType<typeof createWorkspacesService>;
let settings: ReturnType<typeof createSettingsService>;
let tools: ReturnType<typeof createToolsService>;
let gateway: ModelGateway;
/** The gateway as chat and runs call it: tools named, bound per turn. */
let turns: ModelTurns;
let openai: LlmServer;
let backup: LlmServer;
let anthropic: LlmServer;

const OPENAI_KEY = 'sk-gateway-canary-41c7';
const ANTHROPIC_KEY = 'sk-ant-gateway-canary-9e02';
const TOOL_TOKEN = 'tool-token-canary-d83b';

/** The vault's policy as `services.ts` builds it; loopback allowed when the operator lists it. */
const policyOf =
  (allowLoopback: boolean) =>
  async (workspaceId: string): Promise<AddressPolicy> =>
    workspaceAddressPolicy(
      { allowPrivateNetworks: false, allowed: allowLoopback ? [cidrRange('127.0.0.0/8')] : [] },
      (await settings.get(workspaceId, 'credentials')).refuse_private_networks,
    );

beforeAll(async () => {
  db = await createTestDb();
  const { keyring } = loadKeyring({
    encryptionKey: randomBytes(32).toString('base64'),
    previousKeys: [],
    dataDir: os.tmpdir(),
  });
  settings = createSettingsService(db.database.db);
  workspaces = createWorkspacesService(db.database.db);
  credentials = createCredentialsService({
    db: db.database.db,
    settings,
    keys: createVaultKeys(db.database.db, keyring),
    testConnection,
  });
  const addressPolicy = policyOf(true);
  providers = createProvidersService({ db: db.database.db, settings, credentials, addressPolicy });
  gateway = createModelGateway({ settings, credentials, addressPolicy });
  const retrieval = createRetrievalService({ db: db.database.db, models: gateway, settings, credentials });
  tools = createToolsService({
    definitions: await loadToolDefinitions(),
    credentials,
    codegraph: codegraphOf(db),
    addressPolicy,
    knowledge: retrieval,
  });
  turns = createModelTurns({ gateway, tools });
  [openai, backup, anthropic] = await Promise.all([
    startOpenAiServer(),
    startOpenAiServer(),
    startAnthropicServer(),
  ]);
});
afterAll(async () => {
  await Promise.all([openai.close(), backup.close(), anthropic.close()]);
  await db.close();
});

interface Owner {
  userId: string;
  workspaceId: string;
  tenantId: string;
  role: Role;
}

let seq = 0;
async function newOwner(): Promise<Owner> {
  seq += 1;
  const userId = `gateway-${seq}`;
  const workspace = await workspaces.createWorkspace(userId, { name: `${userId} workspace` });
  return { userId, workspaceId: workspace.id, tenantId: workspace.tenant.id, role: 'owner' };
}

async function credential(owner: Owner, type: string, data: Record<string, unknown>) {
  const types = await credentials.listTypes(owner, {});
  const typeId = types.find((item) => item.name === type)?.id;
  if (typeId === undefined) throw new Error(`no credential type ${type}`);
  return credentials.create(owner, { name: `${type}-${++seq}`, credential_type_id: typeId, data });
}

/** A workspace with providers `a` (OpenAI-compatible, keyed), `b` (the backup server) and `claude`. */
async function configured(changes: ProviderSettingsChanges = {}, timeoutMs = 5_000) {
  const owner = await newOwner();
  const openaiKey = await credential(owner, 'openai_credentials', { api_key: OPENAI_KEY });
  const anthropicKey = await credential(owner, 'anthropic_credentials', { api_key: ANTHROPIC_KEY });
  await providers.update(owner, {
    providers: [
      {
        id: 'a',
        kind: 'openai_compatible',
        base_url: openai.url,
        credential_id: openaiKey.id,
        timeout_ms: timeoutMs,
      },
      { id: 'b', kind: 'openai_compatible', base_url: backup.url, timeout_ms: timeoutMs },
      {
        id: 'claude',
        kind: 'anthropic',
        base_url: anthropic.url,
        credential_id: anthropicKey.id,
        timeout_ms: timeoutMs,
      },
    ],
    default_model: { provider: 'a', name: 'model-a' },
    prices: [
      { provider: 'a', name: 'model-a', input_per_million: 3, output_per_million: 15 },
      { provider: 'claude', name: 'claude-x', input_per_million: 1, output_per_million: 5 },
    ],
    ...changes,
  });
  return owner;
}

const turn = (owner: Owner, overrides: Partial<ModelRequest> = {}): ModelRequest => ({
  workspaceId: owner.workspaceId,
  userId: owner.userId,
  messages: [{ role: 'user', content: 'Hello?' }],
  signal: new AbortController().signal,
  ...overrides,
});

async function collect(request: ModelRequest): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of turns.stream(request)) events.push(event);
  return events;
}

const finishOf = (events: ModelEvent[]) => {
  const finish = events.at(-1);
  if (finish?.type !== 'finish') throw new Error(`the turn ended with ${finish?.type}`);
  return finish;
};

/** What `promise` rejected with. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('health', () => {
  it('is not_configured until a workspace has a provider, then probes the endpoints without a key, cached', async () => {
    let clock = 0;
    const probed = await startOpenAiServer();
    const watcher = createModelGateway({
      settings,
      credentials,
      addressPolicy: policyOf(true),
      now: () => clock,
    });
    try {
      expect(await watcher.health()).toMatchObject({ name: 'LLM Providers', status: 'not_configured' });
      const owner = await newOwner();
      const key = await credential(owner, 'openai_credentials', { api_key: OPENAI_KEY });
      await providers.update(owner, {
        providers: [{ id: 'p', kind: 'openai_compatible', base_url: probed.url, credential_id: key.id }],
        default_model: { provider: 'p', name: 'm' },
      });
      expect((await watcher.health()).status).toBe('not_configured');
      clock += HEALTH_CACHE_MS + 1;
      // The last known state answers at once; the probe that read starts answers the next reads.
      expect((await watcher.health()).status).toBe('not_configured');
      await vi.waitFor(async () =>
        expect(await watcher.health()).toMatchObject({
          status: 'up',
          detail: '1 provider(s) in 1 workspace(s); 1 of 1 probed endpoint(s) reachable',
        }),
      );
      expect(await watcher.workspaceHealth(owner.workspaceId)).toMatchObject({
        status: 'up',
        detail: '1 provider(s); 1 of 1 probed endpoint(s) reachable',
      });
      expect(probed.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models']);
      expect(probed.requests[0]?.headers.authorization).toBeUndefined();
      await probed.close();
      clock += HEALTH_CACHE_MS + 1;
      await watcher.health();
      await vi.waitFor(async () => expect(await watcher.health()).toMatchObject({ status: 'down' }));
      expect(await watcher.workspaceHealth(owner.workspaceId)).toMatchObject({ status: 'down' });
      // A workspace without providers learns nothing about the others'.
      const other = await newOwner();
      expect(await watcher.workspaceHealth(other.workspaceId)).toEqual({
        name: 'LLM Providers',
        status: 'not_configured',
        detail: 'this workspace configured no provider: the built-in local provider answers',
      });
    } finally {
      await probed.close();
    }
  });

  it('answers from the last known state at once: a slow endpoint is probed again in the background', async () => {
    let clock = 0;
    let delayMs = 0;
    const slow = http.createServer((_request, response) => {
      setTimeout(() => response.writeHead(401).end(), delayMs);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const watcher = createModelGateway({
      settings,
      credentials,
      addressPolicy: policyOf(true),
      now: () => clock,
    });
    try {
      const owner = await newOwner();
      await providers.update(owner, {
        providers: [
          {
            id: 'slow',
            kind: 'openai_compatible',
            base_url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v1`,
          },
        ],
        default_model: { provider: 'slow', name: 'm' },
      });
      // Nothing known yet: the first read waits for the probe.
      expect(await watcher.workspaceHealth(owner.workspaceId)).toMatchObject({ status: 'up' });
      delayMs = 1_500;
      clock += HEALTH_CACHE_MS + 1;
      for (let read = 0; read < 3; read += 1) {
        const started = performance.now();
        expect(await watcher.workspaceHealth(owner.workspaceId)).toMatchObject({ status: 'up' });
        expect(performance.now() - started).toBeLessThan(500);
      }
    } finally {
      slow.closeAllConnections();
      await new Promise((resolve) => slow.close(resolve));
    }
  });
});

describe('health after a database outage', () => {
  it('does not keep a failed read of the provider settings: the next check reads them again', async () => {
    let fail = true;
    const flaky: typeof settings = {
      ...settings,
      valuesAcrossWorkspaces: (...args) =>
        fail ? Promise.reject(new Error('connection refused')) : settings.valuesAcrossWorkspaces(...args),
    };
    const watcher = createModelGateway({
      settings: flaky,
      credentials,
      addressPolicy: policyOf(true),
      now: () => 0,
    });
    expect(await watcher.health()).toMatchObject({
      status: 'down',
      detail: 'the provider settings could not be read',
    });
    fail = false;
    expect((await watcher.health()).detail).not.toBe('the provider settings could not be read');
  });
});

describe('streaming', () => {
  it('streams an OpenAI-compatible answer with the provider’s usage, the workspace’s price and the vault’s key', async () => {
    const owner = await configured();
    openai.reply({ type: 'text', text: ['Hi', ' there'], usage: { input_tokens: 1000, output_tokens: 200 } });
    const events = await collect(turn(owner, { system: 'Be kind.' }));
    expect(events.slice(0, -1)).toEqual([
      { type: 'delta', text: 'Hi' },
      { type: 'delta', text: ' there' },
    ]);
    expect(finishOf(events)).toMatchObject({
      text: 'Hi there',
      usage: { input_tokens: 1000, output_tokens: 200 },
      provider: 'a',
      model: 'model-a',
      fallbacks: [],
    });
    expect(finishOf(events).cost).toBeCloseTo((1000 * 3 + 200 * 15) / 1_000_000, 12);
    const request = openai.modelRequests().at(-1);
    expect(request?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(request?.body.messages).toEqual([
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'Hello?' },
    ]);
    const keyId = (await providers.get(owner)).providers[0]?.credential_id as number;
    const audit = await credentials.auditLogs(owner, keyId, { limit: 10, offset: 0, action: 'accessed' });
    expect(audit.items[0]).toMatchObject({
      action: 'accessed',
      user_id: owner.userId,
      metadata: { service_name: 'llm', fields_accessed: ['api_key'] },
    });
  });

  it('streams an Anthropic answer, the key in x-api-key and the system prompt apart', async () => {
    const owner = await configured({ default_model: { provider: 'claude', name: 'claude-x' } });
    anthropic.reply({ type: 'text', text: ['Bonjour', '!'], usage: { input_tokens: 40, output_tokens: 2 } });
    const events = await collect(turn(owner, { system: 'Answer in French.' }));
    expect(events.filter((e) => e.type === 'delta').map((e) => (e as { text: string }).text)).toEqual([
      'Bonjour',
      '!',
    ]);
    expect(finishOf(events)).toMatchObject({
      provider: 'claude',
      model: 'claude-x',
      usage: { input_tokens: 40, output_tokens: 2 },
    });
    expect(finishOf(events).cost).toBeCloseTo((40 * 1 + 2 * 5) / 1_000_000, 12);
    const request = anthropic.modelRequests().at(-1);
    expect(request?.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(request?.body).toMatchObject({
      model: 'claude-x',
      stream: true,
      system: [{ type: 'text', text: 'Answer in French.' }],
    });
  });

  it('uses the request’s model over the workspace default', async () => {
    const owner = await configured();
    backup.reply({ type: 'text', text: 'from b' });
    const events = await collect(turn(owner, { model: { provider: 'b', name: 'model-b' } }));
    expect(finishOf(events)).toMatchObject({ provider: 'b', model: 'model-b', text: 'from b', cost: 0 });
    expect(backup.modelRequests().at(-1)?.headers.authorization).toBeUndefined();
  });

  it('answers with the built-in local provider when the workspace has no provider', async () => {
    const owner = await newOwner();
    const events = await collect(turn(owner, { model: { provider: 'openai', name: 'gpt-4o' } }));
    expect(finishOf(events)).toMatchObject({ provider: 'local', model: 'echo', cost: 0 });
    expect(finishOf(events).text).toContain('this agent asks for openai/gpt-4o');
  });
});

describe('fallback', () => {
  it('moves on after a 500, a 429 and a timeout, and reports every attempt', async () => {
    const owner = await configured(
      {
        fallback: [
          { provider: 'claude', name: 'claude-x' },
          { provider: 'b', name: 'slow' },
          { provider: 'a', name: 'model-a2' },
        ],
      },
      400,
    );
    openai.reply({ type: 'error', status: 500, message: 'boom' }, { type: 'text', text: 'finally' });
    anthropic.reply({ type: 'error', status: 429, message: 'slow down' });
    backup.reply({ type: 'text', text: 'too late', firstByteDelayMs: 1_500 });
    const events = await collect(turn(owner));
    expect(events.filter((e) => e.type === 'delta')).toEqual([{ type: 'delta', text: 'finally' }]);
    expect(finishOf(events)).toMatchObject({
      provider: 'a',
      model: 'model-a2',
      fallbacks: [
        { provider: 'a', model: 'model-a', error: 'HTTP 500: boom' },
        { provider: 'claude', model: 'claude-x', error: 'HTTP 429: slow down' },
        { provider: 'b', model: 'slow', error: 'no output within 400 ms' },
      ],
    });
    const slow = backup.modelRequests().at(-1);
    await slow?.closed;
    expect(slow?.closedEarly).toBe(true);
  });

  it('lets the local provider close the fallback list, naming the failures before it', async () => {
    const owner = await configured({ fallback: [{ provider: 'local', name: 'echo' }] });
    openai.reply({ type: 'error', status: 503 });
    const events = await collect(turn(owner));
    expect(finishOf(events)).toMatchObject({
      provider: 'local',
      fallbacks: [{ provider: 'a', model: 'model-a', error: 'HTTP 503: scripted error 503' }],
    });
  });

  it('fails with 502 provider_error listing each attempt when every model fails', async () => {
    const owner = await configured({
      fallback: [
        { provider: 'a', name: 'model-a' },
        { provider: 'claude', name: 'claude-x' },
      ],
    });
    openai.reply({ type: 'error', status: 500, message: `bad key ${OPENAI_KEY}` });
    anthropic.reply({ type: 'error', status: 429 });
    // An agent may name a provider this workspace does not have: that attempt fails without a call.
    const error = await rejection(collect(turn(owner, { model: { provider: 'gone', name: 'x' } })));
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({
      status: 502,
      code: 'provider_error',
      errors: [
        { field: 'gone/x', message: 'provider "gone" is not configured in this workspace' },
        { field: 'a/model-a', message: 'HTTP 500: bad key [redacted]' },
        { field: 'claude/claude-x', message: 'HTTP 429: scripted error 429' },
      ],
    });
    expect(JSON.stringify(error)).not.toContain(OPENAI_KEY);
  });

  it('fails with 504 provider_timeout when every model timed out', async () => {
    const owner = await configured({ fallback: [{ provider: 'b', name: 'model-b' }] }, 300);
    openai.reply({ type: 'text', text: 'late', firstByteDelayMs: 1_000 });
    backup.reply({ type: 'text', text: 'late', firstByteDelayMs: 1_000 });
    const error = await rejection(collect(turn(owner)));
    expect(error).toMatchObject({
      status: 504,
      code: 'provider_timeout',
      errors: [
        { field: 'a/model-a', message: 'no output within 300 ms' },
        { field: 'b/model-b', message: 'no output within 300 ms' },
      ],
    });
  });

  it('does not fall back once output has started: the failure is final', async () => {
    const owner = await configured({ fallback: [{ provider: 'b', name: 'model-b' }] }, 300);
    openai.reply({ type: 'text', text: ['half '], holdOpen: true });
    const calls = backup.modelRequests().length;
    const events: ModelEvent[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of turns.stream(turn(owner))) events.push(event);
      })(),
    );
    expect(events).toEqual([{ type: 'delta', text: 'half ' }]);
    expect(error).toMatchObject({ status: 504, code: 'provider_timeout' });
    expect((error as Error).message).toContain('no fallback once output has been sent');
    expect(backup.modelRequests()).toHaveLength(calls);
  });

  it('refuses a provider address the policy forbids at call time and falls back', async () => {
    const owner = await configured({ fallback: [{ provider: 'local', name: 'echo' }] });
    const strict = createModelTurns({
      gateway: createModelGateway({ settings, credentials, addressPolicy: policyOf(false) }),
      tools,
    });
    const calls = openai.modelRequests().length;
    const events: ModelEvent[] = [];
    for await (const event of strict.stream(turn(owner))) events.push(event);
    expect(finishOf(events)).toMatchObject({
      provider: 'local',
      fallbacks: [
        {
          provider: 'a',
          error: expect.stringMatching(
            /^refused: 127\.0\.0\.1 is in the private range 127\.0\.0\.0\/8 and this platform refuses private networks \(the operator allows private networks with OUTBOUND_ALLOW_PRIVATE_NETWORKS=true, or this address alone with OUTBOUND_ALLOWED_CIDRS/,
          ),
        },
      ],
    });
    expect(openai.modelRequests()).toHaveLength(calls);
  });
});

describe('abort', () => {
  it('aborts the provider call in flight when the request’s signal aborts', async () => {
    const owner = await configured();
    openai.reply({ type: 'text', text: ['first words'], holdOpen: true });
    const controller = new AbortController();
    const seen: ModelEvent[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of turns.stream(turn(owner, { signal: controller.signal }))) {
          seen.push(event);
          controller.abort(new Error('the client went away'));
        }
      })(),
    );
    expect(seen).toEqual([{ type: 'delta', text: 'first words' }]);
    expect((error as Error).message).toBe('the client went away');
    const request = openai.modelRequests().at(-1);
    await request?.closed;
    expect(request?.closedEarly).toBe(true);
  });
});

describe('tools', () => {
  /** A loopback API that wants `Authorization: Bearer TOOL_TOKEN` and echoes it back. */
  async function protectedApi() {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers);
      const ok = req.headers.authorization === `Bearer ${TOOL_TOKEN}`;
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json', 'set-cookie': 'session=secret' });
      res.end(JSON.stringify({ ok, echoed: req.headers.authorization ?? null }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
    return { url, seen, close: () => new Promise((resolve) => server.close(resolve)) };
  }

  it('round-trips an http_request call with the credential injected by reference and never shown', async () => {
    const owner = await configured();
    const api = await protectedApi();
    // The token may go where its test URL points (its default allowed host), and nowhere else.
    const token = await credential(owner, 'bearer_token_credentials', {
      token: TOOL_TOKEN,
      test_url: api.url,
    });
    try {
      openai.reply(
        {
          type: 'tool_calls',
          calls: [
            {
              id: 'call_1',
              name: 'http_request',
              input: { method: 'GET', url: api.url, credential_id: token.id },
            },
          ],
        },
        { type: 'text', text: 'You have orders.' },
      );
      const events = await collect(
        turn(owner, { tools: [{ name: 'http_request', config: { credentials: [token.id] } }] }),
      );
      expect(events.map((e) => e.type)).toEqual(['tool_call', 'tool_result', 'delta', 'finish']);
      expect(events[0]).toEqual({
        type: 'tool_call',
        id: 'call_1',
        name: 'http_request',
        input: { method: 'GET', url: api.url, credential_id: token.id },
      });
      expect(events[1]).toMatchObject({
        type: 'tool_result',
        id: 'call_1',
        output: {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: '{"ok":true,"echoed":"[redacted]"}',
          truncated: false,
        },
      });
      expect(api.seen[0]?.authorization).toBe(`Bearer ${TOOL_TOKEN}`);
      const [first, second] = openai.modelRequests().slice(-2);
      expect(first?.body.tools[0].function.name).toBe('http_request');
      const toolMessage = second?.body.messages.find((m: { role: string }) => m.role === 'tool');
      expect(toolMessage.content).toContain('"status":200');
      expect(JSON.stringify(second?.body)).not.toContain(TOOL_TOKEN);
      expect(JSON.stringify(events)).not.toContain(TOOL_TOKEN);
      const audit = await credentials.auditLogs(owner, token.id, {
        limit: 10,
        offset: 0,
        action: 'accessed',
      });
      expect(audit.items[0]?.metadata).toMatchObject({
        service_name: 'tool:http_request',
        fields_accessed: ['token'],
      });
    } finally {
      await api.close();
    }
  });

  it('refuses a credential the agent’s tool config does not allow, and the model reads why', async () => {
    const owner = await configured();
    const token = await credential(owner, 'bearer_token_credentials', { token: TOOL_TOKEN });
    const api = await protectedApi();
    try {
      openai.reply(
        {
          type: 'tool_calls',
          calls: [
            {
              id: 'call_2',
              name: 'http_request',
              input: { method: 'GET', url: api.url, credential_id: token.id },
            },
          ],
        },
        { type: 'text', text: 'I cannot.' },
      );
      const events = await collect(turn(owner, { tools: [{ name: 'http_request' }] }));
      expect(events[1]).toMatchObject({
        type: 'tool_result',
        output: null,
        error: `credential ${token.id} is not available to this agent's http_request tool`,
      });
      expect(api.seen).toHaveLength(0);
      const toolMessage = openai
        .modelRequests()
        .at(-1)
        ?.body.messages.find((m: { role: string }) => m.role === 'tool');
      expect(toolMessage.content).toContain('is not available');
    } finally {
      await api.close();
    }
  });

  it('round-trips a tool call over the Anthropic protocol, with the address guard on the tool', async () => {
    const owner = await configured({ default_model: { provider: 'claude', name: 'claude-x' } });
    anthropic.reply(
      {
        type: 'tool_calls',
        calls: [
          {
            id: 'toolu_1',
            name: 'http_request',
            input: { method: 'GET', url: 'http://169.254.169.254/latest/meta-data' },
          },
        ],
      },
      { type: 'text', text: 'That address is off limits.' },
    );
    const events = await collect(turn(owner, { tools: [{ name: 'http_request' }] }));
    expect(events[1]).toMatchObject({
      type: 'tool_result',
      id: 'toolu_1',
      error: 'refused: 169.254.169.254 is a link-local / cloud metadata address',
    });
    const toolResult = anthropic
      .modelRequests()
      .at(-1)
      ?.body.messages.at(-1)
      .content.find((part: { type: string }) => part.type === 'tool_result');
    expect(toolResult).toMatchObject({ tool_use_id: 'toolu_1', is_error: true });
  });

  it('refuses unknown tools before any event', async () => {
    const owner = await configured();
    const error = await rejection(collect(turn(owner, { tools: [{ name: 'teleport' }] })));
    expect(error).toMatchObject({
      status: 400,
      code: 'validation_failed',
      errors: [{ field: 'tools.0.name' }],
    });
  });
});

describe('embeddings', () => {
  it('embeds through an OpenAI-compatible provider with the vault’s key, in order', async () => {
    const owner = await configured();
    openai.reset();
    const vectors = await gateway.embed({
      workspaceId: owner.workspaceId,
      userId: owner.userId,
      provider: 'a',
      model: 'embed-a',
      texts: ['red apples', 'green pears'],
    });
    expect(vectors).toEqual([embedText('red apples', 64), embedText('green pears', 64)]);
    const [request] = openai.embeddingRequests();
    expect(request?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(request?.body).toMatchObject({ model: 'embed-a', input: ['red apples', 'green pears'] });
  });

  it('fails with 502 on a provider error, 400 for a provider that cannot embed, never showing the key', async () => {
    const owner = await configured();
    openai.embeddingError = 500;
    try {
      const failure = await gateway
        .embed({ workspaceId: owner.workspaceId, provider: 'a', model: 'embed-a', texts: ['x'] })
        .catch((error: unknown) => error);
      expect(failure).toMatchObject({ status: 502, code: 'provider_error' });
      expect(String((failure as Error).message)).not.toContain(OPENAI_KEY);
    } finally {
      openai.embeddingError = undefined;
    }
    for (const provider of ['claude', 'missing']) {
      await expect(
        gateway.embed({ workspaceId: owner.workspaceId, provider, model: 'm', texts: ['x'] }),
      ).rejects.toMatchObject({ status: 400, code: 'validation_failed' });
    }
  });
});
