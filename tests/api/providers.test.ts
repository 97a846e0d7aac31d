import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent, buildCredential, buildMember } from '../helpers/factories.ts';
import { type LlmServer, startAnthropicServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * GET/PUT /api/settings/providers: who may read and change them, what is validated (credential
 * references, the outbound address guard, model references), that no secret is ever answered,
 * and the agent-side rules that depend on the registry (tools) and on the settings (default model).
 */

const OPENAI_KEY = 'sk-settings-canary-3f9a1c';
const ANTHROPIC_KEY = 'sk-ant-settings-canary-77d0';

let t: TestApp;
let openai: LlmServer;
let anthropic: LlmServer;
let owner: Actor;
let admin: Actor;
let member: Actor;
let viewer: Actor;
let openaiKey: { id: number };
let anthropicKey: { id: number };

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  openai = await startOpenAiServer();
  anthropic = await startAnthropicServer();
  owner = await t.newWorkspace('settings-owner');
  admin = await buildMember(t, owner, { role: 'admin' });
  member = await buildMember(t, owner, { role: 'member' });
  viewer = await buildMember(t, owner, { role: 'viewer' });
  openaiKey = await buildCredential(t, owner, {
    credential_type: 'openai_credentials',
    data: { api_key: OPENAI_KEY },
  });
  anthropicKey = await buildCredential(t, owner, {
    credential_type: 'anthropic_credentials',
    data: { api_key: ANTHROPIC_KEY },
  });
});
afterAll(async () => {
  await openai.close();
  await anthropic.close();
  await t.close();
});

const valid = () => ({
  providers: [
    { id: 'openai', kind: 'openai_compatible', base_url: openai.url, credential_id: openaiKey.id },
    {
      id: 'claude',
      kind: 'anthropic',
      base_url: anthropic.url,
      credential_id: anthropicKey.id,
      headers: { 'anthropic-beta': 'tools-2024-05-16' },
      timeout_ms: 20_000,
    },
    { id: 'ollama', kind: 'openai_compatible', base_url: 'http://127.0.0.1:11434/v1' },
  ],
  default_model: { provider: 'openai', name: 'gpt-4o-mini' },
  prices: [{ provider: 'openai', name: 'gpt-4o-mini', input_per_million: 0.15, output_per_million: 0.6 }],
  fallback: [
    { provider: 'claude', name: 'claude-haiku' },
    { provider: 'local', name: 'echo' },
  ],
});

