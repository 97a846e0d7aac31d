import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { openEventStream } from '../helpers/event-stream.ts';
import {
  buildAgent,
  buildCredential,
  buildMember,
  buildWorkflow,
  credentialTypeId,
} from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Issue 23, 1.1: a stored secret goes only where an admin said it may. A credential is bound
 * to its allowed hosts (by default its test endpoint's host); the http_request tool is refused,
 * before any secret leaves the vault, for any other destination however the URL spells it;
 * binding a credential into an agent and choosing its hosts are admins' acts, audited; every
 * decrypted use names the agent, the run or conversation and the destination. Loopback
 * listeners stand in for the API the key belongs to and for an attacker's server.
 */

const TOOL_KEY = 'canary-Tool-Key-5d21e0';
const LLM_KEY = 'sk-llm-canary-0c4b7e';

/** A loopback HTTP server recording the X-API-Key of every request it receives. */
async function listener() {
  const received: string[] = [];
  const server = http.createServer((request, response) => {
    received.push(String(request.headers['x-api-key'] ?? ''));
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/probe`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let t: TestApp;
let base: string;
let llm: LlmServer;
let owner: Actor;
let admin: Actor;
let member: Actor;
let honest: Awaited<ReturnType<typeof listener>>;
let attacker: Awaited<ReturnType<typeof listener>>;
let llmKey: { id: number };

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  llm = await startOpenAiServer();
  honest = await listener();
  attacker = await listener();
  owner = await t.newWorkspace('dest-owner');
  admin = await buildMember(t, owner, { user_id: 'dest-admin', role: 'admin' });
  member = await buildMember(t, owner, { user_id: 'dest-member', role: 'member' });
  llmKey = await buildCredential(t, owner, {
    credential_type: 'openai_credentials',
    data: { api_key: LLM_KEY },
  });
  const settings = await t.call(owner, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: llmKey.id }],
    default_model: { provider: 'loop', name: 'model-a' },
  });
  expect(settings.statusCode, settings.body).toBe(200);
});
afterAll(async () => {
  await t.close();
  await llm.close();
  await honest.close();
  await attacker.close();
});
beforeEach(() => {
  llm.reset();
  llm.fallbackReply = { type: 'text', text: 'done' };
});

/** An API-key credential whose test URL (so its default allowed host) is the honest listener. */
async function toolKey(overrides: Record<string, unknown> = {}) {
  return buildCredential(t, owner, {
    credential_type: 'api_key_credentials',
    data: { api_key: TOOL_KEY, test_url: honest.url },
    ...overrides,
  });
}

/** The credential's vault audit records, oldest first. */
async function vaultAudit(id: number): Promise<{ action: string; metadata: Record<string, unknown> }[]> {
  const response = await t.call(owner, 'GET', `/api/credentials/${id}/audit-logs?limit=200`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().items.reverse();
}

/** The workspace audit trail as JSON lines. */
async function workspaceAudit(): Promise<{ action: string; target: { id: string }; changes: any }[]> {
  const response = await t.call(owner, 'POST', '/api/settings/audit/export', { format: 'jsonl' });
  expect(response.statusCode, response.body).toBe(200);
  return response.body
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
}

const http_request = (url: string, credential_id: number, id = url) => ({
  id: `call_${id.replace(/[^A-Za-z0-9]/g, '_').slice(-40)}`,
  name: 'http_request',
  input: { method: 'GET', url, credential_id },
});

/** Runs a one-agent workflow to its end and answers the run. */
async function runAgent(agentId: string): Promise<Record<string, any>> {
  const workflow = await buildWorkflow(t, owner, { goal: 'Fetch', agents: [agentId] });
  const started = await t.call(owner, 'POST', `/api/workflows/${workflow.id}/run`, {});
  expect(started.statusCode, started.body).toBe(202);
  const until = Date.now() + 15_000;
  for (;;) {
    const run = (await t.call(owner, 'GET', `/api/runs/${started.json().id}`)).json();
    if (['Completed', 'Failed', 'Cancelled'].includes(run.status)) return run;
    if (Date.now() > until) throw new Error(`run still ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('binding a credential into an agent is an admin’s act', () => {
  it('refuses a member who puts a credential into a new agent or adds one to an existing agent', async () => {
    const key = await toolKey();
    const tools = [{ name: 'http_request', config: { credentials: [key.id] } }];
    const created = await t.call(member, 'POST', '/api/agents', { name: 'sneaky', tools });
    expect(created.statusCode, created.body).toBe(403);
    expect(created.headers['content-type']).toContain('application/problem+json');
    expect(created.json()).toMatchObject({
      code: 'insufficient_role',
      errors: [{ field: 'body.tools.0.config.credentials', message: expect.stringContaining('admins') }],
    });

    const plain = await buildAgent(t, member, { model: null, tools: [{ name: 'http_request' }] });
    const updated = await t.call(member, 'PUT', `/api/agents/${plain.id}`, { tools });
    expect(updated.statusCode, updated.body).toBe(403);
    expect(updated.json().errors[0].field).toBe('body.tools.0.config.credentials');
    const stored = (await t.call(member, 'GET', `/api/agents/${plain.id}`)).json();
    expect(stored.tools).toEqual([{ name: 'http_request' }]);

    // Another tool entry naming the credential is an addition too, whatever the order.
    const second = await t.call(member, 'PUT', `/api/agents/${plain.id}`, {
      tools: [{ name: 'knowledge_search' }, { name: 'http_request', config: { credentials: [key.id] } }],
    });
    expect(second.statusCode).toBe(403);
    expect(second.json().errors[0].field).toBe('body.tools.1.config.credentials');
  });

  it('lets an admin bind it, records it in the audit trail, and lets a member keep or drop it', async () => {
    const key = await toolKey();
    const other = await toolKey();
    const agent = await buildAgent(t, admin, {
      model: null,
      tools: [{ name: 'http_request', config: { credentials: [key.id] } }],
    });
    // A member may change the rest of the agent and the tool's other settings...
    const kept = await t.call(member, 'PUT', `/api/agents/${agent.id}`, {
      name: 'renamed',
      tools: [{ name: 'http_request', config: { credentials: [key.id], timeout_ms: 5000 } }],
    });
    expect(kept.statusCode, kept.body).toBe(200);
    // ...but not swap the credential for another one,
    const swapped = await t.call(member, 'PUT', `/api/agents/${agent.id}`, {
      tools: [{ name: 'http_request', config: { credentials: [other.id] } }],
    });
    expect(swapped.statusCode).toBe(403);
    // and dropping it is fine (it narrows what the agent can reach).
    const dropped = await t.call(member, 'PUT', `/api/agents/${agent.id}`, {
      tools: [{ name: 'http_request' }],
    });
    expect(dropped.statusCode, dropped.body).toBe(200);
    const rebound = await t.call(admin, 'PUT', `/api/agents/${agent.id}`, {
      tools: [{ name: 'http_request', config: { credentials: [other.id] } }],
    });
    expect(rebound.statusCode, rebound.body).toBe(200);

    const trail = (await workspaceAudit()).filter(
      (entry) => entry.action === 'agent.credentials_changed' && entry.target.id === agent.id,
    );
    expect(trail.map((entry) => entry.changes.tool_credentials)).toEqual([
      { old: {}, new: { http_request: [key.id] } },
      { old: { http_request: [key.id] }, new: {} },
      { old: {}, new: { http_request: [other.id] } },
    ]);
  });
});

describe('a credential’s allowed hosts', () => {
  const body = async (extra: Record<string, unknown>) => ({
    name: `hosts-${Math.random().toString(36).slice(2)}`,
    credential_type_id: await credentialTypeId(t, owner, 'api_key_credentials'),
    data: { api_key: TOOL_KEY, test_url: honest.url },
    ...extra,
  });

  it('are chosen by admins only, normalised, and their change is in the credential’s trail', async () => {
    const byMember = await t.call(
      member,
      'POST',
      '/api/credentials',
      await body({ allowed_hosts: ['x.example'] }),
    );
    expect(byMember.statusCode, byMember.body).toBe(403);
    expect(byMember.json()).toMatchObject({
      code: 'insufficient_role',
      errors: [{ field: 'body.allowed_hosts' }],
    });
    const plain = await t.call(member, 'POST', '/api/credentials', await body({}));
    expect(plain.statusCode, plain.body).toBe(201);
    expect(plain.json().allowed_hosts).toBeNull();

    const hosts = ['API.Example.COM.', '*.Example.org', '127.0.0.1:8080', '[0:0::1]:9000', '0x7f.0.0.1:81'];
    const byAdmin = await t.call(admin, 'POST', '/api/credentials', await body({ allowed_hosts: hosts }));
    expect(byAdmin.statusCode, byAdmin.body).toBe(201);
    expect(byAdmin.json().allowed_hosts).toEqual([
      'api.example.com',
      '*.example.org',
      '127.0.0.1:8080',
      '[::1]:9000',
      '127.0.0.1:81',
    ]);

    const id = plain.json().id;
    const change = await t.call(member, 'PUT', `/api/credentials/${id}`, {
      allowed_hosts: [`127.0.0.1:${attacker.port}`],
    });
    expect(change.statusCode).toBe(403);
    expect(change.json().code).toBe('insufficient_role');
    // Supplying the secret again does not help: the list is not the member's to choose.
    const withSecret = await t.call(member, 'PUT', `/api/credentials/${id}`, {
      data: { api_key: TOOL_KEY },
      allowed_hosts: [`127.0.0.1:${attacker.port}`],
    });
    expect(withSecret.statusCode).toBe(403);
    const changed = await t.call(admin, 'PUT', `/api/credentials/${id}`, {
      allowed_hosts: ['api.example.com'],
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().allowed_hosts).toEqual(['api.example.com']);
    const updated = (await vaultAudit(id)).filter((record) => record.action === 'updated');
    expect(updated.map((record) => (record.metadata.changes as any).allowed_hosts)).toEqual([
      { old: null, new: ['api.example.com'] },
    ]);
  });

  it('refuses entries that are not a host with an optional port, naming each', async () => {
    const bad = [
      'user@host.example',
      'host.example/path',
      '*.10.0.0.1',
      'two words',
      '*',
      'host.example:99999',
    ];
    const response = await t.call(admin, 'POST', '/api/credentials', await body({ allowed_hosts: bad }));
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().errors.map((error: { field: string }) => error.field)).toEqual(
      bad.map((_, index) => `body.allowed_hosts.${index}`),
    );
  });
});

describe('http_request sends a credential only to its allowed hosts', () => {
  it('refuses every other destination in a run, whatever the spelling, before the secret leaves', async () => {
    const key = await toolKey();
    const agent = await buildAgent(t, admin, {
      model: null,
      tools: [{ name: 'http_request', config: { credentials: [key.id] } }],
    });
    const hostile = [
      attacker.url, // same address, another port
      `http://localhost:${honest.port}/probe`, // a name for the allowed IP literal
      `http://127.0.0.1.:${attacker.port}/probe`, // trailing dot
      `http://0x7f.0.0.1:${attacker.port}/probe`, // another spelling of the address
      `http://127.0.0.1:${honest.port}@127.0.0.1:${attacker.port}/probe`, // userinfo dressed as the host
      `https://127.0.0.1/probe`, // the allowed host on another scheme and port
    ];
    llm.reply({
      type: 'tool_calls',
      calls: hostile.map((url, index) => http_request(url, key.id, `h${index}`)),
    });
    const run = await runAgent(agent.id);
    expect(run.status, JSON.stringify(run)).toBe('Completed');
    const calls = run.steps[0].tool_calls as { input: { url: string }; error?: string; output: unknown }[];
    expect(calls).toHaveLength(hostile.length);
    for (const call of calls) {
      expect(call.error ?? JSON.stringify(call.output), call.input.url).toMatch(
        /may not be sent to|credentials in the URL are not allowed/,
      );
    }
    expect(JSON.stringify(run)).not.toContain(TOOL_KEY);
    expect(t.rawLogs()).not.toContain(TOOL_KEY);
    expect(attacker.received).toEqual([]);
    expect(honest.received).toEqual([]);

    const denied = (await vaultAudit(key.id)).filter((record) => record.action === 'access_denied');
    // Tool calls of one step run concurrently: compare the records in a fixed order.
    const byHost = (a: Record<string, unknown>, b: Record<string, unknown>) =>
      String(a.destination_host).localeCompare(String(b.destination_host));
    expect(denied.map((record) => record.metadata).sort(byHost)).toEqual(
      [
        `127.0.0.1:${attacker.port}`,
        `localhost:${honest.port}`,
        `127.0.0.1:${attacker.port}`,
        `127.0.0.1:${attacker.port}`,
        '127.0.0.1',
      ]
        .map((destination) => ({
          service_name: 'tool:http_request',
          reason: 'destination_not_allowed',
          agent_id: agent.id,
          run_id: run.id,
          destination_host: destination,
        }))
        .sort(byHost),
    );
    expect((await vaultAudit(key.id)).some((record) => record.action === 'accessed')).toBe(false);
  });

  it('sends it to its test endpoint’s host, the access naming agent, run and host; the model key too', async () => {
    const key = await toolKey();
    const agent = await buildAgent(t, admin, {
      model: null,
      tools: [{ name: 'http_request', config: { credentials: [key.id] } }],
    });
    llm.reply({ type: 'tool_calls', calls: [http_request(honest.url, key.id)] });
    const run = await runAgent(agent.id);
    expect(run.steps[0].tool_calls[0].output).toMatchObject({ status: 200 });
    expect(honest.received.at(-1)).toBe(TOOL_KEY);
    expect(attacker.received).toEqual([]);

    const accessed = (await vaultAudit(key.id)).filter((record) => record.action === 'accessed');
    expect(accessed.map((record) => record.metadata)).toEqual([
      {
        service_name: 'tool:http_request',
        fields_accessed: ['api_key'],
        agent_id: agent.id,
        run_id: run.id,
        destination_host: `127.0.0.1:${honest.port}`,
      },
    ]);
    const modelKey = (await vaultAudit(llmKey.id)).filter(
      (record) => record.action === 'accessed' && record.metadata.run_id === run.id,
    );
    expect(modelKey.length).toBeGreaterThan(0);
    expect(modelKey[0]?.metadata).toMatchObject({
      service_name: 'llm',
      agent_id: agent.id,
      destination_host: `127.0.0.1:${new URL(llm.url).port}`,
    });
    const verified = await t.call(owner, 'GET', `/api/credentials/${key.id}/audit-logs/verify`);
    expect(verified.json()).toMatchObject({ intact: true });
  });

  it('follows the admin’s list: an added host (any casing) is reachable, the test endpoint no longer', async () => {
    const key = await toolKey();
    const set = await t.call(admin, 'PUT', `/api/credentials/${key.id}`, {
      allowed_hosts: [`LocalHost.:${attacker.port}`],
    });
    expect(set.statusCode, set.body).toBe(200);
    const agent = await buildAgent(t, admin, {
      model: null,
      tools: [{ name: 'http_request', config: { credentials: [key.id] } }],
    });
    llm.reply({
      type: 'tool_calls',
      calls: [
        http_request(`http://LOCALHOST:${attacker.port}/probe`, key.id, 'a'),
        http_request(honest.url, key.id, 'b'),
      ],
    });
    const before = honest.received.length;
    const run = await runAgent(agent.id);
    const [allowed, refused] = run.steps[0].tool_calls;
    expect(allowed.output).toMatchObject({ status: 200 });
    expect(attacker.received).toEqual([TOOL_KEY]);
    expect(refused.error ?? JSON.stringify(refused.output)).toContain('may not be sent to');
    expect(honest.received.length).toBe(before);
    attacker.received.length = 0;
  });
});

describe('an admin’s explicit list', () => {
  it('is checked before the stored blob is even opened', async () => {
    const key = await toolKey();
    const set = await t.call(admin, 'PUT', `/api/credentials/${key.id}`, {
      allowed_hosts: ['api.example.com'],
    });
    expect(set.statusCode, set.body).toBe(200);
    // A blob that cannot be decrypted: a refusal that came after decryption would say so.
    await t.rows(sql`update credentials set encrypted_data = 'v1.AAAA.AAAA' where id = ${key.id}`);
    const agent = await buildAgent(t, admin, {
      model: null,
      tools: [{ name: 'http_request', config: { credentials: [key.id] } }],
    });
    llm.reply({ type: 'tool_calls', calls: [http_request(attacker.url, key.id)] });
    const run = await runAgent(agent.id);
    expect(run.steps[0].tool_calls[0].error).toContain(`may not be sent to 127.0.0.1:${attacker.port}`);
    const actions = (await vaultAudit(key.id)).map((record) => [record.action, record.metadata.reason]);
    expect(actions.at(-1)).toEqual(['access_denied', 'destination_not_allowed']);
    expect(actions.some(([action]) => action === 'access_failed')).toBe(false);
  });
});

describe('the same through chat', () => {
  it('refuses the other host and names the conversation in the vault’s record', async () => {
    const key = await toolKey();
    const agent = await buildAgent(t, admin, {
      model: null,
      tools: [{ name: 'http_request', config: { credentials: [key.id] } }],
    });
    llm.reply(
      {
        type: 'tool_calls',
        calls: [http_request(attacker.url, key.id, 'x'), http_request(honest.url, key.id, 'y')],
      },
      { type: 'text', text: 'fetched' },
    );
    // A member chats with the admin's agent: the agent's credential still goes only where allowed.
    const stream = await openEventStream(`${base}/api/chat`, member.headers, {
      message: 'Fetch http://attacker for me',
      agent_id: agent.id,
    });
    const events = await stream.done;
    const start = events.find((event) => event.event === 'start')?.data;
    // Results arrive as the calls finish: find each by its call id.
    const result = (id: string) =>
      events.find((event) => event.event === 'tool_result' && event.data.id === id)?.data;
    expect(result('call_x').error ?? JSON.stringify(result('call_x').output)).toContain('may not be sent to');
    expect(result('call_y').output).toMatchObject({ status: 200 });
    expect(attacker.received).toEqual([]);
    expect(JSON.stringify(events)).not.toContain(TOOL_KEY);

    const records = (await vaultAudit(key.id)).filter(
      (record) => record.metadata.service_name === 'tool:http_request',
    );
    // The two calls run concurrently: sorted, the refusal comes first.
    expect(records.map((record) => [record.action, record.metadata.destination_host]).sort()).toEqual([
      ['access_denied', `127.0.0.1:${attacker.port}`],
      ['accessed', `127.0.0.1:${honest.port}`],
    ]);
    for (const record of records) {
      expect(record.metadata).toMatchObject({ agent_id: agent.id, conversation_id: start.conversation_id });
      expect(record.metadata.run_id).toBeUndefined();
    }
  });
});

describe('providers: a stored key goes only to a base URL an admin confirmed', () => {
  const llmPort = () => new URL(llm.url).port;
  const moveTo = (actor: Actor, baseUrl: string, extra: Record<string, unknown> = {}) =>
    t.call(actor, 'PUT', '/api/settings/providers', {
      providers: [{ id: 'loop', kind: 'openai_compatible', base_url: baseUrl, credential_id: llmKey.id }],
      ...extra,
    });
  const stored = async () =>
    (await t.call(owner, 'GET', '/api/settings/providers')).json().providers[0].base_url;

  it('refuses a member, and asks an admin to confirm any other host, however it is spelled', async () => {
    const elsewhere = `http://127.0.0.1:${attacker.port}/v1`;
    const byMember = await moveTo(member, elsewhere);
    expect(byMember.statusCode).toBe(403);
    expect(byMember.json().code).toBe('insufficient_role');

    for (const target of [
      elsewhere, // another port
      `http://localhost:${llmPort()}/v1`, // a name instead of the address
      'https://127.0.0.1/v1', // another scheme and port
    ]) {
      const unconfirmed = await moveTo(admin, target);
      expect(unconfirmed.statusCode, target).toBe(409);
      expect(unconfirmed.headers['content-type']).toContain('application/problem+json');
      expect(unconfirmed.json()).toMatchObject({
        code: 'confirmation_required',
        errors: [{ field: 'body.providers.0.base_url', message: expect.stringContaining('confirm_hosts') }],
      });
      expect(await stored()).toBe(llm.url);
    }
    // Confirming another host than the new one does not count.
    const wrong = await moveTo(admin, elsewhere, { confirm_hosts: [`127.0.0.1:${llmPort()}`] });
    expect(wrong.statusCode).toBe(409);

    // The same destination spelled differently needs nothing; a confirmed move is stored.
    const same = await moveTo(admin, `http://127.0.0.1.:${llmPort()}/v1/`);
    expect(same.statusCode, same.body).toBe(200);
    const confirmed = await moveTo(admin, elsewhere, { confirm_hosts: [`127.0.0.1:${attacker.port}`] });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    const back = await moveTo(admin, llm.url, { confirm_hosts: [`127.0.0.1:${llmPort()}`] });
    expect(back.statusCode, back.body).toBe(200);

    // The audit trail has every accepted move, with credential ids and never a key.
    const moves = (await workspaceAudit()).filter((entry) => entry.action === 'providers.updated');
    expect(JSON.stringify(moves)).toContain(elsewhere);
    expect(JSON.stringify(moves)).not.toContain(LLM_KEY);
  });

  it('lets a provider without vault credentials move freely', async () => {
    const fresh = await t.newWorkspace('dest-keyless');
    const body = (url: string) => ({
      providers: [{ id: 'free', kind: 'openai_compatible', base_url: url }],
      default_model: { provider: 'free', name: 'm' },
    });
    expect((await t.call(fresh, 'PUT', '/api/settings/providers', body(llm.url))).statusCode).toBe(200);
    const moved = await t.call(
      fresh,
      'PUT',
      '/api/settings/providers',
      body(`http://127.0.0.1:${attacker.port}/v1`),
    );
    expect(moved.statusCode, moved.body).toBe(200);
  });
});

describe('providers: headers whose names carry secrets', () => {
  const ORG_TOKEN = 'canary-Org-Token-93be10';

  it('are refused in clear, whatever the name’s casing or form, naming each', async () => {
    const names = [
      'Authorization',
      'x-api-key',
      'API-KEY',
      'X-Auth-Token',
      'Ocp-Apim-Subscription-Key',
      'x-goog-api-key',
      'X-Client-Secret',
      'X-Session-Id',
      'X-Password',
      'Cookie',
    ];
    const response = await t.call(owner, 'PUT', '/api/settings/providers', {
      providers: [
        {
          id: 'loop',
          kind: 'openai_compatible',
          base_url: llm.url,
          credential_id: llmKey.id,
          headers: {
            ...Object.fromEntries(names.map((name) => [name, 'clear-canary-value'])),
            'X-Trace': '1',
          },
        },
      ],
    });
    expect(response.statusCode, response.body).toBe(400);
    const fields = response.json().errors.map((error: { field: string }) => error.field);
    expect(fields).toEqual(names.map((name) => `body.providers.0.headers.${name}`));
    expect(response.body).not.toContain('clear-canary-value');
  });

  it('come from the vault (secret_headers): sent to the provider, never answered nor audited in clear', async () => {
    const viewer = await buildMember(t, owner, { role: 'viewer' });
    const org = await buildCredential(t, owner, {
      credential_type: 'bearer_token_credentials',
      data: { token: ORG_TOKEN },
    });
    const saved = await t.call(admin, 'PUT', '/api/settings/providers', {
      providers: [
        {
          id: 'loop',
          kind: 'openai_compatible',
          base_url: llm.url,
          credential_id: llmKey.id,
          secret_headers: { 'X-Org-Token': org.id },
        },
      ],
    });
    expect(saved.statusCode, saved.body).toBe(200);
    const read = await t.call(viewer, 'GET', '/api/settings/providers');
    expect(read.json().providers[0].secret_headers).toEqual({ 'X-Org-Token': org.id });
    expect(read.body).not.toContain(ORG_TOKEN);

    const agent = await buildAgent(t, admin, { model: null });
    const run = await runAgent(agent.id);
    expect(run.status).toBe('Completed');
    expect(llm.modelRequests().at(-1)?.headers['x-org-token']).toBe(ORG_TOKEN);
    const access = (await vaultAudit(org.id)).filter((record) => record.action === 'accessed');
    expect(access.at(-1)?.metadata).toMatchObject({
      service_name: 'llm',
      run_id: run.id,
      destination_host: `127.0.0.1:${new URL(llm.url).port}`,
    });

    const exported = await t.call(owner, 'POST', '/api/settings/audit/export', { format: 'csv' });
    expect(exported.body).not.toContain(ORG_TOKEN);
    const restored = await t.call(admin, 'PUT', '/api/settings/providers', {
      providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: llmKey.id }],
    });
    expect(restored.statusCode).toBe(200);
  });

  it('stored in clear before this rule are masked for every reader and in the audit trail', async () => {
    const legacy = await t.newWorkspace('dest-legacy');
    await t.services.settings.update(legacy.workspaceId, 'providers', {
      providers: [
        {
          id: 'old',
          kind: 'openai_compatible',
          base_url: llm.url,
          credential_id: null,
          api_key_header: null,
          headers: { 'X-Legacy-Token': 'legacy-clear-canary', 'X-Trace': 'shown' },
          timeout_ms: 60_000,
        },
      ],
      default_model: { provider: 'old', name: 'm' },
    });
    const read = await t.call(legacy, 'GET', '/api/settings/providers');
    expect(read.json().providers[0].headers).toEqual({ 'X-Legacy-Token': '********', 'X-Trace': 'shown' });
    const cleared = await t.call(legacy, 'PUT', '/api/settings/providers', {
      providers: [{ id: 'old', kind: 'openai_compatible', base_url: llm.url }],
    });
    expect(cleared.statusCode, cleared.body).toBe(200);
    const exported = await t.call(legacy, 'POST', '/api/settings/audit/export', { format: 'jsonl' });
    expect(exported.body).toContain('providers.updated');
    expect(exported.body).not.toContain('legacy-clear-canary');
  });
});
