import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { openEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildCredential, buildSource } from '../helpers/factories.ts';
import { settledSource, upload } from '../helpers/knowledge.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * The outbound address guard is the operator's (issue 23, point 1.2). The platform here
 * refuses private networks (the default) and allows one address, 127.0.0.1, where its model
 * gateway runs (the loopback LLM server). A metrics endpoint of the operator's network listens
 * on 127.0.0.3. A tenant owns a workspace and tries every outbound path, with the target
 * spelled every way a URL can spell it: none may reach it, and the endpoint counts every hit.
 */

let t: TestApp;
let base: string;
let llm: LlmServer;
let metrics: http.Server;
let owner: Actor;
const hits: string[] = [];
const METRIC = 'internal_metric_canary';
const API_KEY = 'sk-outbound-canary-5e1d';

/** The metrics endpoint, spelled as an attacker would: literal, short, decimal, hex, octal, IPv6 forms. */
function targets(path = '/metrics'): string[] {
  const port = (metrics.address() as AddressInfo).port;
  return [
    '127.0.0.3',
    '127.3',
    '2130706435',
    '0x7f000003',
    '0177.0.0.3',
    '[::ffff:127.0.0.3]',
    '[::ffff:7f00:3]',
    '[64:ff9b::7f00:3]',
    '[2002:7f00:3::]',
    '[2001:0:4136:e378:8000:63bf:80ff:fffc]',
    '[::127.0.0.3]',
  ].map((host) => `http://${host}:${port}${path}`);
}

