import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { forbidden } from '../../errors.ts';
import { Json, NoContent } from '../../http/schemas.ts';
import {
  ArchivePage,
  ArchiveQuery,
  CreateCredentialBody,
  CreateCredentialTypeBody,
  CredentialAuditPage,
  CredentialDetailsSchema,
  CredentialIdParams,
  CredentialPage,
  CredentialSchema,
  CredentialTypeSchema,
  EncryptionStatusSchema,
  ListAuditQuery,
  ListCredentialsQuery,
  ListTypesQuery,
  SettingsSchema,
  TestResultSchema,
  UpdateCredentialBody,
  UpdateSettingsBody,
  VerifySchema,
} from './credentials.schemas.ts';
import type { CredentialsService } from './credentials.service.ts';

const tags = ['Credentials'];

/** The credential vault (spec sections 2.1 to 2.3, 3.1, 4.10). */
export const credentialsRoutes: FastifyPluginAsyncTypebox<{
  credentials: CredentialsService;
  /** Users who may see platform-wide key status (operators). */
  platformAdmins: ReadonlySet<string>;
}> = async (app, { credentials, platformAdmins }) => {
  app.get(
    '/credentials/types',
    {
      schema: {
        operationId: 'listCredentialTypes',
        tags,
        summary: 'List credential types',
        description: 'System types and the workspace’s own, system first. Filters: category, is_active.',
        querystring: ListTypesQuery,
        response: {
          200: Json('The credential types', Type.Object({ items: Type.Array(CredentialTypeSchema) })),
        },
      },
    },
    async (request) => ({ items: await credentials.listTypes(request.caller, request.query) }),
  );

  app.get(
    '/credentials/types/:id',
    {
      schema: {
        operationId: 'getCredentialType',
        tags,
        summary: 'Get a credential type',
        description: 'One type with its field definitions and test configuration.',
        params: CredentialIdParams,
        response: { 200: Json('The credential type', CredentialTypeSchema) },
      },
    },
    async (request) => credentials.getType(request.caller, request.params.id),
  );

  app.post(
    '/credentials/types',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'createCredentialType',
        tags,
        summary: 'Create a credential type',
        description:
          'A workspace’s own type (is_system false): unique snake_case field names, allowed field types, options for options fields, and test placeholders that name fields. Admins only.',
        body: CreateCredentialTypeBody,
        response: { 201: Json('The created credential type', CredentialTypeSchema) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await credentials.createType(request.caller, request.body)),
  );

  app.get(
    '/credentials/settings',
    {
      schema: {
        operationId: 'getVaultSettings',
        tags,
        summary: 'Vault settings',
        description:
          'The workspace’s credential settings: environment lookup, audit archive on delete, private-network refusal.',
        response: { 200: Json('The vault settings', SettingsSchema) },
      },
    },
    async (request) => credentials.getSettings(request.caller),
  );

  app.put(
    '/credentials/settings',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'updateVaultSettings',
        tags,
        summary: 'Change vault settings',
        description: 'Partial update of the workspace’s credential settings. Admins only.',
        body: UpdateSettingsBody,
        response: { 200: Json('The updated vault settings', SettingsSchema) },
      },
    },
    async (request) => credentials.updateSettings(request.caller, request.body),
  );

  app.get(
    '/credentials/audit-archive',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'listArchivedAuditTrails',
        tags,
        summary: 'Archived audit trails',
        description:
          'Audit records of deleted credentials, copied before deletion, newest first. Admins only.',
        querystring: ArchiveQuery,
        response: { 200: Json('A page of archived audit trails', ArchivePage) },
      },
    },
    async (request) => credentials.archive(request.caller, request.query),
  );

  app.get(
    '/credentials/encryption-keys',
    {
      schema: {
        operationId: 'getEncryptionKeyStatus',
        tags,
        summary: 'Master key status (operators)',
        description:
          'How many workspace keys each master key id wraps, which is current and which are configured: a retired key may be dropped once it wraps none. Only users listed in PLATFORM_ADMIN_USERS.',
        response: { 200: Json('The master key status', EncryptionStatusSchema) },
      },
    },
    async (request) => {
      if (!platformAdmins.has(request.caller.userId)) {
        throw forbidden(
          'platform_admin_required',
          'only platform operators (PLATFORM_ADMIN_USERS) may see key status',
        );
      }
      return credentials.encryptionStatus();
    },
  );

  app.get(
    '/credentials',
    {
      schema: {
        operationId: 'listCredentials',
        tags,
        summary: 'List credentials',
        description:
          'Newest first, never with secrets. Filters: credential_type_id, environment, is_active, tag, q (name or description), expired.',
        querystring: ListCredentialsQuery,
        response: { 200: Json('A page of credentials (never their secrets)', CredentialPage) },
      },
    },
    async (request) => credentials.list(request.caller, request.query),
  );

  app.get(
    '/credentials/:id',
    {
      schema: {
        operationId: 'getCredential',
        tags,
        summary: 'Get a credential',
        description:
          'Details with the data’s non-secret fields; password and hidden fields are masked. Not an audited access.',
        params: CredentialIdParams,
        response: { 200: Json('The credential', CredentialDetailsSchema) },
      },
    },
    async (request) => credentials.get(request.caller, request.params.id),
  );

  app.post(
    '/credentials',
    {
      schema: {
        operationId: 'createCredential',
        tags,
        summary: 'Create a credential',
        description:
          'Rule C1: the type must exist and be active, required fields present, values of the right type; unknown fields are refused and hidden fields filled in. The data is encrypted; audit action created. 409 duplicate_credential for an active credential of the same name and environment.',
        body: CreateCredentialBody,
        response: { 201: Json('The created credential', CredentialDetailsSchema) },
      },
    },
    async (request, reply) => reply.status(201).send(await credentials.create(request.caller, request.body)),
  );

  app.put(
    '/credentials/:id',
    {
      schema: {
        operationId: 'updateCredential',
        tags,
        summary: 'Update a credential',
        description:
          'Rule C3, partial. `data` merges over the stored data: omitted fields keep their values, null clears an optional one; it is re-validated and re-encrypted. Audit action updated records old and new name, description, tags, is_active, expires_at and environment, and only the names of changed data fields.',
        params: CredentialIdParams,
        body: UpdateCredentialBody,
        response: { 200: Json('The updated credential', CredentialSchema) },
      },
    },
    async (request) => credentials.update(request.caller, request.params.id, request.body),
  );

  app.delete(
    '/credentials/:id',
    {
      schema: {
        operationId: 'deleteCredential',
        tags,
        summary: 'Delete a credential',
        description:
          'Rule D, in one transaction: audit deleted, archive the trail (unless the setting is off), overwrite the data with an encrypted marker, delete the row; its audit records go with it.',
        params: CredentialIdParams,
        response: { 204: NoContent('The credential is deleted') },
      },
    },
    async (request, reply) => {
      await credentials.remove(request.caller, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/credentials/:id/test',
    {
      schema: {
        operationId: 'testCredential',
        tags,
        summary: 'Test a credential',
        description:
          'Rule T: an audited decrypted access (inactive or expired credentials are refused), then the type’s test: PostgreSQL SELECT 1 (5 s), Redis PING (5 s), HTTP GET (10 s, redirects not followed), OAuth 2.0 access_token present. Stores last_tested, test_status and test_message; audit action tested.',
        params: CredentialIdParams,
        response: { 200: Json('The outcome of the connection test', TestResultSchema) },
      },
    },
    async (request) => credentials.test(request.caller, request.params.id),
  );

  app.get(
    '/credentials/:id/audit-logs',
    {
      schema: {
        operationId: 'listCredentialAuditLogs',
        tags,
        summary: 'Audit trail',
        description:
          'The credential’s audit records, newest first. Filters: action, from (inclusive), to (exclusive). Page by `after` (the previous page’s `next_cursor`: records older than that id), which stays stable while records are added; `limit`/`offset` keep working.',
        params: CredentialIdParams,
        querystring: ListAuditQuery,
        response: { 200: Json('A page of the credential’s audit records', CredentialAuditPage) },
      },
    },
    async (request) => {
      const { from, to, ...rest } = request.query;
      const filter = { ...rest, from: from ? new Date(from) : undefined, to: to ? new Date(to) : undefined };
      return credentials.auditLogs(request.caller, request.params.id, filter);
    },
  );

  app.get(
    '/credentials/:id/audit-logs/verify',
    {
      schema: {
        operationId: 'verifyCredentialAuditChain',
        tags,
        summary: 'Verify the audit chain',
        description:
          'Recomputes the HMAC chain of the credential’s audit records: intact, or the first broken record.',
        params: CredentialIdParams,
        response: { 200: Json('The outcome of the hash-chain check', VerifySchema) },
      },
    },
    async (request) => credentials.verifyAudit(request.caller, request.params.id),
  );
};
