import { Type } from 'typebox';
import {
  MESSAGE_ROLES,
  PolicyContentFields,
  PolicyContentSchema,
  PolicyModelSchema,
} from '../../db/schema/policies.ts';
import { Page, PageQuery, Timestamp } from '../../http/schemas.ts';
import { StringEnum } from '../../lib/typebox.ts';

/** A policy id: a workspace-scoped slug (`support-triage`). `abtest` is reserved for the routes. */
export const POLICY_ID_PATTERN = '^[a-z0-9][a-z0-9_-]{0,99}$';
export const LABEL_PATTERN = '^[a-z0-9][a-z0-9_-]{0,49}$';

const PolicyId = Type.String({
  pattern: POLICY_ID_PATTERN,
  description: 'the policy id, a slug; `abtest` is reserved (the A/B test routes)',
});
const Label = Type.String({
  pattern: LABEL_PATTERN,
  description: 'a label: production, latest or your own; not together with version',
});
const Version = Type.Integer({
  minimum: 1,
  maximum: 1_000_000,
  description: 'a version number; not together with label',
});
/**
 * A label or a version names a policy version, never both: said in the schema (with a label,
 * no version), checked by Ajv, and the error names `version`.
 */
const LabelOrVersion = {
  if: { required: ['label'] },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable
  then: { properties: { version: false } },
};

export const PolicyParams = Type.Object({ policy_id: PolicyId });

export const PutPolicyBody = Type.Object(
  {
    ...PolicyContentFields,
    labels: Type.Optional(
      Type.Array(Label, {
        maxItems: 10,
        uniqueItems: true,
        description: 'labels moved to the new version; latest is always moved',
      }),
    ),
  },
  { additionalProperties: false },
);

export const PutPolicyHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'the current version ("3"): the write happens only if it is still current, else 412',
    }),
  ),
});

export const GetPolicyQuery = Type.Object(
  {
    tenant_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'narrows to your workspace of this tenant' }),
    ),
    label: Type.Optional(Label),
    version: Type.Optional(Version),
  },
  { additionalProperties: false, ...LabelOrVersion },
);

export const PolicySchema = Type.Object(
  {
    policy_id: Type.String(),
    version: Type.Integer({ description: 'the version shown' }),
    content_hash: Type.String({ description: 'sha256 of the content’s canonical JSON' }),
    content: PolicyContentSchema,
    labels: Type.Record(Type.String(), Type.Integer(), {
      description: 'every label and the version it points at',
    }),
    versions: Type.Array(
      Type.Object({
        version: Type.Integer(),
        content_hash: Type.String(),
        labels: Type.Array(Type.String()),
        created_by: Type.String(),
        created_at: Type.String({ format: 'date-time' }),
      }),
      { description: 'every version, newest first' },
    ),
    created_by: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Policy' },
);

export const ListPoliciesQuery = Type.Object(
  {
    q: Type.Optional(
      Type.String({
        maxLength: 255,
        description: 'case-insensitive match on the policy id and the latest version’s description',
      }),
    ),
    ...PageQuery,
  },
  { additionalProperties: false },
);

/** A policy in the workspace's list: its latest version, labels and whether an A/B test runs. */
export const PolicySummarySchema = Type.Object(
  {
    policy_id: Type.String(),
    description: Type.Union([Type.String(), Type.Null()], {
      description: 'the latest version’s description, null when it has none',
    }),
    latest_version: Type.Integer({ description: 'the newest version number' }),
    labels: Type.Record(Type.String(), Type.Integer(), {
      description: 'every label and the version it points at',
    }),
    updated_at: Timestamp({ description: 'when a version was written or a label moved last' }),
    experiment_running: Type.Boolean({
      description: 'whether a running A/B test has this policy as one of its arms',
    }),
  },
  { $id: 'PolicySummary' },
);

export const PolicySummaryPage = Page(PolicySummarySchema);

export const AssembleBody = Type.Object(
  {
    label: Type.Optional(Label),
    version: Type.Optional(Version),
    agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    conversation_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    user_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'the end user; the caller when absent' }),
    ),
    variables: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { maxProperties: 100, description: 'values for {{name}}' }),
    ),
    context: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        maxProperties: 100,
        description: 'facts conditions test',
      }),
    ),
    dry_run: Type.Optional(Type.Boolean({ description: 'renders without recording an exposure' })),
  },
  { additionalProperties: false, ...LabelOrVersion, description: 'at most one of label and version' },
);

const Role = StringEnum(MESSAGE_ROLES);