beforeAll(async () => {
  metrics = http.createServer((request, response) => {
    hits.push(request.url ?? '');
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(`# TYPE ${METRIC} gauge\n${METRIC} 42\n`);
  });
  await new Promise<void>((resolve) => metrics.listen(0, '127.0.0.3', resolve));
  llm = await startOpenAiServer();
  t = await createTestApp({ env: { OUTBOUND_ALLOWED_CIDRS: '127.0.0.1/32' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  owner = await t.newWorkspace('tenant-owner');
});
afterAll(async () => {
  await llm.close();
  await t.close();
  metrics.closeAllConnections();
  await new Promise((resolve) => metrics.close(resolve));
});

describe('the platform policy', () => {
  it('is not a workspace’s to open: an owner or admin turning refusal off gets 400 naming the field', async () => {
    const fresh = await t.newWorkspace();
    for (const body of [
      { refuse_private_networks: false },
      { refuse_private_networks: false, environment_lookup: true },
    ]) {
      const response = await t.call(fresh, 'PUT', '/api/credentials/settings', body);
      expect(response.statusCode, response.body).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json().errors).toEqual([
        {
          field: 'body.refuse_private_networks',
          message: expect.stringContaining('this platform refuses private networks'),
        },
      ]);
    }
    expect((await t.call(fresh, 'GET', '/api/credentials/settings')).json()).toMatchObject({
      refuse_private_networks: true,
      environment_lookup: false,
    });
    // Narrowing is always allowed.
    const narrowed = await t.call(fresh, 'PUT', '/api/credentials/settings', {
      refuse_private_networks: true,
    });
    expect(narrowed.statusCode, narrowed.body).toBe(200);
  });
});

describe('every outbound path, with refusal stored off in the workspace', () => {
  beforeAll(async () => {
    // A workspace that opted out before the platform policy existed keeps its stored `false`;
    // it must gain nothing from it, and its settings answer what takes effect.
    await t.services.settings.update(owner.workspaceId, 'credentials', { refuse_private_networks: false });
    expect((await t.call(owner, 'GET', '/api/credentials/settings')).json().refuse_private_networks).toBe(
      true,
    );
  });
  afterAll(() => {
    expect(hits).toEqual([]);
  });

  it('URL sources: every page is refused and nothing of it can be searched', async () => {
    const created = await t.call(owner, 'POST', '/api/sources', {
      name: 'Metrics',
      kind: 'url',
      url: { urls: targets() },
    });
    expect(created.statusCode, created.body).toBe(201);
    const source = await settledSource(t, owner, created.json().id);
    expect(source.indexing).toMatchObject({ documents_done: 0, documents_failed: targets().length });
    const documents = (await t.call(owner, 'GET', `/api/documents?source_id=${source.id}&limit=50`)).json()
      .items;
    expect(documents).toHaveLength(targets().length);
    for (const document of documents) {
      expect(document.failure_reason, document.origin).toMatch(/refused: /);
    }
    const search = await t.call(owner, 'POST', '/api/documents/search', { query: METRIC });
    expect(search.statusCode, search.body).toBe(200);
    expect(search.body).not.toContain('42');
    expect(search.json().results).toEqual([]);
    expect(hits).toEqual([]);
  });

  it('connection tests: a credential’s test URL is refused', async () => {
    for (const url of targets()) {
      const credential = await buildCredential(t, owner, {
        credential_type: 'api_key_credentials',
        data: { api_key: API_KEY, test_url: url },
      });
      const tested = await t.call(owner, 'POST', `/api/credentials/${credential.id}/test`);
      expect(tested.statusCode, tested.body).toBe(200);
      expect(tested.json(), url).toMatchObject({
        status: 'failed',
        message: expect.stringMatching(/^refused: /),
      });
      expect(tested.body).not.toContain(API_KEY);
    }
    expect(hits).toEqual([]);
  });

  it('provider base URLs: each is refused with 400 naming it', async () => {
    const urls = targets('/v1');
    const response = await t.call(owner, 'PUT', '/api/settings/providers', {
      providers: urls.map((base_url, index) => ({ id: `p${index}`, kind: 'openai_compatible', base_url })),
      default_model: { provider: 'p0', name: 'm' },
    });
    expect(response.statusCode, response.body).toBe(400);
    const errors = response.json().errors as { field: string; message: string }[];
    expect(errors.map((error) => error.field)).toEqual(
      urls.map((_, index) => `body.providers.${index}.base_url`),
    );
    for (const error of errors) expect(error.message).toMatch(/^refused: /);
  });

  it('model and embedding calls to a provider stored before the policy are refused at call time', async () => {
    const [url] = targets('/v1');
    await t.services.settings.update(owner.workspaceId, 'providers', {
      providers: [
        {
          id: 'legacy',
          kind: 'openai_compatible',
          base_url: url as string,
          credential_id: null,
          api_key_header: null,
          headers: {},
          timeout_ms: 5_000,
        },
      ],
      default_model: { provider: 'legacy', name: 'chat' },
    });
    const stream = await openEventStream(`${base}/api/chat`, owner.headers, { message: 'read the metrics' });
    await stream.done;
    expect(stream.status).toBe(502);
    expect(stream.problem.errors).toEqual([
      {
        field: 'legacy/chat',
        message: expect.stringMatching(/^refused: 127\.0\.0\.3 is in the private range/),
      },
    ]);
    const source = await buildSource(t, owner, { embedding: { provider: 'legacy', model: 'embed' } });
    const uploaded = await upload(
      t,
      owner,
      { name: 'a.md', content: '# A\n\nSome text.\n' },
      { source_id: source.id },
    );
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    await expect
      .poll(
        async () =>
          (await t.call(owner, 'GET', `/api/documents/${uploaded.json().id}`)).json().failure_reason ?? '',
        { timeout: 10_000, interval: 100 },
      )
      .toMatch(/refused: 127\.0\.0\.3/);
    expect(hits).toEqual([]);
  });

  it('the http_request tool: a model told to fetch the endpoint gets a refusal', async () => {
    const tenant = await t.newWorkspace('tool-tenant');
    await t.services.settings.update(tenant.workspaceId, 'credentials', { refuse_private_networks: false });
    const credential = await buildCredential(t, tenant, {
      credential_type: 'openai_credentials',
      data: { api_key: API_KEY },
    });
    // The operator's model gateway (127.0.0.1, allowed) is reachable; nothing else of the network is.
    const configured = await t.call(tenant, 'PUT', '/api/settings/providers', {
      providers: [
        { id: 'gateway', kind: 'openai_compatible', base_url: llm.url, credential_id: credential.id },
      ],
      default_model: { provider: 'gateway', name: 'chat-model' },
    });
    expect(configured.statusCode, configured.body).toBe(200);
    const agent = await buildAgent(t, tenant, { model: null, tools: [{ name: 'http_request' }] });
    const urls = targets();
    llm.reply(
      {
        type: 'tool_calls',
        calls: urls.map((url, index) => ({
          id: `call_${index}`,
          name: 'http_request',
          input: { method: 'GET', url },
        })),
      },
      { type: 'text', text: ['Nothing to read.'] },
    );
    const stream = await openEventStream(`${base}/api/chat`, tenant.headers, {
      message: 'Read the metrics',
      agent_id: agent.id,
    });
    const events = await stream.done;
    const results = events.filter((event) => event.event === 'tool_result');
    expect(results).toHaveLength(urls.length);
    for (const result of results) expect(JSON.stringify(result.data)).toMatch(/refused: /);
    expect(hits).toEqual([]);
  });
});
