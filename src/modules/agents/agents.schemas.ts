import { Type } from 'typebox';
import { AgentPolicyRefSchema, AgentStatusSchema, ToolRefSchema } from '../../db/schema/agents.ts';
import { Page, PageQuery, Tags, Timestamp, Uuid } from '../../http/schemas.ts';
import { ModelRefSchema } from '../../lib/model-ref.ts';

const fields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()]),
  role: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]),
  model: Type.Union([ModelRefSchema, Type.Null()], {
    description: 'the model this agent talks to; null uses the workspace’s default model',
  }),
  system_prompt: Type.Union([Type.String({ maxLength: 100_000 }), Type.Null()]),
  policy: Type.Union([AgentPolicyRefSchema, Type.Null()], {
    description:
      'a policy (id, label) whose assembled context replaces system_prompt, and whose model, when set, replaces model, in runs and chats (docs/policies.md)',
  }),
  tools: Type.Array(ToolRefSchema, { maxItems: 100 }),
  status: AgentStatusSchema,
  config: Type.Record(Type.String(), Type.Unknown()),
  tags: Tags(),
};

export const AgentSchema = Type.Object(
  {
    id: Uuid(),
    workspace_id: Uuid(),
    ...fields,
    created_by: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'Agent' },
);

export const CreateAgentBody = Type.Object(
  {
    name: fields.name,
    model: Type.Optional(fields.model),
    description: Type.Optional(fields.description),
    role: Type.Optional(fields.role),
    system_prompt: Type.Optional(fields.system_prompt),
    policy: Type.Optional(fields.policy),
    tools: Type.Optional(fields.tools),
    status: Type.Optional(fields.status),
    config: Type.Optional(fields.config),
    tags: Type.Optional(fields.tags),
  },
  { additionalProperties: false },
);

export const UpdateAgentBody = Type.Partial(Type.Object(fields), { additionalProperties: false });

export const ListAgentsQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: 255, description: 'case-insensitive match on name and description' }),
  ),
  tenant_id: Type.Optional(
    Uuid({ description: 'must be the current workspace’s tenant; any other tenant gives an empty list' }),
  ),
  status: Type.Optional(AgentStatusSchema),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  ...PageQuery,
});

export const AgentPage = Page(AgentSchema);
