import { Type } from 'typebox';
import { Page, PageQuery, Timestamp, Uuid } from '../../http/schemas.ts';
import { ModelRefSchema } from '../../lib/model-ref.ts';

const fields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  time_zone: Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()], {
    description:
      'IANA time zone (Europe/Paris) the nightly jobs of its workspaces run in when a workspace set none; null: UTC',
  }),
  default_model: Type.Union([ModelRefSchema, Type.Null()], {
    description:
      'the default model ({provider, name}) new workspaces of the tenant start with in their provider settings; null: none',
  }),
};

const TenantWorkspace = Type.Object({ id: Uuid(), name: Type.String(), created_at: Timestamp() });

export const TenantSchema = Type.Object(
  {
    id: Uuid(),
    ...fields,
    created_by: Type.Union([Type.String(), Type.Null()], {
      description: 'who created it through this API; null for tenants made by sign-up',
    }),
    created_at: Timestamp(),
    updated_at: Timestamp(),
    workspaces: Type.Array(TenantWorkspace, { description: 'its workspaces, oldest first' }),
  },
  { $id: 'Tenant' },
);

export const TenantPage = Page(TenantSchema);

export const ListTenantsQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

export const CreateTenantBody = Type.Object(
  {
    name: fields.name,
    time_zone: Type.Optional(fields.time_zone),
    default_model: Type.Optional(fields.default_model),
    workspace_name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'also create the tenant’s first workspace, owned by the caller',
      }),
    ),
  },
  { additionalProperties: false },
);

export const UpdateTenantBody = Type.Object(
  {
    name: Type.Optional(fields.name),
    time_zone: Type.Optional(fields.time_zone),
    default_model: Type.Optional(fields.default_model),
  },
  { additionalProperties: false },
);

export const DeleteTenantQuery = Type.Object(
  {
    confirm: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description:
          'the tenant’s name, exactly: needed to delete a tenant that still has workspaces (they are deleted with it)',
      }),
    ),
  },
  { additionalProperties: false },
);
