import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

let t: TestApp;
let alice: Actor;
let mallory: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('alice');
  mallory = await t.newWorkspace('mallory');
});
afterAll(() => t.close());

describe('agents CRUD', () => {
  it('creates an agent with defaults and reads it back', async () => {
    const response = await t.call(alice, 'POST', '/api/agents', {
      name: 'Reviewer',
      model: { provider: 'anthropic', name: 'claude-sonnet' },
      role: 'code reviewer',
      system_prompt: 'Review carefully.',
      tools: [{ name: 'http_request', config: { allowed_hosts: ['api.github.com'] } }],
      tags: ['review', 'code'],
    });
    expect(response.statusCode).toBe(201);
    const agent = response.json();
    expect(agent).toMatchObject({
      workspace_id: alice.workspaceId,
      name: 'Reviewer',
      status: 'Idle',
      config: {},
      description: null,
      tools: [{ name: 'http_request', config: { allowed_hosts: ['api.github.com'] } }],
      tags: ['review', 'code'],
      created_by: 'alice',
    });
    expect(agent.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const read = await t.call(alice, 'GET', `/api/agents/${agent.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual(agent);
  });

  it('updates only the fields sent and refreshes updated_at', async () => {
    const agent = await buildAgent(t, alice, { description: 'keep me', tags: ['x'] });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const response = await t.call(alice, 'PUT', `/api/agents/${agent.id}`, {
      status: 'Active',
      config: { temperature: 0.2 },
    });
    expect(response.statusCode).toBe(200);
    const updated = response.json();
    expect(updated).toMatchObject({
      status: 'Active',
      config: { temperature: 0.2 },
      description: 'keep me',
      tags: ['x'],
    });
    expect(new Date(updated.updated_at).getTime()).toBeGreaterThan(new Date(updated.created_at).getTime());
    expect(updated.created_at).toBe(agent.created_at);
  });

  it('deletes with 204, then answers 404', async () => {
    const agent = await buildAgent(t, alice);
    expect((await t.call(alice, 'DELETE', `/api/agents/${agent.id}`)).statusCode).toBe(204);
    const again = await t.call(alice, 'GET', `/api/agents/${agent.id}`);
    expect(again.statusCode).toBe(404);
    expect(again.json()).toMatchObject({ code: 'agent_not_found' });
    expect((await t.call(alice, 'DELETE', `/api/agents/${agent.id}`)).statusCode).toBe(404);
  });

  it('answers 404 for an unknown id', async () => {
    const response = await t.call(alice, 'PUT', '/api/agents/00000000-0000-4000-8000-000000000000', {
      name: 'x',
    });
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toContain('application/problem+json');
  });
});

describe('agent list', () => {
  let owner: Actor;
  beforeAll(async () => {
    owner = await t.newWorkspace();
    for (let i = 0; i < 7; i++) {
      await buildAgent(t, owner, {
        name: i === 3 ? 'Security Auditor' : `Helper ${i}`,
        description: i === 5 ? 'finds SECURITY issues' : 'general',
        status: i % 2 === 0 ? 'Active' : 'Idle',
        tags: i < 2 ? ['alpha'] : ['beta'],
      });
    }
  });

  it('pages newest first with a total', async () => {
    const first = (await t.call(owner, 'GET', '/api/agents?limit=3')).json();
    expect(first).toMatchObject({ total: 7, limit: 3, offset: 0 });
    expect(first.items.map((a: { name: string }) => a.name)).toEqual(['Helper 6', 'Helper 5', 'Helper 4']);
    const last = (await t.call(owner, 'GET', '/api/agents?limit=3&offset=6')).json();
    expect(last.items.map((a: { name: string }) => a.name)).toEqual(['Helper 0']);
    const past = (await t.call(owner, 'GET', '/api/agents?limit=3&offset=50')).json();
    expect(past).toEqual({ items: [], total: 7, limit: 3, offset: 50 });
  });

  it('defaults to 50 items per page', async () => {
    expect((await t.call(owner, 'GET', '/api/agents')).json()).toMatchObject({
      limit: 50,
      offset: 0,
      total: 7,
    });
  });

  it('filters by q on name and description, case-insensitively', async () => {
    const page = (await t.call(owner, 'GET', '/api/agents?q=security')).json();
    expect(page.items.map((a: { name: string }) => a.name).sort()).toEqual(['Helper 5', 'Security Auditor']);
    expect(page.total).toBe(2);
    expect((await t.call(owner, 'GET', '/api/agents?q=%25')).json().total).toBe(0);
  });

  it('filters by status and tag', async () => {
    expect((await t.call(owner, 'GET', '/api/agents?status=Active')).json().total).toBe(4);
    expect((await t.call(owner, 'GET', '/api/agents?tag=alpha')).json().total).toBe(2);
    expect((await t.call(owner, 'GET', '/api/agents?tag=alpha&status=Idle')).json().total).toBe(1);
  });

  it('honours tenant_id: its own tenant lists, any other tenant lists nothing', async () => {
    const current = (await t.call(owner, 'GET', '/api/workspaces/current')).json();
    expect((await t.call(owner, 'GET', `/api/agents?tenant_id=${current.tenant.id}`)).json().total).toBe(7);
    const other = (await t.call(mallory, 'GET', '/api/workspaces/current')).json();
    expect((await t.call(owner, 'GET', `/api/agents?tenant_id=${other.tenant.id}`)).json()).toMatchObject({
      items: [],
      total: 0,
    });
  });

  it('rejects a bad status filter naming the field', async () => {
    const response = await t.call(owner, 'GET', '/api/agents?status=Sleeping');
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([
      { field: 'query.status', message: 'must be one of: Active, Busy, Idle, Error' },
    ]);
  });
});

describe('workspace isolation', () => {
  it('hides another workspace’s agents on every route', async () => {
    const agent = await buildAgent(t, alice, { name: 'Alice secret agent' });
    for (const [method, payload] of [['GET'], ['PUT', { name: 'pwned' }], ['DELETE']] as const) {
      const response = await t.call(mallory, method, `/api/agents/${agent.id}`, payload);
      expect(response.statusCode).toBe(404);
      expect(response.body).not.toContain('Alice secret agent');
    }
    const list = (await t.call(mallory, 'GET', '/api/agents?q=Alice')).json();
    expect(list.total).toBe(0);
    expect((await t.call(alice, 'GET', `/api/agents/${agent.id}`)).json().name).toBe('Alice secret agent');
  });

  it('refuses a workspace the caller is not a member of with 403', async () => {
    const response = await t.call(mallory, 'GET', '/api/agents', undefined, {
      headers: { 'x-workspace-id': alice.workspaceId },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json().code).toBe('workspace_forbidden');
  });
});