export const AssemblySchema = Type.Object({
  assembly_id: Type.String({ description: 'derived from the inputs: the same inputs, the same id' }),
  policy_id: Type.String({ description: 'the policy served (the treatment’s, when it is another policy)' }),
  version: Type.Integer(),
  content_hash: Type.String(),
  label: Type.Union([Type.String(), Type.Null()], { description: 'the label resolved, null for a version' }),
  experiment: Type.Union([
    Type.Object({
      id: Type.String(),
      variant: StringEnum(['a', 'b'] as const),
      unit: StringEnum(['conversation', 'user'] as const),
      unit_id: Type.String(),
    }),
    Type.Null(),
  ]),
  messages: Type.Array(Type.Object({ role: Role, content: Type.String() })),
  sections: Type.Array(
    Type.Object({
      name: Type.String(),
      kind: Type.String(),
      role: Role,
      static: Type.Boolean(),
      included: Type.Boolean(),
      reason: StringEnum(['always', 'condition_true', 'condition_false', 'over_budget'] as const),
      tokens: Type.Integer(),
    }),
  ),
  model: Type.Union([PolicyModelSchema, Type.Null()]),
  tools: Type.Array(
    Type.Object({ name: Type.String(), config: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }),
  ),
  retrieval: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  playbooks: Type.Array(Type.String()),
  tokens: Type.Object({
    total: Type.Integer(),
    budget: Type.Union([Type.Integer(), Type.Null()]),
    truncated: Type.Array(Type.String(), { description: 'sections left out to fit the budget' }),
  }),
  unresolved_variables: Type.Array(Type.String(), { description: 'placeholders rendered empty' }),
  dry_run: Type.Boolean(),
});

// ---- experiments ----

export const ArmRef = Type.Object(
  {
    policy_id: PolicyId,
    label: Type.Optional(Label),
    version: Type.Optional(Version),
  },
  {
    additionalProperties: false,
    ...LabelOrVersion,
    description: 'a policy at a label or a version (exactly one)',
  },
);

export const METRICS = ['success_rate', 'cost_per_run', 'p95_latency', 'retrieval_hit_rate'] as const;

export const SetExperimentBody = Type.Object(
  {
    policy_a: ArmRef,
    policy_b: ArmRef,
    weights: Type.Optional(
      Type.Array(Type.Number({ minimum: 0, maximum: 10_000 }), {
        minItems: 2,
        maxItems: 2,
        description: 'relative weights of a and b; [50, 50] by default',
      }),
    ),
    coverage: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1, description: 'share of units in the experiment; 1 by default' }),
    ),
    unit: Type.Optional(
      StringEnum(['conversation', 'user'] as const, { description: 'conversation by default' }),
    ),
    primary_metric: Type.Optional(StringEnum(METRICS, { description: 'success_rate by default' })),
    guardrail_metrics: Type.Optional(Type.Array(StringEnum(METRICS), { maxItems: 4, uniqueItems: true })),
    action: Type.Optional(
      StringEnum(['start', 'stop', 'choose_winner'] as const, {
        description: 'start (default when created), stop, or choose_winner (moves production)',
      }),
    ),
    winner: Type.Optional(StringEnum(['a', 'b'] as const, { description: 'with choose_winner' })),
  },
  { additionalProperties: false },
);

export const GetExperimentQuery = Type.Object(
  {
    policy_a: PolicyId,
    policy_b: PolicyId,
  },
  { additionalProperties: false },
);

const ArmView = Type.Object({
  policy_id: Type.String(),
  label: Type.Optional(Type.String()),
  version: Type.Optional(Type.Integer()),
});

export const ExperimentSchema = Type.Object({
  id: Type.String(),
  policy_a: ArmView,
  policy_b: ArmView,
  weights: Type.Array(Type.Number()),
  coverage: Type.Number(),
  unit: Type.String(),
  primary_metric: Type.String(),
  guardrail_metrics: Type.Array(Type.String()),
  status: StringEnum(['running', 'stopped', 'concluded'] as const),
  winner: Type.Union([StringEnum(['a', 'b'] as const), Type.Null()]),
  started_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  stopped_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  updated_at: Type.String({ format: 'date-time' }),
});

const Nullable = <T extends ReturnType<typeof Type.Number>>(t: T) => Type.Union([t, Type.Null()]);

export const MetricResult = Type.Object({
  metric: Type.String(),
  role: StringEnum(['primary', 'guardrail'] as const),
  higher_is_better: Type.Boolean(),
  a: Nullable(Type.Number()),
  b: Nullable(Type.Number()),
  relative_lift: Nullable(Type.Number()),
  ci95: Type.Union([Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }), Type.Null()]),
  chance_to_win: Nullable(Type.Number()),
  expected_loss: Nullable(Type.Number()),
  unavailable_reason: Type.Union([Type.String(), Type.Null()]),
});

export const ExperimentResultsSchema = Type.Object({
  experiment: ExperimentSchema,
  units: Type.Object({ a: Type.Integer(), b: Type.Integer() }),
  srm: Type.Object({ chi_squared: Type.Number(), p_value: Type.Number(), mismatch: Type.Boolean() }),
  metrics: Type.Array(MetricResult),
  verdict: Type.Object({
    decision: StringEnum([
      'insufficient_data',
      'sample_ratio_mismatch',
      'treatment_wins',
      'control_wins',
      'inconclusive',
      'guardrail_regression',
    ] as const),
    reason: Type.String(),
  }),
});
