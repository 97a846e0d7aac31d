import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
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

describe('workflows CRUD', () => {
  it('creates a workflow with ordered agents and the default policy', async () => {
    const reviewer = await buildAgent(t, alice);
    const writer = await buildAgent(t, alice);
    const response = await t.call(alice, 'POST', '/api/workflows', {
      name: 'Review PR',
      goal: 'Review {{repo}} pull request {{pr}}',
      agents: [writer.id, reviewer.id],
      tools: [{ name: 'github' }],
      context_template: { repo: '', pr: 0 },
      tags: ['review'],
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({
      workspace_id: alice.workspaceId,
      goal: 'Review {{repo}} pull request {{pr}}',
      agents: [writer.id, reviewer.id],
      execution_policy: { mode: 'sequential', error_handling: 'stop', max_retries: 0, timeout_seconds: 900 },
      status: 'Draft',
      is_template: false,
      context_template: { repo: '', pr: 0 },
    });
  });

  it('merges a partial execution policy on create and on update', async () => {
    const workflow = await buildWorkflow(t, alice, { execution_policy: { mode: 'parallel' } });
    expect(workflow.execution_policy).toEqual({
      mode: 'parallel',
      error_handling: 'stop',
      max_retries: 0,
      timeout_seconds: 900,
    });
    const updated = await t.call(alice, 'PUT', `/api/workflows/${workflow.id}`, {
      execution_policy: { error_handling: 'retry', max_retries: 3 },
      is_template: true,
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({
      name: workflow.name,
      is_template: true,
      execution_policy: { mode: 'parallel', error_handling: 'retry', max_retries: 3, timeout_seconds: 900 },
    });
  });

  it('rejects agent ids that are not in the workspace, naming each position', async () => {
    const mine = await buildAgent(t, alice);
    const theirs = await buildAgent(t, mallory);
    const response = await t.call(alice, 'POST', '/api/workflows', {
      name: 'x',
      agents: [mine.id, theirs.id, '00000000-0000-4000-8000-000000000000'],
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors.map((e: { field: string }) => e.field)).toEqual([
      'body.agents.1',
      'body.agents.2',
    ]);
    const workflow = await buildWorkflow(t, alice);
    const update = await t.call(alice, 'PUT', `/api/workflows/${workflow.id}`, { agents: [theirs.id] });
    expect(update.statusCode).toBe(400);
    expect(update.json().errors[0].field).toBe('body.agents.0');
  });

  it('removes a deleted agent from the workflows that list it', async () => {
    const a = await buildAgent(t, alice);
    const b = await buildAgent(t, alice);
    const workflow = await buildWorkflow(t, alice, { agents: [a.id, b.id, a.id] });
    expect((await t.call(alice, 'DELETE', `/api/agents/${a.id}`)).statusCode).toBe(204);
    expect((await t.call(alice, 'GET', `/api/workflows/${workflow.id}`)).json().agents).toEqual([b.id]);
  });

  it('rejects bad policy values naming the field', async () => {
    const response = await t.call(alice, 'POST', '/api/workflows', {
      name: 'x',
      execution_policy: { mode: 'random', timeout_seconds: 0 },
    });
    expect(response.statusCode).toBe(400);
    const fields = response.json().errors.map((e: { field: string }) => e.field);
    expect(fields).toContain('body.execution_policy.mode');
    expect(fields).toContain('body.execution_policy.timeout_seconds');
  });

  it('deletes with 204, then 404', async () => {
    const workflow = await buildWorkflow(t, alice);
    expect((await t.call(alice, 'DELETE', `/api/workflows/${workflow.id}`)).statusCode).toBe(204);
    expect((await t.call(alice, 'GET', `/api/workflows/${workflow.id}`)).json().code).toBe(
      'workflow_not_found',
    );
  });
});

describe('workflow list', () => {
  it('filters by q, status, tag and is_template and pages stably', async () => {
    const owner = await t.newWorkspace();
    for (let i = 0; i < 5; i++) {
      await buildWorkflow(t, owner, {
        name: `Flow ${i}`,
        description: i === 2 ? 'Nightly DEPLOY' : null,
        status: i === 4 ? 'Running' : 'Draft',
        tags: i % 2 ? ['odd'] : ['even'],
        is_template: i === 0,
      });
    }
    const all = (await t.call(owner, 'GET', '/api/workflows?limit=2&offset=1')).json();
    expect(all).toMatchObject({ total: 5, limit: 2, offset: 1 });
    expect(all.items.map((w: { name: string }) => w.name)).toEqual(['Flow 3', 'Flow 2']);
    expect((await t.call(owner, 'GET', '/api/workflows?q=deploy')).json().total).toBe(1);
    expect((await t.call(owner, 'GET', '/api/workflows?status=Running')).json().total).toBe(1);
    expect((await t.call(owner, 'GET', '/api/workflows?tag=odd')).json().total).toBe(2);
    expect((await t.call(owner, 'GET', '/api/workflows?is_template=true')).json().total).toBe(1);
  });
});

describe('workspace isolation', () => {
  it('answers 404 for another workspace’s workflow on every route', async () => {
    const workflow = await buildWorkflow(t, alice, { name: 'Alice private flow' });
    for (const [method, payload] of [['GET'], ['PUT', { name: 'pwned' }], ['DELETE']] as const) {
      const response = await t.call(mallory, method, `/api/workflows/${workflow.id}`, payload);
      expect(response.statusCode).toBe(404);
      expect(response.body).not.toContain('Alice private flow');
    }
    expect((await t.call(mallory, 'GET', '/api/workflows?q=Alice')).json().total).toBe(0);
    expect((await t.call(alice, 'GET', `/api/workflows/${workflow.id}`)).json().name).toBe(
      'Alice private flow',
    );
  });
});
