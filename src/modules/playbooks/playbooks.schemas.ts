import { Type } from 'typebox';
import {
  AttachmentModeSchema,
  CategorySchema,
  CategoryVoteSchema,
  ContextPatternSchema,
  MinePhaseSchema,
  MineStatusSchema,
  QualityPartsSchema,
} from '../../db/schema/playbooks.ts';
import { Page, PageQuery, Timestamp, Uuid } from '../../http/schemas.ts';
import { StringEnum } from '../../lib/typebox.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

/** The spec's limits (section 8): min_support 3 to 20, min_confidence 0.5 to 1.0. */
export const MINING_LIMITS = {
  minSupport: { minimum: 3, maximum: 20, default: 5 },
  minConfidence: { minimum: 0.5, maximum: 1, default: 0.8 },
  topK: { minimum: 1, maximum: 200, default: 20 },
} as const;

export const ConfidenceBandSchema = StringEnum(['high', 'medium', 'low'] as const, {
  description: 'high above 90 %, medium 70 to 90 %, low below 70 %',
});

export const PlaybookSchema = Type.Object(
  {
    id: Uuid(),
    workspace_id: Uuid(),
    name: Type.String(),
    description: Type.String(),
    category: Nullable(CategorySchema),
    category_votes: Type.Array(CategoryVoteSchema, {
      description: 'why the badge: keyword votes per category, highest first',
    }),
    confidence: Type.Number({ description: 'P(success | pattern) over the window’s finished runs, 0 to 1' }),
    confidence_percent: Type.Integer({ description: 'confidence as 0 to 100 %' }),
    confidence_band: ConfidenceBandSchema,
    support: Type.Integer({ description: 'successful runs matching the pattern' }),
    matching_runs: Type.Integer({ description: 'finished runs matching the pattern, successful or not' }),
    lift: Type.Number({ description: 'confidence over the workspace’s base success rate' }),
    success_rate: Type.Number({ description: 'share of matching runs that succeeded (equals confidence)' }),
    agent_pattern: Type.Array(Type.String(), { description: 'agent names, in their usual order' }),
    tool_pattern: Type.Array(Type.String()),
    context_pattern: ContextPatternSchema,
    items: Type.Array(Type.String(), {
      description: 'the mined itemset (docs/playbooks.md has the vocabulary)',
    }),
    goal_template: Type.String({ description: 'the goal a promoted workflow gets, with {{placeholders}}' }),
    avg_duration_ms: Type.Integer(),
    avg_cost: Type.Number(),
    usage_count: Type.Integer({ description: 'runs of workflows promoted from this playbook' }),
    quality_score: Type.Number({ minimum: 0, maximum: 1 }),
    quality_parts: QualityPartsSchema,
    example_run_ids: Type.Array(Uuid(), { description: 'a few matching successful runs' }),
    archived: Type.Boolean(),
    archived_at: Nullable(Timestamp()),
    mined_at: Timestamp(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'Playbook' },
);

export const PlaybookPage = Page(PlaybookSchema);

export const ListPlaybooksQuery = Type.Object({
  tenant_id: Type.Optional(
    Uuid({ description: 'every workspace of this tenant that you belong to, instead of the current one' }),
  ),
  category: Type.Optional(CategorySchema),
  confidence: Type.Optional(ConfidenceBandSchema),
  include_archived: Type.Boolean({ default: false }),
  agent_id: Type.Optional(Uuid({ description: 'only the playbooks attached to this agent' })),
  ...PageQuery,
});

const TimeRange = Type.Union(
  [
    StringEnum(['last_7_days', 'last_30_days', 'last_90_days'] as const),
    Type.Object(
      { from: Timestamp(), to: Type.Optional(Timestamp()) },
      {
        additionalProperties: false,
        description: 'a custom range, `from` before `to`; `to` defaults to now',
      },
    ),
  ],
  { description: 'which finished runs are mined (by their end time); default last_30_days' },
);

export const MineBody = Type.Object(
  {
    tenant_id: Type.Optional(
      Uuid({ description: 'mine the runs of every workspace of this tenant that you belong to' }),
    ),
    min_support: Type.Integer({
      ...MINING_LIMITS.minSupport,
      description: 'successful runs a pattern needs at least (3 to 20)',
    }),
    min_confidence: Type.Number({
      ...MINING_LIMITS.minConfidence,
      description: 'P(success | pattern) a pattern needs at least (0.5 to 1.0)',
    }),
    top_k: Type.Integer({ ...MINING_LIMITS.topK, description: 'playbooks kept, best quality first' }),
    time_range: Type.Optional(TimeRange),
    categories: Type.Optional(Type.Array(CategorySchema, { minItems: 1, maxItems: 6, uniqueItems: true })),
  },
  { additionalProperties: false },
);

export const MineResult = Type.Object({
  scope: Type.Object({
    workspace_ids: Type.Array(Uuid()),
    from: Timestamp(),
    to: Timestamp(),
  }),
  runs: Type.Integer({ description: 'finished runs in the window (Completed or Failed)' }),
  successful_runs: Type.Integer(),
  base_success_rate: Type.Number(),
  itemsets: Type.Integer({ description: 'closed frequent itemsets found before filtering and merging' }),
  took_ms: Type.Object({
    load: Type.Integer({ description: 'reading the runs' }),
    transactions: Type.Integer({ description: 'runs into transactions' }),
    mining: Type.Integer({ description: 'FP-Growth in its worker thread' }),
    scoring: Type.Integer(),
    store: Type.Integer(),
  }),
  playbooks: Type.Array(PlaybookSchema),
});

export const MineSchema = Type.Object(
  {
    id: Uuid(),
    status: MineStatusSchema,
    phase: Nullable(MinePhaseSchema),
    input: Type.Object(
      {},
      {
        additionalProperties: true,
        description: 'the request as given, its `time_range` fixed to the dates it meant when it was made',
      },
    ),
    runs: Type.Integer({ description: 'finished runs in the window when it was requested' }),
    requested_by: Type.String(),
    result: Nullable(MineResult),
    error: Nullable(Type.String({ description: 'why the mine failed' })),
    created_at: Timestamp(),
    started_at: Nullable(Timestamp()),
    finished_at: Nullable(Timestamp()),
  },
  { $id: 'PlaybookMine' },
);
export const MinePage = Page(MineSchema);
export const ListMinesQuery = Type.Object({ ...PageQuery });

/** `Prefer: respond-async` (RFC 7240) asks for a background mine whatever the window's size. */
export const MineHeaders = Type.Object({
  prefer: Type.Optional(
    Type.String({ description: '`respond-async` mines in the background: 202 with the mine to follow' }),
  ),
});

export const UpdatePlaybookBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    description: Type.Optional(Type.String({ maxLength: 10_000 })),
    category: Type.Optional(Nullable(CategorySchema)),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const PromoteBody = Type.Object(
  {
    playbook_id: Uuid(),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    option: StringEnum(['create_only', 'create_and_execute', 'save_as_template'] as const, {
      default: 'create_only',
    }),
    inputs: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 100 }), Type.String({ maxLength: 100_000 }), {
        description:
          'fills the goal template’s {{placeholders}} (create_and_execute); each one it uses is required',
        maxProperties: 100,
      }),
    ),
  },
  { additionalProperties: false },
);

