import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { parseEventStream } from '../helpers/event-stream.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * A run's event stream with a standard EventSource: its first GET of a finished run replays the
 * whole log; a reconnect (`Last-Event-ID`, or `?after=`) at or after the last event of a run
 * that has ended is answered 204, which is how an EventSource is told to stop reconnecting.
 * The workspace has no model configured: the built-in provider answers each step at once.
 */

let t: TestApp;
let alice: Actor;

beforeAll(async () => {
  t = await createTestApp();
  alice = await t.newWorkspace('stream-end');
});
afterAll(() => t.close());

async function finishedRun(): Promise<string> {
  const agent = await buildAgent(t, alice, { name: 'Echo', model: null });
  const workflow = await buildWorkflow(t, alice, { goal: 'Say something', agents: [agent.id] });
  const runId = (await t.call(alice, 'POST', `/api/workflows/${workflow.id}/run`, {})).json().id as string;
  await expect
    .poll(async () => (await t.call(alice, 'GET', `/api/runs/${runId}`)).json().status, { timeout: 15_000 })
    .toBe('Completed');
  return runId;
}

describe('the event stream of a run that has ended', () => {
  it('replays the whole log to a first GET, then answers a reconnect after the last event 204', async () => {
    const runId = await finishedRun();
    const first = await t.call(alice, 'GET', `/api/runs/${runId}/events`);
    expect(first.statusCode).toBe(200);
    const events = parseEventStream(first.body);
    expect(events.map((event) => event.event)).toEqual([
      'run',
      'run.queued',
      'run.started',
      'step.started',
      'step.completed',
      'run.completed',
    ]);
    const last = events.at(-1)?.id as string;

    // What an EventSource sends when the server closed the stream: the last id it saw.
    const reconnect = await t.call(alice, 'GET', `/api/runs/${runId}/events`, undefined, {
      headers: { 'last-event-id': last },
    });
    expect(reconnect.statusCode).toBe(204);
    expect(reconnect.body).toBe('');
    const past = await t.call(alice, 'GET', `/api/runs/${runId}/events?after=${Number(last) + 1000}`);
    expect(past.statusCode).toBe(204);

    // A reconnect that missed events still gets them, and the end.
    const missed = await t.call(alice, 'GET', `/api/runs/${runId}/events?after=${events[2]?.id}`);
    expect(missed.statusCode).toBe(200);
    expect(parseEventStream(missed.body).map((event) => event.event)).toEqual([
      'run',
      'step.started',
      'step.completed',
      'run.completed',
    ]);
    // So does an explicit start from the beginning.
    const fromStart = await t.call(alice, 'GET', `/api/runs/${runId}/events?after=0`);
    expect(parseEventStream(fromStart.body)).toHaveLength(events.length);
  });

  it('answers 404 to a reconnect to a run that is not the caller’s', async () => {
    const runId = await finishedRun();
    const bob = await t.newWorkspace('stream-end-other');
    const response = await t.call(bob, 'GET', `/api/runs/${runId}/events`, undefined, {
      headers: { 'last-event-id': '1' },
    });
    expect(response.statusCode).toBe(404);
  });
});
