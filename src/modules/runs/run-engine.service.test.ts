import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import { AppError } from '../../errors.ts';
import { createLocalEventHub } from '../../events/event-hub.ts';
import { createActivityService } from '../activity/activity.service.ts';
import { createMemoryTicketStore } from '../activity/ws-tickets.ts';
import { createAgentsService } from '../agents/agents.service.ts';
import type { ModelEvent, ModelRequest } from '../providers/providers.service.ts';
import { createWorkflowsService } from '../workflows/workflows.service.ts';
import { createWorkspacesService } from '../workspaces/workspaces.service.ts';
import { createRunEngine } from './run-engine.ts';
import { createRunLog, createRunWriter } from './run-log.ts';
import { createRunsService } from './runs.service.ts';

/**
 * The run engine on a real database, without Fastify or a queue: the runs service records a
 * run, and the test executes it as the `run.execute` job would, with a scripted model. What
 * the engine wrote (the run, its steps, its event log, the agents' and workflow's statuses) is
 * read back as a client would see it.
 */

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(() => db.close());

/** What the scripted model does for one request: answer a text, fail, or wait for the abort. */
type Script = (request: ModelRequest) => AsyncGenerator<ModelEvent>;

const answer = (text: string): Script =>
  async function* () {
    yield { type: 'delta', text };
    yield {
      type: 'finish',
      text,
      usage: { input_tokens: 10, output_tokens: 4 },
      cost: 0.5,
      price: null,
      provider: 'scripted',
      model: 'm1',
      latency_ms: 1,
      fallbacks: [],
    };
  };

/** A model whose requests are answered by `scripts` in turn; it records what each was asked. */
function scriptedModel(scripts: Script[]) {
  const requests: ModelRequest[] = [];
  return {
    requests,
    stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      requests.push(request);
      const script = scripts.shift();
      if (!script) throw new Error('the test scripted no more model answers');
      return script(request);
    },
  };
}

let seq = 0;
async function setUp(model: ReturnType<typeof scriptedModel>) {
  seq += 1;
  const hub = createLocalEventHub();
  const database = db.database.db;
  const activity = createActivityService(database, { hub, tickets: createMemoryTicketStore() });
  const record = activity.record;
  const agents = createAgentsService(database, {
    removeFromWorkflows: (tx, workspaceId, agentId) => workflows.removeAgent(tx, workspaceId, agentId),
    activity: { record },
    checkTools: () => [],
    boundCredentials: () => new Map(),
  });
  const workflows = createWorkflowsService(database, {
    agents: { lockExisting: agents.lockExisting },
    activity: { record },
  });
  const runLog = {
    db: database,
    hub,
    activity: {
      recordAll: activity.recordAll,
      insertForSource: activity.insertForSource,
      announce: activity.announce,
    },
  };
  const commit = createRunLog(runLog);
  const write = createRunWriter(runLog);
  const runs = createRunsService({
    db: database,
    commit,
    write,
    workflows,
    hub,
    // The test executes each run itself, as the job would.
    enqueue: async () => {},
    onEnqueueError: () => {},
  });
  const engine = createRunEngine({
    db: database,
    commit,
    write,
    agents,
    workflows,
    models: model,
    hub,
    owner: `engine-test-${seq}`,
    wait: async () => {},
  });
  const userId = `runner-${seq}`;
  const workspace = await createWorkspacesService(database).createWorkspace(userId, { name: `w${seq}` });
  const caller = { userId, workspaceId: workspace.id, tenantId: workspace.tenant.id };
  return { caller, agents, workflows, runs, engine };
}

type Wiring = Awaited<ReturnType<typeof setUp>>;

async function startRun(
  wiring: Wiring,
  agentNames: string[],
  policy: Record<string, unknown> = {},
): Promise<{ runId: string; agentIds: string[]; workflowId: string }> {
  const agentIds: string[] = [];
  for (const name of agentNames) {
    agentIds.push((await wiring.agents.create(wiring.caller, { name, model: null, role: 'tester' })).id);
  }
  const workflow = await wiring.workflows.create(wiring.caller, {
    name: `flow ${seq}`,
    goal: 'Write a haiku',
    agents: agentIds,
    execution_policy: policy,
  } as Parameters<Wiring['workflows']['create']>[1]);
  const { run } = await wiring.runs.start(wiring.caller, workflow.id, {});
  return { runId: run.id, agentIds, workflowId: workflow.id };
}

const eventsOf = (runId: string) =>
  db.rows<{ type: string; data: Record<string, any> }>(
    sql`select type, data from run_events where run_id = ${runId} order by id`,
  );

