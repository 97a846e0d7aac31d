import { type Caller, hasRole } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, conflict, type FieldError, invalid, invalidFields, notFound } from '../../errors.ts';
import {
  EnvelopeError,
  openCredential,
  sealCredential,
  type WorkspaceKeys,
} from '../../lib/crypto/envelope.ts';
import {
  type AddressPolicy,
  type PlatformAddressPolicy,
  workspaceAddressPolicy,
} from '../../lib/net/address-guard.ts';
import { normalizeHostEntry } from '../../lib/net/allowed-hosts.ts';
import { mapItems } from '../../lib/page.ts';
import {
  type AuditRecorder,
  type AuditVault,
  changesBetween,
  type RecordedBy,
} from '../audit/audit.service.ts';
import type { SettingsService } from '../settings/settings.service.ts';
import {
  type ConnectionTestRequest,
  type ConnectionTestResult,
  destinationFields,
} from './connection-tester.ts';
import {
  binding,
  createCredentialAccess,
  credentialNotFound,
  encryptionKeyError,
} from './credential-access.ts';
import {
  type CredentialData,
  changedFieldNames,
  checkFieldDefinitions,
  endpointPlaceholders,
  maskCredentialData,
  prepareCredentialData,
  secretFieldNames,
} from './credential-data.ts';
import {
  type AuditFilter,
  type CredentialFilter,
  type CredentialRow,
  type CredentialsRepository,
  type CredentialTypeRow,
  createCredentialsRepository,
  type FieldDefinition,
  isUniqueViolation,
  type TestEndpoint,
} from './credentials.repository.ts';
import { appendAudit, verifyChain } from './vault-audit.ts';
import type { VaultKeys } from './vault-keys.ts';

export type { AccessPurpose, AccessRequest } from './credential-access.ts';

/** A workspace's own credential type, as its admin describes it. */
export interface NewCredentialType {
  name: string;
  display_name: string;
  category: string;
  icon?: string | null;
  logo?: string | null;
  description?: string | null;
  schema_definition: FieldDefinition[];
  test_endpoint?: TestEndpoint | null;
}

export interface CredentialsDependencies {
  db: Db;
  /** The vault's settings live in the settings module, namespace `credentials`. */
  settings: Pick<SettingsService, 'get' | 'update'>;
  keys: VaultKeys;
  testConnection: (request: ConnectionTestRequest) => Promise<ConnectionTestResult>;
  /**
   * The operator's outbound policy (`OUTBOUND_*`), which a workspace's `refuse_private_networks`
   * may only narrow. Absent, the strictest: private networks refused, no exceptions.
   */
  outbound?: PlatformAddressPolicy;
  clock?: () => Date;
  /** The workspace audit trail: `settings.updated` for the vault's settings. */
  audit?: AuditRecorder;
}

/** Without an operator's word, outbound requests reach public addresses only. */
const STRICTEST: PlatformAddressPolicy = { allowPrivateNetworks: false, allowed: [] };

const duplicate = (name: string, environment: string) =>
  conflict(
    'duplicate_credential',
    `an active credential named "${name}" already exists in environment ${environment}`,
  );

/**
 * Rule C3b: the hosts a credential's secrets may be sent to by tools are chosen by admins;
 * a member (who cannot read the secrets) neither sets nor changes them. Returns the
 * canonical entries, or undefined when `hosts` is not being set.
 */
function allowedHostsInput(
  caller: Partial<Pick<Caller, 'role'>>,
  hosts: string[] | null | undefined,
): string[] | null | undefined {
  if (hosts === undefined) return undefined;
  if (caller.role === undefined || !hasRole(caller.role, 'admin')) {
    throw new AppError(
      403,
      'insufficient_role',
      `only admins choose where a credential's secrets may be sent; you are ${caller.role ?? 'no member'}`,
      [{ field: 'body.allowed_hosts', message: 'needs the admin role or higher' }],
    );
  }
  if (hosts === null) return null;
  const errors: FieldError[] = [];
  const entries = hosts.map((host, index) => {
    const entry = normalizeHostEntry(host);
    if (entry === undefined) {
      errors.push({
        field: `body.allowed_hosts.${index}`,
        message: 'must be a host name or IP address, optionally *. before a domain and :port after',
      });
    }
    return entry ?? '';
  });
  if (errors.length > 0) throw invalidFields(errors);
  return [...new Set(entries)];
}

