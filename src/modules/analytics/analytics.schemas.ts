import { type Static, type TSchema, Type } from 'typebox';
import { DateTime, Timestamp } from '../../http/schemas.ts';
import { StringEnum } from '../../lib/typebox.ts';

const Nullable = <T extends TSchema>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description ? { description } : {});

export const BucketSchema = StringEnum(['hour', 'day'] as const);

/** The window and bucket every analytics endpoint takes. */
export const AnalyticsQuery = Type.Object(
  {
    from: Type.Optional(
      DateTime({
        description:
          'start of the window (inclusive); default `to` minus 24 hours. Before `to`, and at most 400 days before it',
      }),
    ),
    to: Type.Optional(DateTime({ description: 'end of the window (exclusive); default now' })),
    bucket: Type.Optional(
      StringEnum(['hour', 'day'] as const, {
        description:
          'series bucket (UTC); default hour for windows up to 2 days, else day. hour takes a window of at most 31 days',
      }),
    ),
  },
  { additionalProperties: false },
);
export type AnalyticsQuery = Static<typeof AnalyticsQuery>;

const Window = {
  from: Timestamp(),
  to: Timestamp(),
  bucket: BucketSchema,
};

const RunFigures = {
  runs: Type.Integer({ description: 'runs created in the window' }),
  completed: Type.Integer(),
  failed: Type.Integer(),
  cancelled: Type.Integer(),
  success_rate: Nullable(Type.Number(), 'completed / (completed + failed); null when none finished'),
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  cost: Type.Number({ description: 'in the providers’ currency (USD)' }),
  latency_p50_ms: Nullable(
    Type.Number(),
    'median duration_ms of finished (Completed or Failed) runs; null when none',
  ),
  latency_p95_ms: Nullable(Type.Number()),
  conversations: Type.Integer({ description: 'chat conversations started in the window' }),
  messages: Type.Integer({ description: 'chat messages written in the window' }),
};

export const OverviewSchema = Type.Object({
  ...Window,
  totals: Type.Object(RunFigures),
  series: Type.Array(Type.Object({ start: Timestamp(), ...RunFigures })),
  rollup_days: Type.Integer({
    description:
      'whole UTC days of the window read from the daily rollups; 0 when every run figure comes from the raw runs (percentiles then exact; otherwise the totals’ percentiles come from merged histograms, within about 2.5 %, and each day bucket’s stay exact)',
  }),
});

const CostGroupFields = {
  cost: Type.Number(),
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
};

export const CostsSchema = Type.Object({
  ...Window,
  total_cost: Type.Number(),
  by_provider: Type.Array(
    Type.Object({ provider: Nullable(Type.String()), ...CostGroupFields, steps: Type.Integer() }),
  ),
  by_model: Type.Array(
    Type.Object({
      provider: Nullable(Type.String()),
      model: Nullable(Type.String()),
      ...CostGroupFields,
      steps: Type.Integer(),
    }),
  ),
  by_agent: Type.Array(
    Type.Object({
      agent_id: Nullable(Type.String(), 'null for steps of no agent (merges) or of a deleted agent'),
      agent_name: Nullable(Type.String()),
      ...CostGroupFields,
      steps: Type.Integer(),
    }),
  ),
  by_workflow: Type.Array(
    Type.Object({
      workflow_id: Nullable(Type.String(), 'null once the workflow was deleted'),
      workflow_name: Type.String(),
      ...CostGroupFields,
      runs: Type.Integer(),
    }),
  ),
  series: Type.Array(Type.Object({ start: Timestamp(), cost: Type.Number() })),
  rollup_days: Type.Integer({
    description:
      'whole UTC days of the window whose breakdowns came from the daily rollups (0: every figure from the raw runs and steps); sums are the same either way',
  }),
});

export const AgentAnalyticsSchema = Type.Object({
  ...Window,
  items: Type.Array(
    Type.Object({
      agent_id: Type.String({ format: 'uuid' }),
      name: Type.String(),
      status: Type.String(),
      runs: Type.Integer({ description: 'runs created in the window in which the agent ran a step' }),
      success_rate: Nullable(Type.Number()),
      steps: Type.Integer(),
      input_tokens: Type.Integer(),
      output_tokens: Type.Integer(),
      cost: Type.Number(),
      latency_p50_ms: Nullable(Type.Number(), 'median step latency_ms'),
      latency_p95_ms: Nullable(Type.Number()),
      busy_ms: Type.Number(),
      utilisation: Type.Number({ description: 'busy_ms / window length, at most 1' }),
    }),
  ),
  total: Type.Integer(),
  rollup_days: Type.Integer({
    description:
      'whole UTC days of the window read from the daily rollups; 0 when every step was read raw (latency percentiles then exact, otherwise from merged histograms within about 2.5 %, and busy time of rolled-up days not clipped at the window’s end)',
  }),
});
