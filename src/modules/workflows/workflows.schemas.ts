import { Type } from 'typebox';
import { ToolRefSchema } from '../../db/schema/agents.ts';
import { ExecutionPolicySchema, WorkflowStatusSchema } from '../../db/schema/workflows.ts';
import { Page, PageQuery, Tags, Timestamp, Uuid } from '../../http/schemas.ts';

export const ExecutionPolicyInput = Type.Partial(ExecutionPolicySchema, { additionalProperties: false });

const fields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()]),
  goal: Type.Union([
    Type.String({ maxLength: 20_000, description: 'may contain {{placeholder}} tokens filled at run time' }),
    Type.Null(),
  ]),
  agents: Type.Array(Uuid(), { maxItems: 50, description: 'ordered agent ids of this workspace' }),
  tools: Type.Array(ToolRefSchema, { maxItems: 100 }),
  context_template: Type.Record(Type.String(), Type.Unknown()),
  status: WorkflowStatusSchema,
  is_template: Type.Boolean(),
  tags: Tags(),
};

export const WorkflowSchema = Type.Object(
  {
    id: Uuid(),
    workspace_id: Uuid(),
    ...fields,
    execution_policy: ExecutionPolicySchema,
    playbook_id: Type.Union([Uuid(), Type.Null()], { description: 'the playbook it was promoted from' }),
    created_by: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'Workflow' },
);

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
  status: Type.Optional(WorkflowStatusSchema),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  is_template: Type.Optional(Type.Boolean()),
  ...PageQuery,
});

export const WorkflowPage = Page(WorkflowSchema);