/**
 * Rule C3a: whoever cannot read a credential's secrets must not choose where they are sent.
 * Changing a field that decides the connection test's destination (derived from the type's
 * fields and test endpoint) needs an admin, or the secrets supplied again in the same update,
 * so a member can only send a secret they already know.
 */
function refuseSecretRedirect(
  caller: Pick<Caller, 'role'>,
  type: CredentialTypeRow,
  input: CredentialData,
  previous: CredentialData,
  changed: string[],
): void {
  if (hasRole(caller.role, 'admin')) return;
  const endpoint = type.test_endpoint;
  const destinations = destinationFields(
    endpoint?.kind ?? 'none',
    type.schema_definition.map((f) => f.name),
    endpoint?.url,
  ).filter((name) => changed.includes(name));
  if (destinations.length === 0) return;
  const missing = type.schema_definition
    .filter((f) => f.type === 'password' && previous[f.name] !== undefined && previous[f.name] !== null)
    .map((f) => f.name)
    .filter((name) => input[name] === undefined || input[name] === null);
  if (missing.length === 0) return;
  const changing = destinations.join(', ');
  throw new AppError(
    403,
    'secret_required',
    `changing ${changing} decides where this credential's secrets are sent: supply ${missing.join(', ')} again in the same update, or ask an admin`,
    missing.map((name) => ({
      field: `body.data.${name}`,
      message: `must be supplied again to change ${changing} (only admins may redirect a stored secret)`,
    })),
  );
}

/**
 * The credential vault: typed, encrypted, audited credentials. This file is its CRUD, types
 * and settings; the decrypted access with its group commit is `credential-access.ts`, the
 * audit chain `vault-audit.ts`. Every audit record is written in the transaction of the
 * change it records, under the credential's row lock, chained to the record before it.
 */
