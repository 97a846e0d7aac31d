import { Type } from 'typebox';
import { Page, PageQuery, StringEnum, Tags, Timestamp, ToolRef, Uuid } from '../../http/schemas.ts';
import { WORKFLOW_STATUSES } from '../../lib/statuses.ts';

const policyFields = {
  mode: StringEnum(['sequential', 'parallel'] as const, { description: 'how the agents run' }),
  error_handling: StringEnum(['stop', 'continue', 'retry'] as const, {
    description: 'what a failed step does',
  }),
  max_retries: Type.Integer({
    minimum: 0,
    maximum: 10,
    description: 'retries per step when error_handling is retry',
  }),
  timeout_seconds: Type.Integer({ minimum: 1, maximum: 86_400, description: 'whole-run timeout' }),
};

export const ExecutionPolicySchema = Type.Object(policyFields);

/** Any subset of the policy; omitted fields keep their current (or default) values. */
export const ExecutionPolicyInput = Type.Partial(Type.Object(policyFields), { additionalProperties: false });

const fields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()]),
  goal: Type.Union([
    Type.String({ maxLength: 20_000, description: 'may contain {{placeholder}} tokens filled at run time' }),
    Type.Null(),
  ]),
  agents: Type.Array(Uuid(), { maxItems: 50, description: 'ordered agent ids of this workspace' }),
  tools: Type.Array(ToolRef, { maxItems: 100 }),
  context_template: Type.Record(Type.String(), Type.Unknown()),
  status: StringEnum(WORKFLOW_STATUSES),
  is_template: Type.Boolean(),
  tags: Tags(),
};

export const WorkflowSchema = Type.Object({
  id: Uuid(),
  workspace_id: Uuid(),
  ...fields,
  execution_policy: ExecutionPolicySchema,
  created_by: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const CreateWorkflowBody = Type.Object(
  {
    name: fields.name,
    description: Type.Optional(fields.description),
    goal: Type.Optional(fields.goal),
    agents: Type.Optional(fields.agents),
    tools: Type.Optional(fields.tools),
    execution_policy: Type.Optional(ExecutionPolicyInput),
    context_template: Type.Optional(fields.context_template),
    status: Type.Optional(fields.status),
    is_template: Type.Optional(fields.is_template),
    tags: Type.Optional(fields.tags),
  },
  { additionalProperties: false },
);

export const UpdateWorkflowBody = Type.Partial(
  Type.Object({ ...fields, execution_policy: ExecutionPolicyInput }),
  { additionalProperties: false },
);

export const ListWorkflowsQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: 255, description: 'case-insensitive match on name and description' }),
  ),
  status: Type.Optional(StringEnum(WORKFLOW_STATUSES)),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  is_template: Type.Optional(Type.Boolean()),
  ...PageQuery,
});

export const WorkflowPage = Page(WorkflowSchema);
