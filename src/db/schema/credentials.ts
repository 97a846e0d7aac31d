import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  serial,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { type Static, Type } from 'typebox';
import { StringEnum } from '../../lib/typebox.ts';
import { createdAt, updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/** Kinds of value a credential type's field holds; password and hidden are secret. */
export const FIELD_TYPES = ['string', 'password', 'number', 'boolean', 'options', 'hidden'] as const;

/** A field of a credential type's secret data (an entry of `schema_definition`). */
export const FieldDefinitionSchema = Type.Object(
  {
    name: Type.String({
      pattern: '^[a-z][a-z0-9_]{0,63}$',
      description: 'snake_case key of the data object',
    }),
    label: Type.String({ minLength: 1, maxLength: 255 }),
    type: StringEnum(FIELD_TYPES),
    required: Type.Optional(Type.Boolean()),
    default: Type.Optional(Type.Unknown()),
    options: Type.Optional(
      Type.Array(
        Type.Object(
          {
            value: Type.String({ minLength: 1, maxLength: 255 }),
            label: Type.Optional(Type.String({ maxLength: 255 })),
          },
          { additionalProperties: false },
        ),
        { maxItems: 100 },
      ),
    ),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    placeholder: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type FieldDefinition = Static<typeof FieldDefinitionSchema>;

/** How a credential type is tested (`test_endpoint`). */
export const TestEndpointSchema = Type.Object(
  {
    kind: StringEnum(['postgres', 'redis', 'http', 'oauth2', 'none'] as const),
    url: Type.Optional(
      Type.String({ maxLength: 2000, description: 'for http: the URL to GET, with {{field}} placeholders' }),
    ),
    headers: Type.Optional(
      Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 2000 }), {
        description: 'for http: request headers, values with {{field}} placeholders',
      }),
    ),
    expected_status: Type.Optional(
      Type.Array(Type.Integer({ minimum: 100, maximum: 599 }), {
        maxItems: 20,
        description: 'for http: statuses that mean success (default 200)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type TestEndpoint = Static<typeof TestEndpointSchema>;

export const CredentialCategorySchema = StringEnum(['database', 'ai', 'api', 'infrastructure'] as const);

/** Audit actions of spec section 6. */
export const AuditActionSchema = StringEnum([
  'created',
  'updated',
  'deleted',
  'accessed',
  'access_denied',
  'access_failed',
  'tested',
] as const);
export type AuditAction = Static<typeof AuditActionSchema>;

export const TestStatusSchema = StringEnum(['passed', 'failed'] as const);
export type TestStatus = Static<typeof TestStatusSchema>;

/** A master key's public id: 16 hex characters derived from the key (lib/crypto/envelope.ts). */
export const MasterKeyIdSchema = Type.String({ pattern: '^[0-9a-f]{16}$' });

/** Each workspace's data key, wrapped by a master key (see lib/crypto/envelope.ts). */
export const workspaceKeys = pgTable(
  'workspace_keys',
  {
    workspace_id: uuid('workspace_id')
      .primaryKey()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    wrapped_key: text('wrapped_key').notNull(),
    master_key_id: varchar('master_key_id', { length: 32 }).notNull(),
    created_at: createdAt(),
    rotated_at: timestamp('rotated_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [index('workspace_keys_master_key_id_idx').on(t.master_key_id)],
);

/** System types (workspace_id null) and types a workspace made for itself. */
export const credentialTypes = pgTable(
  'credential_types',
  {
    id: serial('id').primaryKey(),
    workspace_id: uuid('workspace_id').references(() => workspaces.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 255 }).notNull(),
    display_name: varchar('display_name', { length: 255 }).notNull(),
    category: varchar('category', { length: 100 }).notNull(),
    icon: varchar('icon', { length: 50 }),
    logo: varchar('logo', { length: 255 }),
    description: text('description'),
    schema_definition: jsonb('schema_definition').$type<FieldDefinition[]>().notNull(),
    test_endpoint: jsonb('test_endpoint').$type<TestEndpoint>(),
    is_system: boolean('is_system').notNull().default(false),
    is_active: boolean('is_active').notNull().default(true),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    uniqueIndex('credential_types_system_name_key').on(t.name).where(sql`${t.workspace_id} is null`),
    uniqueIndex('credential_types_workspace_name_key')
      .on(t.workspace_id, t.name)
      .where(sql`${t.workspace_id} is not null`),
  ],
);

export const credentials = pgTable(
  'credentials',
  {
    id: serial('id').primaryKey(),
    name: varchar('name', { length: 255 }).notNull(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    credential_type_id: integer('credential_type_id')
      .notNull()
      .references(() => credentialTypes.id, { onDelete: 'cascade' }),
    encrypted_data: text('encrypted_data').notNull(),
    environment: varchar('environment', { length: 50 }).notNull().default('production'),
    description: text('description'),
    tags: jsonb('tags').$type<string[]>().notNull().default([]),
    /**
     * Where tools may send the secrets (`host[:port]`, `*.domain`), set by admins only; null
     * means the host of the type's test endpoint (docs/vault.md, rule C3b).
     */
    allowed_hosts: jsonb('allowed_hosts').$type<string[]>(),
    is_active: boolean('is_active').notNull().default(true),
    expires_at: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    last_tested: timestamp('last_tested', { withTimezone: true, mode: 'date' }),
    test_status: varchar('test_status', { length: 50 }).$type<TestStatus>(),
    test_message: text('test_message'),
    created_by: varchar('created_by', { length: 255 }),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    index('credentials_workspace_created_idx').on(
      t.workspace_id,
      t.created_at.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    index('credentials_type_idx').on(t.credential_type_id),
    uniqueIndex('credentials_active_name_key')
      .on(t.workspace_id, t.name, t.environment)
      .where(sql`${t.is_active}`),
  ],
);

const auditColumns = {
  credential_id: integer('credential_id').notNull(),
  workspace_id: uuid('workspace_id').notNull(),
  action: varchar('action', { length: 50 }).$type<AuditAction>().notNull(),
  user_id: varchar('user_id', { length: 255 }),
  ip_address: varchar('ip_address', { length: 64 }),
  metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
  created_at: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  prev_hash: varchar('prev_hash', { length: 64 }).notNull(),
  hash: varchar('hash', { length: 64 }).notNull(),
};

/** The audit trail of a credential; each record chains to the one before it. */
export const credentialAuditLogs = pgTable(
  'credential_audit_logs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    ...auditColumns,
    credential_id: integer('credential_id')
      .notNull()
      .references(() => credentials.id, { onDelete: 'cascade' }),
  },
  (t) => [index('credential_audit_logs_credential_idx').on(t.credential_id, t.id)],
);

/** Audit records copied out before their credential is deleted, so the trail outlives it. */
export const credentialAuditArchive = pgTable(
  'credential_audit_archive',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    original_id: bigint('original_id', { mode: 'number' }).notNull(),
    ...auditColumns,
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    credential_name: varchar('credential_name', { length: 255 }).notNull(),
    archived_at: timestamp('archived_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('credential_audit_archive_workspace_idx').on(t.workspace_id, t.credential_id, t.original_id)],
);
