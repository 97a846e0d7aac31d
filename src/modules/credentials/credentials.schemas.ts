import { Type } from 'typebox';
import {
  AuditActionSchema,
  CredentialCategorySchema,
  FieldDefinitionSchema,
  MasterKeyIdSchema,
  TestEndpointSchema,
  TestStatusSchema,
} from '../../db/schema/credentials.ts';
import { CredentialSettingsSchema } from '../../db/schema/settings.ts';
import { DateTime, IntId, Page, PageQuery, Timestamp } from '../../http/schemas.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

export const CredentialIdParams = Type.Object({ id: IntId() });

export const CredentialTypeSchema = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    display_name: Type.String(),
    category: Type.String(),
    icon: Nullable(Type.String()),
    logo: Nullable(Type.String()),
    description: Nullable(Type.String()),
    schema_definition: Type.Array(FieldDefinitionSchema),
    test_endpoint: Nullable(TestEndpointSchema),
    is_system: Type.Boolean(),
    is_active: Type.Boolean(),
  },
  { $id: 'CredentialType' },
);

export const CreateCredentialTypeBody = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z][a-z0-9_]{0,254}$', maxLength: 255 }),
    display_name: Type.String({ minLength: 1, maxLength: 255 }),
    category: CredentialCategorySchema,
    icon: Type.Optional(Nullable(Type.String({ maxLength: 50 }))),
    logo: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    schema_definition: Type.Array(FieldDefinitionSchema, { minItems: 1, maxItems: 100 }),
    test_endpoint: Type.Optional(Nullable(TestEndpointSchema)),
  },
  { additionalProperties: false },
);

export const ListTypesQuery = Type.Object({
  category: Type.Optional(CredentialCategorySchema),
  is_active: Type.Optional(Type.Boolean()),
});

const Environment = Type.String({ minLength: 1, maxLength: 50, pattern: '^[A-Za-z0-9_.-]+$' });
const CredentialTags = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: 50,
  uniqueItems: true,
});
const AllowedHosts = Nullable(
  Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
    maxItems: 50,
    description:
      'admins only: the hosts tools may send this credential to (`api.example.com`, `*.example.com`, `host:8443`; without a port, https on 443); null: the host of the type’s test endpoint',
  }),
);
const CredentialDataSchema = Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), {
  description: 'values keyed by the type’s field names',
});

const credentialFields = {
  id: Type.Integer(),
  name: Type.String(),
  workspace_id: Type.String({ format: 'uuid' }),
  credential_type_id: Type.Integer(),
  credential_type: Type.String({ description: 'the type’s name' }),
  environment: Type.String(),
  description: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  allowed_hosts: Nullable(
    Type.Array(Type.String(), {
      description:
        'where tools may send the secrets (host[:port], *.domain; no port: https on 443); null: the host of the type’s test endpoint',
    }),
  ),
  is_active: Type.Boolean(),
  is_expired: Type.Boolean(),
  expires_at: Nullable(Timestamp()),
  last_tested: Nullable(Timestamp()),
  test_status: Nullable(TestStatusSchema),
  test_message: Nullable(Type.String()),
  created_by: Nullable(Type.String()),
  created_at: Timestamp(),
  updated_at: Timestamp(),
};

export const CredentialSchema = Type.Object(credentialFields, {
  $id: 'Credential',
  description: 'a credential; never its secrets or encrypted_data',
});

export const CredentialDetailsSchema = Type.Object(
  {
    ...credentialFields,
    data: Nullable(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          'non-secret fields as stored, password and hidden fields as ********; null when undecryptable',
      }),
    ),
  },
  { $id: 'CredentialDetails' },
);

export const CredentialPage = Page(CredentialSchema);

export const CreateCredentialBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    credential_type_id: IntId(),
    data: CredentialDataSchema,
    environment: Type.Optional(Environment),
    description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    tags: Type.Optional(CredentialTags),
    expires_at: Type.Optional(Nullable(DateTime())),
    allowed_hosts: Type.Optional(AllowedHosts),
  },
  { additionalProperties: false },
);

export const UpdateCredentialBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    data: Type.Optional(CredentialDataSchema),
    environment: Type.Optional(Environment),
    description: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    tags: Type.Optional(CredentialTags),
    is_active: Type.Optional(Type.Boolean()),
    expires_at: Type.Optional(Nullable(DateTime())),
    allowed_hosts: Type.Optional(AllowedHosts),
  },
  { additionalProperties: false },
);

export const ListCredentialsQuery = Type.Object({
  credential_type_id: Type.Optional(IntId()),
  environment: Type.Optional(Type.String({ maxLength: 50 })),
  is_active: Type.Optional(Type.Boolean()),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  q: Type.Optional(Type.String({ maxLength: 255 })),
  expired: Type.Optional(Type.Boolean()),
  ...PageQuery,
});

export const TestResultSchema = Type.Object({
  credential_id: Type.Integer(),
  status: TestStatusSchema,
  message: Type.String(),
  duration_ms: Type.Number(),
  tested_at: Timestamp(),
});

const auditFields = {
  id: Type.Integer(),
  credential_id: Type.Integer(),
  action: AuditActionSchema,
  user_id: Nullable(Type.String()),
  ip_address: Nullable(Type.String()),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp(),
  prev_hash: Type.String({ description: 'hash of the record before (empty for the first)' }),
  hash: Type.String({ description: 'HMAC-SHA256 over the canonical record and prev_hash' }),
};

/** One record of a credential's audit trail. */
export const CredentialAuditRecordSchema = Type.Object(auditFields, { $id: 'CredentialAuditRecord' });

export const CredentialAuditPage = Type.Object(
  {
    ...Page(CredentialAuditRecordSchema).properties,
    next_cursor: Nullable(
      Type.Integer({ description: 'pass as `after` for the next (older) page; null when no record is left' }),
    ),
  },
  { $id: 'CredentialAuditRecordPage' },
);

export const ListAuditQuery = Type.Object({
  action: Type.Optional(AuditActionSchema),
  from: Type.Optional(DateTime({ description: 'inclusive' })),
  to: Type.Optional(DateTime({ description: 'exclusive' })),
  after: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'only records older than this id: the previous page’s next_cursor',
    }),
  ),
  ...PageQuery,
});

export const VerifySchema = Type.Object({
  intact: Type.Boolean(),
  records: Type.Integer(),
  first_broken: Nullable(Type.Object({ id: Type.Integer(), reason: Type.String() })),
});

export const ArchivePage = Page(
  Type.Object(
    {
      ...auditFields,
      original_id: Type.Integer(),
      credential_name: Type.String(),
      archived_at: Timestamp(),
    },
    { $id: 'ArchivedAuditRecord' },
  ),
);

export const ArchiveQuery = Type.Object({
  credential_id: Type.Optional(IntId()),
  ...PageQuery,
});

/** GET and PUT answer the whole `credentials` settings namespace, declared beside its table. */
export const SettingsSchema = CredentialSettingsSchema;

export const UpdateSettingsBody = Type.Partial(CredentialSettingsSchema, { additionalProperties: false });

export const EncryptionStatusSchema = Type.Object({
  current_key_id: MasterKeyIdSchema,
  keys: Type.Array(
    Type.Object({
      key_id: MasterKeyIdSchema,
      workspace_keys: Type.Integer(),
      current: Type.Boolean(),
      configured: Type.Boolean(),
    }),
  ),
});