export function createCredentialsService(deps: CredentialsDependencies) {
  const { db, keys } = deps;
  const repo = createCredentialsRepository(db);
  const clock = deps.clock ?? (() => new Date());

  /** Runs `work` with the repository bound to one transaction. */
  const transaction = <T>(work: (tx: CredentialsRepository) => Promise<T>) =>
    inTransaction(db, (tx) => work(createCredentialsRepository(tx)));

  async function keysOf(workspaceId: string): Promise<WorkspaceKeys> {
    try {
      return await keys.keysFor(workspaceId);
    } catch (error) {
      if (error instanceof EnvelopeError) throw encryptionKeyError();
      throw error;
    }
  }

  /** The type of an existing credential; pass the transaction's repository inside one. */
  async function typeOf(
    workspaceId: string,
    typeId: number,
    from: CredentialsRepository = repo,
  ): Promise<CredentialTypeRow> {
    const type = await from.findType(workspaceId, typeId);
    if (!type) throw new Error(`credential type ${typeId} of an existing credential is missing`);
    return type;
  }

  /**
   * One base URL per key: an `openai_credentials` key that a model provider of the workspace
   * uses (its `credential_id`) is tested against that provider's `base_url` (the first such
   * `openai_compatible` provider in the settings' order), where the key is actually sent, not
   * against the credential's own optional `base_url`, which then plays no part. A key no
   * provider uses is tested against its own `base_url` (default: OpenAI's API). docs/providers.md.
   */
  async function withProviderBaseUrl(
    workspaceId: string,
    credentialId: number,
    typeName: string,
    data: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    if (typeName !== 'openai_credentials') return data;
    const { providers } = await deps.settings.get(workspaceId, 'providers');
    const provider = providers.find(
      (candidate) => candidate.kind === 'openai_compatible' && candidate.credential_id === credentialId,
    );
    return provider ? { ...data, base_url: provider.base_url.replace(/\/+$/, '') } : data;
  }

  /** The vault's switches for a workspace (namespace `credentials` of the settings module). */
  const settingsOf = (workspaceId: string) => deps.settings.get(workspaceId, 'credentials');
  const outbound = deps.outbound ?? STRICTEST;

  /**
   * The settings as they take effect: `refuse_private_networks` answers true wherever the
   * platform refuses private networks, even if the workspace stored `false` before the platform
   * policy existed, so nobody reads an opt-out that does nothing.
   */
  const effective = <S extends { refuse_private_networks: boolean }>(settings: S): S => ({
    ...settings,
    refuse_private_networks: settings.refuse_private_networks || !outbound.allowPrivateNetworks,
  });

  /** Where a workspace's outbound requests may go: the platform's policy, narrowed by the workspace. */
  const addressPolicy = async (workspaceId: string): Promise<AddressPolicy> =>
    workspaceAddressPolicy(outbound, (await settingsOf(workspaceId)).refuse_private_networks);

  function present(
    row: Omit<CredentialRow, 'encrypted_data'> & { encrypted_data?: string },
    typeName: string,
  ) {
    const { encrypted_data: _never, ...visible } = row;
    return {
      ...visible,
      credential_type: typeName,
      is_expired: row.expires_at !== null && row.expires_at < clock(),
    };
  }

  const { access } = createCredentialAccess({
    db,
    clock,
    keysOf,
    environmentLookup: async (workspaceId) => (await settingsOf(workspaceId)).environment_lookup,
  });

  return {
    access,

    // Types.

    listTypes: (
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>,
      filter: { category?: string; is_active?: boolean },
    ) => repo.listTypes(caller.workspaceId, filter),

    async getType(caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>, id: number) {
      const type = await repo.findType(caller.workspaceId, id);
      if (!type) throw notFound('credential type', id);
      return type;
    },

    async createType(caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>, input: NewCredentialType) {
      const errors = checkFieldDefinitions(input.schema_definition);
      const names = new Set(input.schema_definition.map((f) => f.name));
      const endpoint = input.test_endpoint;
      if (endpoint?.kind === 'http' && !endpoint.url) {
        errors.push({ field: 'body.test_endpoint.url', message: 'is required for an http test' });
      }
      for (const name of endpointPlaceholders(endpoint).filter((p) => !names.has(p))) {
        errors.push({
          field: 'body.test_endpoint',
          message: `uses {{${name}}}, which is not a field of this type`,
        });
      }
      if (errors.length > 0) throw invalidFields(errors);
      if (await repo.typeNameTaken(caller.workspaceId, input.name)) {
        throw conflict('duplicate_credential_type', `a credential type named ${input.name} already exists`);
      }
      try {
        return await repo.insertType({
          ...input,
          workspace_id: caller.workspaceId,
          is_system: false,
          is_active: true,
        });
      } catch (error) {
        if (isUniqueViolation(error))
          throw conflict('duplicate_credential_type', `a credential type named ${input.name} already exists`);
        throw error;
      }
    },

    // Credentials.

    /** Rule C1. */
    async create(
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'> & Partial<Pick<Caller, 'role'>>,
      input: {
        name: string;
        credential_type_id: number;
        data: CredentialData;
        environment?: string;
        description?: string | null;
        tags?: string[];
        expires_at?: string | null;
        /** Where tools may send the secrets; admins only; absent or null: the test endpoint's host. */
        allowed_hosts?: string[] | null;
      },
    ) {
      const allowedHosts = allowedHostsInput(caller, input.allowed_hosts);
      const type = await repo.findType(caller.workspaceId, input.credential_type_id);
      if (!type?.is_active) {
        throw invalidFields([
          { field: 'body.credential_type_id', message: 'does not name an active credential type' },
        ]);
      }
      const prepared = prepareCredentialData(type.name, type.schema_definition, input.data);
      if (prepared.errors.length > 0) throw invalidFields(prepared.errors);
      const environment = input.environment ?? 'production';
      const workspaceKeys = await keysOf(caller.workspaceId);
      try {
        const row = await transaction(async (tx) => {
          const id = await tx.nextCredentialId();
          const bound = { workspace_id: caller.workspaceId, id, credential_type_id: type.id };
          const created = await tx.insertCredential({
            id,
            name: input.name,
            workspace_id: caller.workspaceId,
            credential_type_id: type.id,
            encrypted_data: sealCredential(workspaceKeys.credentialKey, prepared.data, binding(bound)),
            environment,
            description: input.description ?? null,
            tags: input.tags ?? [],
            allowed_hosts: allowedHosts ?? null,
            expires_at: input.expires_at ? new Date(input.expires_at) : null,
            created_by: caller.userId,
          });
          await appendAudit(tx, workspaceKeys.auditKey, clock(), {
            credentialId: id,
            workspaceId: caller.workspaceId,
            action: 'created',
            userId: caller.userId,
            ipAddress: caller.ipAddress,
            metadata: {
              credential_type: type.name,
              environment,
              ...(allowedHosts ? { allowed_hosts: allowedHosts } : {}),
            },
          });
          return created;
        });
        return {
          ...present(row, type.name),
          data: maskCredentialData(type.schema_definition, prepared.data),
        };
      } catch (error) {
        if (isUniqueViolation(error)) throw duplicate(input.name, environment);
        throw error;
      }
    },

    async list(
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>,
      filter: Omit<CredentialFilter, 'now'>,
    ) {
      const page = await repo.listCredentials(caller.workspaceId, { ...filter, now: clock() });
      return mapItems(page, (item) => present(item.credential, item.type_name));
    },

    /** Details: non-secret fields shown, password and hidden fields masked; not an audited access. */
    async get(caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>, id: number) {
      const row = await repo.findCredential(caller.workspaceId, id);
      if (!row) throw credentialNotFound(id);
      const type = await typeOf(caller.workspaceId, row.credential_type_id);
      let data: CredentialData | null = null;
      try {
        const workspaceKeys = await keys.keysFor(caller.workspaceId);
        data = maskCredentialData(
          type.schema_definition,
          openCredential(workspaceKeys.credentialKey, row.encrypted_data, binding(row)),
        );
      } catch (error) {
        if (!(error instanceof EnvelopeError)) throw error;
      }
      return { ...present(row, type.name), data };
    },

    /** Rule C3: partial; `data` merges over the stored data (omitted fields kept, null clears). */
    async update(
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress' | 'role'>,
      id: number,
      input: {
        name?: string;
        data?: CredentialData;
        environment?: string;
        description?: string | null;
        tags?: string[];
        is_active?: boolean;
        expires_at?: string | null;
        /** Admins only (rule C3b); null returns to the test endpoint's host. */
        allowed_hosts?: string[] | null;
      },
    ) {
      const allowedHosts = allowedHostsInput(caller, input.allowed_hosts);
      const workspaceKeys = await keysOf(caller.workspaceId);
      // The name and environment the credential would end with, for the duplicate message.
      let target = { name: input.name ?? '', environment: input.environment ?? '' };
      try {
        return await transaction(async (tx) => {
          const row = await tx.findCredential(caller.workspaceId, id, true);
          if (!row) throw credentialNotFound(id);
          target = { name: input.name ?? row.name, environment: input.environment ?? row.environment };
          const type = await typeOf(caller.workspaceId, row.credential_type_id, tx);
          const changes: Partial<CredentialRow> = {};
          const audited: Record<string, { old: unknown; new: unknown }> = {};
          const track = <
            K extends
              | 'name'
              | 'description'
              | 'tags'
              | 'is_active'
              | 'expires_at'
              | 'environment'
              | 'allowed_hosts',
          >(
            key: K,
            value: CredentialRow[K] | undefined,
          ) => {
            if (value === undefined) return;
            const old = row[key];
            // Dates by instant: JSON.stringify turns an invalid Date into null, which once made
            // an unparseable expires_at look unchanged and silently dropped it.
            const same =
              old instanceof Date && value instanceof Date
                ? old.getTime() === value.getTime()
                : JSON.stringify(old) === JSON.stringify(value);
            if (same) return;
            changes[key] = value;
            audited[key] = { old, new: value };
          };
          track('name', input.name);
          track('description', input.description);
          track('tags', input.tags);
          track('is_active', input.is_active);
          track('environment', input.environment);
          track('allowed_hosts', allowedHosts);
          track(
            'expires_at',
            input.expires_at === undefined
              ? undefined
              : input.expires_at === null
                ? null
                : new Date(input.expires_at),
          );
          let dataFields: string[] = [];
          if (input.data) {
            let previous: CredentialData;
            try {
              previous = openCredential(workspaceKeys.credentialKey, row.encrypted_data, binding(row));
            } catch (error) {
              if (error instanceof EnvelopeError) throw encryptionKeyError();
              throw error;
            }
            const prepared = prepareCredentialData(type.name, type.schema_definition, input.data, previous);
            if (prepared.errors.length > 0) throw invalidFields(prepared.errors);
            dataFields = changedFieldNames(previous, prepared.data);
            refuseSecretRedirect(caller, type, input.data, previous, dataFields);
            if (dataFields.length > 0) {
              changes.encrypted_data = sealCredential(
                workspaceKeys.credentialKey,
                prepared.data,
                binding(row),
              );
            }
          }
          const updated = (await tx.updateCredential(caller.workspaceId, id, changes)) ?? row;
          await appendAudit(tx, workspaceKeys.auditKey, clock(), {
            credentialId: id,
            workspaceId: caller.workspaceId,
            action: 'updated',
            userId: caller.userId,
            ipAddress: caller.ipAddress,
            metadata: {
              changes: audited,
              ...(dataFields.length > 0 ? { data_fields_changed: dataFields } : {}),
            },
          });
          return present(updated, type.name);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw duplicate(target.name, target.environment);
        throw error;
      }
    },

    /** Rule D, in one transaction. */
    async remove(caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>, id: number) {
      const workspaceKeys = await keysOf(caller.workspaceId);
      const settings = await settingsOf(caller.workspaceId);
      await transaction(async (tx) => {
        const row = await tx.findCredential(caller.workspaceId, id, true);
        if (!row) throw credentialNotFound(id);
        await appendAudit(tx, workspaceKeys.auditKey, clock(), {
          credentialId: id,
          workspaceId: caller.workspaceId,
          action: 'deleted',
          userId: caller.userId,
          ipAddress: caller.ipAddress,
          metadata: { credential_name: row.name },
        });
        if (settings.archive_audit_on_delete) await tx.archiveAudit(caller.workspaceId, id, row.name);
        const marker = sealCredential(
          workspaceKeys.credentialKey,
          { deleted: true, deleted_at: clock().toISOString() },
          binding(row),
        );
        await tx.updateCredential(caller.workspaceId, id, { encrypted_data: marker });
        await tx.deleteCredential(caller.workspaceId, id);
      });
    },

    /** Rule T: decrypted access (audited), then the type's connection test; result stored and audited. */
    async test(caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>, id: number) {
      const row = await repo.findCredential(caller.workspaceId, id);
      if (!row) throw credentialNotFound(id);
      const type = await typeOf(caller.workspaceId, row.credential_type_id);
      const data = await access({
        workspaceId: caller.workspaceId,
        id,
        serviceName: 'connection-test',
        userId: caller.userId,
        ipAddress: caller.ipAddress,
      });
      const endpoint = type.test_endpoint;
      const result = await deps.testConnection({
        kind: endpoint?.kind ?? 'none',
        data: await withProviderBaseUrl(caller.workspaceId, id, type.name, data),
        secretFields: secretFieldNames(type.schema_definition),
        endpoint:
          endpoint?.kind === 'http' && endpoint.url
            ? { url: endpoint.url, headers: endpoint.headers, expected_status: endpoint.expected_status }
            : undefined,
        policy: await addressPolicy(caller.workspaceId),
      });
      const status = result.passed ? ('passed' as const) : ('failed' as const);
      const workspaceKeys = await keysOf(caller.workspaceId);
      const testedAt = clock();
      await transaction(async (tx) => {
        if (!(await tx.findCredential(caller.workspaceId, id, true))) throw credentialNotFound(id);
        await tx.updateCredential(caller.workspaceId, id, {
          last_tested: testedAt,
          test_status: status,
          test_message: result.message,
        });
        await appendAudit(tx, workspaceKeys.auditKey, clock(), {
          credentialId: id,
          workspaceId: caller.workspaceId,
          action: 'tested',
          userId: caller.userId,
          ipAddress: caller.ipAddress,
          metadata: { status, message: result.message, duration_ms: result.duration_ms },
        });
      });
      return {
        credential_id: id,
        status,
        message: result.message,
        duration_ms: result.duration_ms,
        tested_at: testedAt,
      };
    },

    // Audit.

    async auditLogs(
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>,
      id: number,
      filter: AuditFilter,
    ) {
      if (!(await repo.findCredential(caller.workspaceId, id))) throw credentialNotFound(id);
      return repo.listAudit(caller.workspaceId, id, filter);
    },

    /** Recomputes the chain: intact, or the first record whose link or content does not match. */
    async verifyAudit(caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>, id: number) {
      if (!(await repo.findCredential(caller.workspaceId, id))) throw credentialNotFound(id);
      const { auditKey } = await keysOf(caller.workspaceId);
      return verifyChain(auditKey, await repo.chain(caller.workspaceId, id));
    },

    archive: (
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>,
      filter: { credential_id?: number; limit: number; offset: number },
    ) => repo.listArchive(caller.workspaceId, filter),

    // Settings.

    /** The vault's settings as they take effect (see `effective`). */
    getSettings: async (caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'>) =>
      effective(await settingsOf(caller.workspaceId)),

    addressPolicy,

    /**
     * Stores the vault's settings and records the change in the workspace audit trail, in one
     * transaction. `refuse_private_networks: false` is refused while the platform refuses
     * private networks: a workspace may narrow the operator's policy, never widen it, and a
     * setting that would be silently ignored must not look accepted.
     */
    updateSettings: async (
      caller: Pick<Caller, 'userId' | 'workspaceId' | 'ipAddress'> & RecordedBy,
      changes: Partial<Awaited<ReturnType<typeof settingsOf>>>,
    ) => {
      if (changes.refuse_private_networks === false && !outbound.allowPrivateNetworks) {
        throw invalid(
          'body.refuse_private_networks',
          'cannot be false: this platform refuses private networks (its operator decides, with OUTBOUND_ALLOW_PRIVATE_NETWORKS)',
        );
      }
      return inTransaction(db, async (tx) => {
        const before = await deps.settings.get(caller.workspaceId, 'credentials', tx);
        const saved = await deps.settings.update(caller.workspaceId, 'credentials', changes, tx);
        await deps.audit?.record(tx, caller.workspaceId, caller, {
          action: 'settings.updated',
          targetType: 'settings',
          targetId: 'credentials',
          changes: changesBetween(before, saved),
        });
        return effective(saved);
      });
    },

    /**
     * The workspace's credential audit records in a time range, oldest first, after the last
     * one read: the vault's part of the workspace audit export (docs/audit.md).
     */
    auditRange: ((workspaceId, query) =>
      repo.auditRange(workspaceId, query)) satisfies AuditVault['auditRange'],

    /** Operators: workspace keys per master key. */
    encryptionStatus: () => keys.status(),
  };
}

export type CredentialsService = ReturnType<typeof createCredentialsService>;
