import { Type } from 'typebox';
import { RoleSchema } from '../../db/schema/workspaces.ts';
import { DateTime, Page, PageQuery, Timestamp, Uuid } from '../../http/schemas.ts';
import { StringEnum } from '../../lib/typebox.ts';

const TenantRef = Type.Object({ id: Uuid(), name: Type.String() });

export const WorkspaceSchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    created_at: Timestamp(),
    tenant: TenantRef,
    role: RoleSchema,
  },
  { $id: 'Workspace' },
);

export const CurrentWorkspaceSchema = Type.Object({
  id: Uuid(),
  name: Type.String(),
  created_at: Timestamp(),
  tenant: TenantRef,
  role: RoleSchema,
  user_id: Type.String(),
});

export const CreateWorkspaceBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    tenant_name: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'defaults to name' }),
    ),
  },
  { additionalProperties: false },
);

export const MemberSchema = Type.Object(
  {
    workspace_id: Uuid(),
    user_id: Type.String(),
    role: RoleSchema,
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { $id: 'Member' },
);

export const MemberPage = Page(MemberSchema);

export const AddMemberBody = Type.Object(
  {
    user_id: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'the identity provider subject (sub)',
    }),
    role: RoleSchema,
  },
  { additionalProperties: false },
);

export const ChangeRoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false });

export const MemberParams = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 255 }) });

export const ListQuery = Type.Object(PageQuery);

export const ApiKeySchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    prefix: Type.String({ description: 'the visible start of the key, for recognising it' }),
    status: StringEnum(['active', 'revoked', 'expired'] as const),
    created_by: Type.String(),
    created_at: Timestamp(),
    expires_at: Type.Union([Timestamp(), Type.Null()]),
    revoked_at: Type.Union([Timestamp(), Type.Null()]),
    last_used_at: Type.Union([Timestamp(), Type.Null()], { description: 'refreshed at most once a minute' }),
  },
  { $id: 'ApiKey' },
);

export const CreatedApiKeySchema = Type.Object({
  ...ApiKeySchema.properties,
  key: Type.String({ description: 'the full key; shown only in this response' }),
});

export const ApiKeyPage = Page(ApiKeySchema);

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    expires_at: Type.Optional(DateTime({ description: 'optional expiry, in the future' })),
  },
  { additionalProperties: false },
);
