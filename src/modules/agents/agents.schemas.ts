import { Type } from 'typebox';
import { Page, PageQuery, StringEnum, Tags, Timestamp, ToolRef, Uuid } from '../../http/schemas.ts';
import { AGENT_STATUSES } from '../../lib/statuses.ts';

const ModelRef = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 100, description: 'for example openai, anthropic' }),
    name: Type.String({ minLength: 1, maxLength: 255, description: 'the provider’s model name' }),
  },
  { additionalProperties: false },
);

const fields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()]),
  role: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]),
  model: ModelRef,
  system_prompt: Type.Union([Type.String({ maxLength: 100_000 }), Type.Null()]),
  tools: Type.Array(ToolRef, { maxItems: 100 }),
  status: StringEnum(AGENT_STATUSES),
  config: Type.Record(Type.String(), Type.Unknown()),
  tags: Tags(),
};

export const AgentSchema = Type.Object({
  id: Uuid(),
  workspace_id: Uuid(),
  ...fields,
  created_by: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const CreateAgentBody = Type.Object(
  {
    name: fields.name,
    model: fields.model,
    description: Type.Optional(fields.description),
    role: Type.Optional(fields.role),
    system_prompt: Type.Optional(fields.system_prompt),
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
  status: Type.Optional(StringEnum(AGENT_STATUSES)),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  ...PageQuery,
});

export const AgentPage = Page(AgentSchema);
