import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { LiveStreams } from '../../http/live-streams.ts';
import { bodyMayBeOmitted } from '../../http/optional-body.ts';
import {
  EventStream,
  IdempotentReplayedHeader,
  IdParams,
  Json,
  LocationHeader,
  NoContent,
} from '../../http/schemas.ts';
import { resumePoint, sendEventStream } from '../../http/sse.ts';
import {
  ListRunsQuery,
  RunEventsQuery,
  RunPage,
  RunSchema,
  RunStreamEvents,
  RunSummaryQuery,
  RunSummarySchema,
  RunWithStepsSchema,
  StartRunBody,
  StartRunHeaders,
} from './runs.schemas.ts';
import type { RunsService } from './runs.service.ts';

const tags = ['Runs'];

/** Starting runs, reading them, controlling them and following their events. */
export const runsRoutes: FastifyPluginAsyncTypebox<{
  runs: RunsService;
  /** Caps the event streams and ends them when the caller's access is withdrawn. */
  streams: Pick<LiveStreams, 'open'>;
}> = async (app, { runs, streams }) => {
  app.post(
    '/workflows/:id/run',
    {
      preValidation: bodyMayBeOmitted,
      schema: {
        operationId: 'startWorkflowRun',
        tags,
        summary: 'Run a workflow',
        description:
          "Records a run (status Queued) and answers 202 at once with it and a Location header; workers execute it. `inputs` fill the goal's {{placeholders}} (each missing one is a 400 naming it). An `Idempotency-Key` header makes a retried request answer the run the first one started (`Idempotent-Replayed: true`); the same key with a different body is a 422.",
        params: IdParams,
        headers: StartRunHeaders,
        body: Type.Optional(StartRunBody),
        response: {
          202: Json('The queued run (or, for a repeated Idempotency-Key, the run it started)', RunSchema, {
            ...LocationHeader('the run'),
            ...IdempotentReplayedHeader('sent when a repeated Idempotency-Key answered the run it started'),
          }),
        },
      },
    },
    async (request, reply) => {
      const { run, replayed } = await runs.start(
        request.caller,
        request.params.id,
        request.body ?? {},
        request.headers['idempotency-key'],
      );
      if (replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(202).header('location', `/api/runs/${run.id}`).send(run);
    },
  );

  app.get(
    '/runs',
    {
      schema: {
        operationId: 'listRuns',
        tags,
        summary: 'List runs',
        description:
          'Runs of the current workspace, newest first. Filters: workflow_id, agent_id (runs whose workflow had that agent), status, from/to (created_at).',
        querystring: ListRunsQuery,
        response: { 200: Json('A page of runs', RunPage) },
      },
    },
    async (request) => runs.list(request.caller, request.query),
  );

  app.get(
    '/runs/summary',
    {
      schema: {
        operationId: 'getRunsSummary',
        tags,
        summary: 'Recent runs feed',
        description: 'The rolling feed of recent runs, newest first, with duration, tokens, cost and status.',
        querystring: RunSummaryQuery,
        response: { 200: Json('The recent runs feed', RunSummarySchema) },
      },
    },
    async (request) => ({ items: await runs.summary(request.caller, request.query.limit) }),
  );

  app.get(
    '/runs/:id',
    {
      schema: {
        operationId: 'getRun',
        tags,
        summary: 'Get a run',
        description:
          'One run with every attempt of every step: agent, prompt, tool calls, output, tokens, cost, latency, error.',
        params: IdParams,
        response: { 200: Json('The run and its steps', RunWithStepsSchema) },
      },
    },
    async (request) => runs.getWithSteps(request.caller, request.params.id),
  );

  for (const action of ['cancel', 'pause', 'resume'] as const) {
    app.post(
      `/runs/:id/${action}`,
      {
        schema: {
          operationId: `${action}Run`,
          tags,
          summary: `${action[0]?.toUpperCase()}${action.slice(1)} a run`,
          description: ACTION_DESCRIPTIONS[action],
          params: IdParams,
          response: { 200: Json(ACTION_ANSWERS[action], RunSchema) },
        },
      },
      async (request) => runs[action](request.caller, request.params.id),
    );
  }

  app.get(
    '/runs/:id/events',
    {
      schema: {
        operationId: 'followRunEvents',
        tags,
        summary: 'Follow a run (Server-Sent Events)',
        description:
          'First a `run` event (no id) with the run as it is, then its event log from just after `Last-Event-ID` (or `?after=`), then live events until the run ends (a reconnect at or after the last event of a run that has ended is answered 204, so an EventSource stops): run.queued, run.started, step.started, tool_call, step.completed, step.failed, run.paused, run.resumed, run.completed, run.failed, run.cancelled (docs/runs.md). A client that reconnects with the last id it saw misses nothing. A heartbeat comment every 15 s. When the caller’s access is withdrawn (removed from the workspace, API key revoked, workspace deleted) the stream ends with an `error` event {code: access_revoked, status: 403, message}. Beyond STREAMS_PER_USER / STREAMS_PER_WORKSPACE open live streams: 429 too_many_streams.',
        params: IdParams,
        querystring: RunEventsQuery,
        response: {
          200: EventStream('The run’s events, until it ends', RunStreamEvents),
          204: NoContent(
            'a reconnect (`Last-Event-ID` or `?after=`) to a run that has ended, at or after its last event: nothing more will come, so an EventSource stops reconnecting',
          ),
        },
      },
    },
    async (request, reply) => {
      const after = resumePoint(request, request.query.after);
      // A first GET of a finished run replays its log; a reconnect that has seen all of it is
      // told there is no more (204), which makes a standard EventSource stop for good.
      const lastEventId = request.headers['last-event-id'];
      const resuming =
        request.query.after !== undefined ||
        (typeof lastEventId === 'string' ? lastEventId.trim() !== '' : lastEventId !== undefined);
      if (resuming && (await runs.streamEndedAt(request.caller, request.params.id, after))) {
        return reply.status(204).send(null);
      }
      const live = await streams.open(request, { counted: true });
      await sendEventStream(
        request,
        reply,
        (signal) => runs.events(request.caller, request.params.id, after, signal),
        {
          onError: (error) => request.log.error({ err: error }, 'run event stream failed'),
          live,
        },
      );
    },
  );
};

const ACTION_ANSWERS = {
  cancel: 'The run, Cancelled (or still Running with control "cancel")',
  pause: 'The run, Paused (or still Running with control "pause")',
  resume: 'The run, Queued again',
} as const;

const ACTION_DESCRIPTIONS = {
  cancel:
    'Queued or Paused: Cancelled at once. Running: the worker aborts the provider call in flight and ends the run Cancelled (the answer shows control "cancel" until it does). Finished runs: 409.',
  pause:
    'Queued: Paused at once. Running: Paused after the step in flight (control "pause" until then). Otherwise 409.',
  resume:
    'Paused: Queued again; it continues after its last completed step, not from the start. Otherwise 409.',
} as const;