describe('provider settings', () => {
  it('answers the defaults to any member, the built-in local provider being the one that answers', async () => {
    const fresh = await t.newWorkspace('settings-fresh');
    const response = await t.call(fresh, 'GET', '/api/settings/providers');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ providers: [], default_model: null, prices: [], fallback: [] });
  });

  it('lets admins change them, fills the defaults, and never answers a secret', async () => {
    for (const who of [member, viewer]) {
      const refused = await t.call(who, 'PUT', '/api/settings/providers', valid());
      expect(refused.statusCode).toBe(403);
      expect(refused.json().code).toBe('insufficient_role');
    }
    const saved = await t.call(admin, 'PUT', '/api/settings/providers', valid());
    expect(saved.statusCode, saved.body).toBe(200);
    expect(saved.json().providers).toEqual([
      {
        id: 'openai',
        kind: 'openai_compatible',
        base_url: openai.url,
        credential_id: openaiKey.id,
        api_key_header: null,
        headers: {},
        timeout_ms: 60_000,
      },
      {
        id: 'claude',
        kind: 'anthropic',
        base_url: anthropic.url,
        credential_id: anthropicKey.id,
        api_key_header: null,
        headers: { 'anthropic-beta': 'tools-2024-05-16' },
        timeout_ms: 20_000,
      },
      {
        id: 'ollama',
        kind: 'openai_compatible',
        base_url: 'http://127.0.0.1:11434/v1',
        credential_id: null,
        api_key_header: null,
        headers: {},
        timeout_ms: 60_000,
      },
    ]);
    const read = await t.call(viewer, 'GET', '/api/settings/providers');
    expect(read.json()).toEqual(saved.json());
    for (const body of [saved.body, read.body, t.rawLogs()]) {
      expect(body).not.toContain(OPENAI_KEY);
      expect(body).not.toContain(ANTHROPIC_KEY);
    }
  });

  it('replaces only the keys given', async () => {
    await t.call(owner, 'PUT', '/api/settings/providers', valid());
    const response = await t.call(owner, 'PUT', '/api/settings/providers', {
      fallback: [{ provider: 'ollama', name: 'llama3' }],
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      default_model: { provider: 'openai', name: 'gpt-4o-mini' },
      fallback: [{ provider: 'ollama', name: 'llama3' }],
    });
    expect(response.json().providers).toHaveLength(3);
  });

  it('names every invalid field at once and stores nothing', async () => {
    const stranger = await t.newWorkspace('settings-stranger');
    const theirs = await buildCredential(t, stranger, {
      credential_type: 'openai_credentials',
      data: { api_key: 'x-123456' },
    });
    const postgres = await buildCredential(t, owner);
    const before = (await t.call(owner, 'GET', '/api/settings/providers')).json();
    const response = await t.call(owner, 'PUT', '/api/settings/providers', {
      providers: [
        { id: 'a', kind: 'openai_compatible', base_url: 'not a url' },
        { id: 'a', kind: 'openai_compatible', base_url: 'ftp://example.com/v1' },
        { id: 'local', kind: 'openai_compatible', base_url: 'http://user:pw@example.com/v1' },
        { id: 'meta', kind: 'openai_compatible', base_url: 'http://169.254.169.254/latest' },
        { id: 'private', kind: 'openai_compatible', base_url: 'http://10.0.0.7/v1?x=1' },
        { id: 'gone', kind: 'openai_compatible', base_url: openai.url, credential_id: 999_999 },
        { id: 'foreign', kind: 'openai_compatible', base_url: openai.url, credential_id: theirs.id },
        { id: 'nokey', kind: 'openai_compatible', base_url: openai.url, credential_id: postgres.id },
        { id: 'claude', kind: 'anthropic', base_url: anthropic.url, api_key_header: 'api-key' },
        {
          id: 'leaky',
          kind: 'openai_compatible',
          base_url: openai.url,
          headers: { Authorization: 'Bearer sk-in-clear', 'X-Trace': 'ok' },
        },
      ],
      default_model: { provider: 'nowhere', name: 'm' },
      fallback: [
        { provider: 'elsewhere', name: 'm' },
        { provider: 'local', name: 'echo' },
        { provider: 'local', name: 'echo' },
      ],
      prices: [
        { provider: 'a', name: 'm', input_per_million: 1, output_per_million: 1 },
        { provider: 'a', name: 'm', input_per_million: 2, output_per_million: 2 },
      ],
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('validation_failed');
    const errors = Object.fromEntries(
      (response.json().errors as { field: string; message: string }[]).map((e) => [e.field, e.message]),
    );
    expect(errors).toMatchObject({
      'body.providers.0.base_url': 'is not an absolute URL',
      'body.providers.1.id': 'repeats "a"',
      'body.providers.1.base_url': 'must use http or https, not ftp',
      'body.providers.2.id': 'is reserved for the built-in local provider',
      'body.providers.2.base_url': 'must not carry credentials: use credential_id',
      'body.providers.3.base_url': 'refused: 169.254.169.254 is a link-local / cloud metadata address',
      'body.providers.4.base_url': 'must not have a query or fragment',
      'body.providers.5.credential_id': 'credential 999999 does not exist in this workspace',
      'body.providers.6.credential_id': `credential ${theirs.id} does not exist in this workspace`,
      'body.providers.7.credential_id': `credential ${postgres.id} has no api_key or token field to send as the key`,
      'body.providers.8.credential_id': 'is required: the Anthropic API needs a key',
      'body.providers.8.api_key_header': 'applies to openai_compatible providers only',
      'body.providers.9.headers.Authorization':
        'carries a secret: store it in a vault credential and name that credential in secret_headers',
      'body.default_model.provider': 'names provider "nowhere", which is not configured',
      'body.fallback.0.provider': 'names provider "elsewhere", which is not configured',
      'body.fallback.2': 'repeats local/echo',
      'body.prices.1': 'repeats a/m',
    });
    expect(errors['body.providers.9.headers.X-Trace']).toBeUndefined();
    expect((await t.call(owner, 'GET', '/api/settings/providers')).json()).toEqual(before);
  });

  it('applies the workspace’s private-network policy to base URLs', async () => {
    const self = await t.newWorkspace('settings-selfhosted');
    const body = {
      providers: [{ id: 'vllm', kind: 'openai_compatible', base_url: 'http://10.1.2.3:8000/v1' }],
      default_model: { provider: 'vllm', name: 'qwen' },
    };
    const refused = await t.call(self, 'PUT', '/api/settings/providers', body);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors).toEqual([
      {
        field: 'body.providers.0.base_url',
        // The refusal names the settings that would allow the address (docs/outbound.md).
        message:
          'refused: 10.1.2.3 is in the private range 10.0.0.0/8 and this platform refuses private networks' +
          ' (the operator allows private networks with OUTBOUND_ALLOW_PRIVATE_NETWORKS=true, or this address' +
          ' alone with OUTBOUND_ALLOWED_CIDRS; see docs/outbound.md)',
      },
    ]);
    // The platform refuses private networks (its default): the workspace cannot opt out.
    const optOut = await t.call(self, 'PUT', '/api/credentials/settings', { refuse_private_networks: false });
    expect(optOut.statusCode).toBe(400);
    expect(optOut.json().errors[0].field).toBe('body.refuse_private_networks');
    expect((await t.call(self, 'PUT', '/api/settings/providers', body)).statusCode).toBe(400);
  });

  it('requires a default model once a provider exists, and keeps references consistent', async () => {
    const fresh = await t.newWorkspace('settings-references');
    const noDefault = await t.call(fresh, 'PUT', '/api/settings/providers', {
      providers: [{ id: 'ollama', kind: 'openai_compatible', base_url: openai.url }],
    });
    expect(noDefault.statusCode).toBe(400);
    expect(noDefault.json().errors).toEqual([
      { field: 'body.default_model', message: 'is required once a provider is configured' },
    ]);
    expect(
      (
        await t.call(fresh, 'PUT', '/api/settings/providers', {
          providers: [{ id: 'ollama', kind: 'openai_compatible', base_url: openai.url }],
          default_model: { provider: 'ollama', name: 'llama3' },
        })
      ).statusCode,
    ).toBe(200);
    const orphaning = await t.call(fresh, 'PUT', '/api/settings/providers', { providers: [] });
    expect(orphaning.statusCode).toBe(400);
    expect(orphaning.json().errors).toEqual([
      {
        field: 'body.providers',
        message:
          'leaves default_model.provider naming provider "ollama", which would no longer be configured',
      },
    ]);
    const cleared = await t.call(fresh, 'PUT', '/api/settings/providers', {
      providers: [],
      default_model: null,
    });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json()).toMatchObject({ providers: [], default_model: null });
  });

  it('rejects malformed bodies by schema, naming the field', async () => {
    const response = await t.call(owner, 'PUT', '/api/settings/providers', {
      providers: [{ id: 'Bad Id', kind: 'gemini', base_url: openai.url, timeout_ms: 5 }],
    });
    expect(response.statusCode).toBe(400);
    const fields = response.json().errors.map((e: { field: string }) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['body.providers.0.id']));
  });
});

