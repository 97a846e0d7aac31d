import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import type { Db } from '../../db/transaction.ts';
import { createLocalEventHub } from '../../events/event-hub.ts';
import { type ActivityService, createActivityService } from '../activity/activity.service.ts';
import { createMemoryTicketStore } from '../activity/ws-tickets.ts';
import { createWorkflowsService, type WorkflowsService } from '../workflows/workflows.service.ts';
import { createWorkspacesService } from '../workspaces/workspaces.service.ts';
import { type AgentsDependencies, type AgentsService, createAgentsService } from './agents.service.ts';

/**
 * Agents and workflows meet inside each other's transactions: deleting an agent takes it out
 * of every workflow in the delete's transaction, and saving a workflow share-locks the agents
 * it names until it commits. Wired as `src/services.ts` wires them, with a hook in the one
 * function each side calls of the other, to hold a transaction open at the point that matters.
 */

let db: TestDb;
beforeAll(async () => {
  // These tests hold a transaction open on purpose: on PGlite, whose one connection the others
  // then wait for, the gate must let them wait longer than its default deadline of 300 ms.
  db = await createTestDb({ env: { DB_QUEUE_TIMEOUT_MS: '30000' } });
});
afterAll(() => db.close());

interface Wiring {
  agents: AgentsService;
  workflows: WorkflowsService;
  activity: ActivityService;
}

/**
 * The two services wired together; `afterRemove` runs inside the agent delete's transaction
 * once the agent has left the workflows, and `afterLock` inside a workflow's transaction once
 * its agents are locked.
 */
function wire(
  hooks: {
    afterRemove?: () => Promise<void>;
    afterLock?: () => Promise<void>;
    afterRecord?: () => Promise<void>;
  } = {},
): Wiring {
  const removeFromWorkflows: AgentsDependencies['removeFromWorkflows'] = async (tx, workspaceId, agentId) => {
    await workflows.removeAgent(tx, workspaceId, agentId);
    await hooks.afterRemove?.();
  };
  const activity = createActivityService(db.database.db, {
    hub: createLocalEventHub(),
    tickets: createMemoryTicketStore(),
  });
  const record: AgentsDependencies['activity']['record'] = async (tx, event) => {
    const id = await activity.record(tx, event);
    await hooks.afterRecord?.();
    return id;
  };
  // These agents use no tools: the registry's verdict is not what these tests are about.
  const agents = createAgentsService(db.database.db, {
    removeFromWorkflows,
    activity: { record },
    checkTools: () => [],
    boundCredentials: () => new Map(),
  });
  const workflows = createWorkflowsService(db.database.db, {
    activity: { record },
    agents: {
      lockExisting: async (tx: Db, workspaceId: string, ids: string[]) => {
        const missing = await agents.lockExisting(tx, workspaceId, ids);
        await hooks.afterLock?.();
        return missing;
      },
    },
  });
  return { agents, workflows, activity };
}

let seq = 0;
async function newCaller() {
  seq += 1;
  const userId = `builder-${seq}`;
  const workspace = await createWorkspacesService(db.database.db).createWorkspace(userId, {
    name: `workspace ${seq}`,
  });
  return { userId, workspaceId: workspace.id, tenantId: workspace.tenant.id };
}

const model = { provider: 'openai', name: 'gpt-4o-mini' };

/** A gate a hook waits on: `reached` resolves when the hook is hit, `open()` lets it go on. */
function gate() {
  let open = () => {};
  let reached = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const hit = new Promise<void>((resolve) => {
    reached = resolve;
  });
  return {
    hook: async () => {
      reached();
      await opened;
    },
    reached: hit,
    open: () => open(),
  };
}

/** 'pending' when `promise` has not settled within `ms`: it is waiting for a lock. */
const stateAfter = (promise: Promise<unknown>, ms: number) =>
  Promise.race([
    promise.then(
      () => 'fulfilled',
      () => 'rejected',
    ),
    new Promise((resolve) => setTimeout(() => resolve('pending'), ms)),
  ]);