describe('run engine', () => {
  it('runs every step in order, carrying each output to the next agent, and completes the run', async () => {
    const model = scriptedModel([answer('first draft'), answer('final haiku')]);
    const wiring = await setUp(model);
    const { runId, agentIds, workflowId } = await startRun(wiring, ['Drafter', 'Editor']);

    await wiring.engine.execute(runId, new AbortController().signal);

    const run = await wiring.runs.getWithSteps(wiring.caller, runId);
    expect(run).toMatchObject({
      status: 'Completed',
      output: 'final haiku',
      next_step: 2,
      tokens_in: 20,
      tokens_out: 8,
      cost: 1,
      agents_used: ['Drafter', 'Editor'],
      lease_owner: null,
    });
    expect(run.steps.map((step) => [step.position, step.status, step.agent_name, step.output])).toEqual([
      [0, 'Completed', 'Drafter', 'first draft'],
      [1, 'Completed', 'Editor', 'final haiku'],
    ]);
    // The prompts: the agent's identity as system text, the goal, then the previous output.
    expect(model.requests[0]).toMatchObject({
      system: 'You are Drafter, tester.',
      usedBy: { runId, agentId: agentIds[0] },
    });
    expect(model.requests[0]?.messages).toEqual([{ role: 'user', content: 'Goal: Write a haiku' }]);
    expect(model.requests[1]?.messages.at(-1)?.content).toBe(
      'Goal: Write a haiku\n\nOutput of the previous agent (Drafter):\nfirst draft',
    );
    expect((await eventsOf(runId)).map((event) => event.type)).toEqual([
      'run.queued',
      'run.started',
      'step.started',
      'step.completed',
      'step.started',
      'step.completed',
      'run.completed',
    ]);
    for (const id of agentIds) {
      expect((await wiring.agents.get(wiring.caller, id)).status).toBe('Idle');
    }
    expect((await wiring.workflows.get(wiring.caller, workflowId)).status).toBe('Completed');
  });

  it("fails the run on a failing step, keeping the step's error on the step, the run and their events", async () => {
    const model = scriptedModel([
      async function* () {
        yield* []; // nothing streamed: the provider refused the request
        throw new AppError(502, 'provider_error', 'loop/model-a: 401 Unauthorized: invalid api key');
      },
    ]);
    const wiring = await setUp(model);
    const { runId, agentIds } = await startRun(wiring, ['Lonely', 'Never'], { error_handling: 'stop' });

    await wiring.engine.execute(runId, new AbortController().signal);

    const run = await wiring.runs.getWithSteps(wiring.caller, runId);
    expect(run).toMatchObject({ status: 'Failed', failure_reason: 'step_failed', next_step: 0 });
    expect(run.error).toContain('401 Unauthorized: invalid api key');
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]).toMatchObject({ status: 'Failed', agent_name: 'Lonely' });
    expect(run.steps[0]?.error).toContain('401 Unauthorized: invalid api key');
    const events = await eventsOf(runId);
    expect(events.map((event) => event.type)).toEqual([
      'run.queued',
      'run.started',
      'step.started',
      'step.failed',
      'run.failed',
    ]);
    expect(events.find((event) => event.type === 'step.failed')?.data.error).toContain('401 Unauthorized');
    expect(events.find((event) => event.type === 'run.failed')?.data).toMatchObject({
      status: 'Failed',
      failure_reason: 'step_failed',
      error: expect.stringContaining('401 Unauthorized'),
    });
    expect((await wiring.agents.get(wiring.caller, agentIds[0] as string)).status).toBe('Error');
    expect((await wiring.agents.get(wiring.caller, agentIds[1] as string)).status).toBe('Idle');
  });

  it('hands the run back when its worker stops mid-step, and a later execution continues after the last completed step', async () => {
    const stopping = new AbortController();
    const model = scriptedModel([
      answer('kept'),
      // The second step is in flight when the worker is told to stop.
      async function* (request) {
        stopping.abort(new Error('worker stopping'));
        request.signal.throwIfAborted();
        yield* answer('never')(request);
      },
      answer('done at last'),
    ]);
    const wiring = await setUp(model);
    const { runId } = await startRun(wiring, ['One', 'Two']);

    await wiring.engine.execute(runId, stopping.signal);

    const handedBack = await wiring.runs.getWithSteps(wiring.caller, runId);
    expect(handedBack).toMatchObject({ status: 'Queued', lease_owner: null, next_step: 1, attempts: 1 });
    expect(handedBack.steps.map((step) => [step.position, step.status])).toEqual([
      [0, 'Completed'],
      [1, 'Failed'],
    ]);
    expect(handedBack.steps[1]?.error).toBe('interrupted: shutdown');
    const requeued = (await eventsOf(runId)).filter((event) => event.type === 'run.requeued');
    expect(requeued.map((event) => event.data)).toEqual([{ reason: 'worker stopping' }]);

    await wiring.engine.execute(runId, new AbortController().signal);

    const run = await wiring.runs.getWithSteps(wiring.caller, runId);
    expect(run).toMatchObject({ status: 'Completed', output: 'done at last', next_step: 2, attempts: 2 });
    // The first step is not run again: three model calls in all, the third for step 1.
    expect(model.requests).toHaveLength(3);
    expect(model.requests[2]?.messages.at(-1)?.content).toContain(
      'Output of the previous agent (One):\nkept',
    );
    const types = (await eventsOf(runId)).map((event) => event.type);
    expect(types.slice(types.indexOf('run.requeued'))).toEqual([
      'run.requeued',
      'run.resumed',
      'step.started',
      'step.completed',
      'run.completed',
    ]);
  });
});