export const PromoteResult = Type.Object({
  workflow: Type.Object(
    {
      id: Uuid(),
      name: Type.String(),
      goal: Nullable(Type.String()),
      agents: Type.Array(Uuid()),
      is_template: Type.Boolean(),
      playbook_id: Nullable(Uuid()),
    },
    { additionalProperties: true, description: 'the new workflow, as GET /api/workflows/{id} shows it' },
  ),
  run: Nullable(
    Type.Object(
      { id: Uuid(), status: Type.String(), workflow_id: Nullable(Uuid()) },
      {
        additionalProperties: true,
        description: 'the run started (create_and_execute), as GET /api/runs/{id} shows it',
      },
    ),
  ),
});

export const AttachmentSchema = Type.Object({
  id: Uuid(),
  workspace_id: Uuid(),
  playbook_id: Uuid(),
  agent_id: Uuid(),
  when: Type.String({ description: 'the rule, in the condition language (docs/playbooks.md)' }),
  mode: AttachmentModeSchema,
  triggers: Type.Integer({ description: 'run steps the rule matched (first attempts)' }),
  created_by: Nullable(Type.String()),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const AttachmentsResult = Type.Object({
  playbook_id: Uuid(),
  attachments: Type.Array(AttachmentSchema),
});

const AgentIds = Type.Array(Uuid(), { minItems: 1, maxItems: 50, uniqueItems: true });

export const AttachBody = Type.Object(
  {
    playbook_id: Uuid(),
    agent_ids: AgentIds,
    rules: Type.Optional(
      Type.Object(
        {
          when: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 2000,
              description:
                'when the playbook applies to a run step of the agent, in the condition language over goal, context, inputs, tags, workflow and agent (default `true`)',
            }),
          ),
          mode: Type.Optional(AttachmentModeSchema),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const DetachBody = Type.Object(
  { playbook_id: Uuid(), agent_ids: Type.Optional(AgentIds) },
  { additionalProperties: false },
);

export const DetachResult = Type.Object({ playbook_id: Uuid(), detached: Type.Integer() });

export const ScheduleSchema = Type.Object({
  cron: Type.String({ description: 'five-field cron (minute hour day-of-month month day-of-week)' }),
  time_zone: Type.String({
    description:
      'IANA time zone the cron is read in: the workspace’s, else its tenant’s (PUT /settings/tenants/{id}), else UTC',
  }),
  enabled: Type.Boolean(),
  next_run_at: Nullable(Timestamp()),
  last_slot: Nullable(Timestamp({ description: 'the last scheduled time taken by a process' })),
  last_finished_at: Nullable(Timestamp()),
  last_error: Nullable(Type.String()),
  last_result: Nullable(Type.Record(Type.String(), Type.Unknown())),
});

export const PutScheduleBody = Type.Object(
  {
    cron: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description:
            'five-field cron (minute hour day-of-month month day-of-week); null: back to 0 2 * * *',
        }),
      ),
    ),
    time_zone: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 64,
          description: 'an IANA time zone (Europe/Paris); null: back to the tenant’s time zone, else UTC',
        }),
      ),
    ),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