describe('agents and workflows', () => {
  it('removes a deleted agent from every workflow, in the same transaction as the delete', async () => {
    const caller = await newCaller();
    const { agents, workflows } = wire();
    const a = await agents.create(caller, { name: 'a', model });
    const b = await agents.create(caller, { name: 'b', model });
    const first = await workflows.create(caller, { name: 'first', agents: [a.id, b.id, a.id] });
    const second = await workflows.create(caller, { name: 'second', agents: [a.id] });
    await agents.delete(caller, a.id);
    expect((await workflows.get(caller, first.id)).agents).toEqual([b.id]);
    expect((await workflows.get(caller, second.id)).agents).toEqual([]);
    await expect(agents.get(caller, a.id)).rejects.toMatchObject({ code: 'agent_not_found' });
  });

  it('keeps the agent and its workflows when the delete fails after cleaning them', async () => {
    const caller = await newCaller();
    const failing = wire({
      afterRemove: async () => {
        throw new Error('the delete fails after the workflows were cleaned');
      },
    });
    const agent = await failing.agents.create(caller, { name: 'kept', model });
    const workflow = await failing.workflows.create(caller, { name: 'w', agents: [agent.id] });
    await expect(failing.agents.delete(caller, agent.id)).rejects.toThrow('after the workflows were cleaned');
    expect((await failing.agents.get(caller, agent.id)).id).toBe(agent.id);
    expect((await failing.workflows.get(caller, workflow.id)).agents).toEqual([agent.id]);
  });

  it('makes a delete wait for a workflow being saved with the agent, then clean that workflow', async () => {
    const caller = await newCaller();
    const held = gate();
    const { agents, workflows } = wire({ afterLock: held.hook });
    const agent = await agents.create(caller, { name: 'shared', model });
    const saving = workflows.create(caller, { name: 'w', agents: [agent.id] });
    await held.reached;
    const deleting = agents.delete(caller, agent.id);
    expect(await stateAfter(deleting, 300)).toBe('pending');
    held.open();
    const workflow = await saving;
    expect(workflow.agents).toEqual([agent.id]);
    await deleting;
    expect((await workflows.get(caller, workflow.id)).agents).toEqual([]);
  });

  it('makes a workflow naming an agent being deleted wait, then refuse it', async () => {
    const caller = await newCaller();
    const held = gate();
    const { agents, workflows } = wire({ afterRemove: held.hook });
    const agent = await agents.create(caller, { name: 'going', model });
    const deleting = agents.delete(caller, agent.id);
    await held.reached;
    const saving = workflows.create(caller, { name: 'w', agents: [agent.id] });
    expect(await stateAfter(saving, 300)).toBe('pending');
    held.open();
    await deleting;
    await expect(saving).rejects.toMatchObject({
      code: 'validation_failed',
      errors: [{ field: 'body.agents.0', message: `agent ${agent.id} does not exist in this workspace` }],
    });
    expect((await workflows.list(caller, { limit: 10, offset: 0 })).total).toBe(0);
  });
});

describe('activity', () => {
  it('records agent.created and workflow.created with the change, by the caller', async () => {
    const caller = await newCaller();
    const { agents, workflows, activity } = wire();
    const agent = await agents.create(caller, { name: 'Researcher', model });
    const workflow = await workflows.create(caller, { name: 'Review PR', agents: [agent.id] });
    const page = await activity.list(caller, { limit: 10 });
    expect(page.items).toMatchObject([
      {
        kind: 'workflow.created',
        subject_type: 'workflow',
        subject_id: workflow.id,
        message: 'Workflow “Review PR” created',
        data: { name: 'Review PR', agents: 1 },
        actor: caller.userId,
      },
      {
        kind: 'agent.created',
        subject_type: 'agent',
        subject_id: agent.id,
        message: 'Agent “Researcher” created',
        data: { name: 'Researcher', model },
        actor: caller.userId,
      },
    ]);
  });

  it('creates neither agent nor workflow when the transaction fails after recording the event', async () => {
    const caller = await newCaller();
    const existing = await wire().agents.create(caller, { name: 'base', model });
    const failing = wire({
      afterRecord: async () => {
        throw new Error('the transaction fails after the event was written');
      },
    });
    await expect(failing.agents.create(caller, { name: 'never', model })).rejects.toThrow('after the event');
    await expect(failing.workflows.create(caller, { name: 'never', agents: [existing.id] })).rejects.toThrow(
      'after the event',
    );
    expect((await failing.workflows.list(caller, { limit: 10, offset: 0 })).total).toBe(0);
    expect(JSON.parse(await failing.agents.list(caller, { limit: 10, offset: 0 })).total).toBe(1);
    expect((await failing.activity.list(caller, { limit: 10 })).items.map((item) => item.message)).toEqual([
      'Agent “base” created',
    ]);
  });
});