describe('agents and the provider settings', () => {
  it('lists the registry’s tools', async () => {
    const response = await t.call(viewer, 'GET', '/api/tools');
    expect(response.statusCode).toBe(200);
    const tool = response.json().items.find((item: { name: string }) => item.name === 'http_request');
    expect(tool.input_schema.properties).toHaveProperty('credential_id');
    expect(tool.config_schema.properties).toHaveProperty('credentials');
  });

  it('refuses agents naming unknown tools or configuring a tool wrongly, naming the field', async () => {
    const response = await t.call(owner, 'POST', '/api/agents', {
      name: 'Tooled',
      tools: [
        { name: 'http_request', config: { credentials: ['one'] } },
        { name: 'web_search' },
        { name: 'http_request' },
      ],
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors.map((e: { field: string }) => e.field)).toEqual([
      'body.tools.0.config.credentials.0',
      'body.tools.1.name',
      'body.tools.2.name',
    ]);
    const agent = await buildAgent(t, owner);
    const update = await t.call(owner, 'PUT', `/api/agents/${agent.id}`, { tools: [{ name: 'github' }] });
    expect(update.statusCode).toBe(400);
    expect(update.json().errors[0]).toMatchObject({ field: 'body.tools.0.name' });
  });

  it('creates an agent with only a name; without a model it uses the workspace default', async () => {
    const response = await t.call(owner, 'POST', '/api/agents', { name: 'Plain' });
    expect(response.statusCode).toBe(201);
    expect(response.json().model).toBeNull();
  });
});
