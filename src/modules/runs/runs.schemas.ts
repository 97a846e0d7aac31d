import { Type } from 'typebox';
import {
  PlaybookTriggerSchema,
  RunControlSchema,
  RunFailureReasonSchema,
  RunPlanSchema,
  RunStatusSchema,
  RunStepKindSchema,
  RunStepStatusSchema,
  ToolCallRecordSchema,
} from '../../db/schema/runs.ts';
import { AppliedPriceSchema } from '../../db/schema/settings.ts';
import {
  DateTime,
  IdempotencyKeyHeader,
  Page,
  PageQuery,
  StreamErrorEvent,
  Timestamp,
  Uuid,
} from '../../http/schemas.ts';
import { PLACEHOLDER_NAME_PATTERN } from '../../lib/placeholders.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** Placeholder names: what `{{name}}` in a goal may hold. */
const InputName = Type.String({ pattern: PLACEHOLDER_NAME_PATTERN, maxLength: 100 });

export const StartRunBody = Type.Object(
  {
    inputs: Type.Optional(
      Type.Record(InputName, Type.String({ maxLength: 100_000 }), {
        description: "values for the goal's {{placeholders}}; each one the goal uses is required",
        maxProperties: 100,
      }),
    ),
    context: Type.Optional(
      Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), {
        description: "merged over the workflow's context_template and shown to every agent",
        maxProperties: 100,
      }),
    ),
  },
  { additionalProperties: false },
);

export const StartRunHeaders = Type.Object({
  'idempotency-key': IdempotencyKeyHeader(
    'a retried request with the same key answers the run the first one started',
  ),
});

export const RunSchema = Type.Object(
  {
    id: Uuid(),
    workspace_id: Uuid(),
    workflow_id: Nullable(Uuid({ description: 'null once the workflow is deleted' })),
    workflow_name: Type.String(),
    status: RunStatusSchema,
    control: Nullable(RunControlSchema),
    inputs: Type.Record(Type.String(), Type.String()),
    context: Type.Record(Type.String(), Type.Unknown()),
    plan: RunPlanSchema,
    agent_ids: Type.Array(Uuid()),
    next_step: Type.Integer({ description: 'completed steps so far' }),
    output: Nullable(Type.String()),
    failure_reason: Nullable(RunFailureReasonSchema),
    error: Nullable(Type.String()),
    agents_used: Type.Array(Type.String(), { description: 'agent names in order of execution' }),
    tools_used: Type.Array(Type.String()),
    context_fields: Type.Array(Type.String()),
    tokens_in: Type.Integer(),
    tokens_out: Type.Integer(),
    cost: Type.Number(),
    duration_ms: Nullable(Type.Integer()),
    attempts: Type.Integer({
      description: 'times a worker claimed the run (more than 1 after a lost worker)',
    }),
    idempotency_key: Nullable(Type.String()),
    policy_id: Nullable(Type.String({ description: 'the policy an agent of the run was assembled from' })),
    policy_version: Nullable(Type.Integer()),
    policy_variant: Nullable(Type.String({ description: 'a or b when an A/B test served the policy' })),
    experiment_id: Nullable(Uuid()),
    created_by: Nullable(Type.String()),
    created_at: Timestamp(),
    updated_at: Timestamp(),
    started_at: Nullable(Timestamp()),
    finished_at: Nullable(Timestamp()),
  },
  { $id: 'Run' },
);

export const RunStepSchema = Type.Object(
  {
    id: Uuid(),
    position: Type.Integer(),
    attempt: Type.Integer(),
    kind: RunStepKindSchema,
    agent_id: Nullable(Uuid()),
    agent_name: Nullable(Type.String()),
    status: RunStepStatusSchema,
    prompt: Nullable(Type.String()),
    output: Nullable(Type.String()),
    tool_calls: Type.Array(ToolCallRecordSchema),
    playbook_triggers: Type.Array(PlaybookTriggerSchema, {
      description: 'attached playbooks whose rules matched, and what each added to the prompt',
    }),
    provider: Nullable(Type.String()),
    model: Nullable(Type.String()),
    tokens_in: Type.Integer(),
    tokens_out: Type.Integer(),
    cost: Type.Number(),
    price: Nullable(AppliedPriceSchema),
    latency_ms: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    degraded: Nullable(
      Type.String({
        description:
          'set when the answer is not a model’s: the built-in local provider answered because every model before it in the fallback chain failed; names each model and its error',
      }),
    ),
    started_at: Timestamp(),
    finished_at: Nullable(Timestamp()),
  },
  { $id: 'RunStep' },
);

export const RunWithStepsSchema = Type.Object(
  { ...RunSchema.properties, steps: Type.Array(RunStepSchema) },
  { $id: 'RunWithSteps' },
);

export const ListRunsQuery = Type.Object({
  workflow_id: Type.Optional(Uuid()),
  agent_id: Type.Optional(Uuid({ description: 'runs whose workflow had this agent when they started' })),
  status: Type.Optional(RunStatusSchema),
  from: Type.Optional(DateTime({ description: 'created at or after' })),
  to: Type.Optional(DateTime({ description: 'created before' })),
  ...PageQuery,
});

export const RunPage = Page(RunSchema);

export const RunSummaryQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'how many recent runs' }),
});

export const RunSummarySchema = Type.Object({
  items: Type.Array(
    Type.Object({
      id: Uuid(),
      workflow_id: Nullable(Uuid()),
      workflow_name: Type.String(),
      status: RunStatusSchema,
      failure_reason: Nullable(RunFailureReasonSchema),
      tokens_in: Type.Integer(),
      tokens_out: Type.Integer(),
      cost: Type.Number(),
      duration_ms: Nullable(Type.Integer()),
      created_at: Timestamp(),
      started_at: Nullable(Timestamp()),
      finished_at: Nullable(Timestamp()),
    }),
  ),
});

export const RunEventsQuery = Type.Object({
  after: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'replay events after this id (Last-Event-ID wins)',
    }),
  ),
});

/** The run event names of the log (docs/runs.md). */
const RUN_EVENT_NAMES = [
  'run.queued',
  'run.started',
  'step.started',
  'tool_call',
  'step.completed',
  'step.failed',
  'run.paused',
  'run.resumed',
  'run.completed',
  'run.failed',
  'run.cancelled',
] as const;

/** The events of `GET /runs/:id/events`, as `EventStream` documents them. */
export const RunStreamEvents = [
  { name: 'run', data: RunSchema, description: 'first, the run as it is (no id)' },
  {
    name: Type.Unsafe<(typeof RUN_EVENT_NAMES)[number]>({ type: 'string', enum: [...RUN_EVENT_NAMES] }),
    id: 'the event id: send it back as Last-Event-ID to resume after it',
    data: Type.Object(
      { run_id: Uuid(), created_at: Timestamp() },
      {
        additionalProperties: true,
        description: 'the logged event’s fields (docs/runs.md), with its run and time',
      },
    ),
    description: 'an event of the run’s log, oldest first, then live',
  },
  StreamErrorEvent,
];
