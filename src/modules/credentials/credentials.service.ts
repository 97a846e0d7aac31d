import { AppError, conflict, type FieldError, forbidden, notFound } from '../../errors.ts';
import type { AuditAction, FieldDefinition, TestEndpoint } from '../../lib/credential-fields.ts';
import {
  chainHash,
  EnvelopeError,
  openCredential,
  sealCredential,
  type WorkspaceKeys,
} from '../../lib/crypto/envelope.ts';
import type { ConnectionTestRequest, ConnectionTestResult } from './connection-tester.ts';
import {
  type CredentialData,
  changedFieldNames,
  checkFieldDefinitions,
  maskCredentialData,
  prepareCredentialData,
  secretFieldNames,
} from './credential-data.ts';
import type {
  AuditFilter,
  AuditRow,
  CredentialFilter,
  CredentialRow,
  CredentialsRepository,
  CredentialTypeRow,
} from './credentials.repository.ts';
import { isUniqueViolation } from './credentials.repository.ts';
import type { VaultKeys } from './vault-keys.ts';

/** Who acts, from where. */
export interface VaultActor {
  userId: string;
  workspaceId: string;
  ipAddress?: string;
}

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

/** A decrypted-access request from anywhere in the platform (rule C2). */
export interface AccessRequest {
  workspaceId: string;
  /** The credential, by id or by name (rule E decides whether the environment counts). */
  id?: number;
  name?: string;
  environment?: string;
  /** Fields to return; all of them when omitted. */
  fields?: string[];
  /** Who needs it: recorded in the audit trail. */
  serviceName: string;
  userId?: string;
  ipAddress?: string;
}

export interface CredentialSettings {
  environment_lookup: boolean;
  archive_audit_on_delete: boolean;
  refuse_private_networks: boolean;
}

const SETTING_DEFAULTS: CredentialSettings = {
  environment_lookup: false,
  archive_audit_on_delete: true,
  refuse_private_networks: false,
};
const SETTING_PREFIX = 'credentials.';

/** Decrypted accesses written per transaction, and transactions under way at once. */
const MAX_BATCH_SIZE = 64;
const MAX_BATCHES_IN_FLIGHT = 2;

export interface CredentialsDependencies {
  repo: CredentialsRepository;
  keys: VaultKeys;
  testConnection: (request: ConnectionTestRequest) => Promise<ConnectionTestResult>;
  clock?: () => Date;
}

const credentialNotFound = (id: number | string) =>
  new AppError(404, 'credential_not_found', `credential ${id} not found`);
const encryptionKeyError = () =>
  new AppError(500, 'encryption_key_error', 'the stored credential data cannot be decrypted');
const validationFailed = (errors: FieldError[]) =>
  new AppError(400, 'validation_failed', errors.map((e) => `${e.field} ${e.message}`).join('; '), errors);
const duplicate = (name: string, environment: string) =>
  conflict(
    'duplicate_credential',
    `an active credential named "${name}" already exists in environment ${environment}`,
  );

/** Fields of an audit record that the hash chain covers. */
function chainedRecord(
  row: Pick<
    AuditRow,
    'credential_id' | 'workspace_id' | 'action' | 'user_id' | 'ip_address' | 'metadata' | 'created_at'
  >,
) {
  return {
    credential_id: row.credential_id,
    workspace_id: row.workspace_id,
    action: row.action,
    user_id: row.user_id ?? null,
    ip_address: row.ip_address ?? null,
    metadata: row.metadata,
    created_at: row.created_at,
  };
}

/**
 * The credential vault: typed, encrypted, audited credentials. Every audit record is
 * written in the transaction of the change it records, under the credential's row lock,
 * chained to the record before it.
 */
export function createCredentialsService(deps: CredentialsDependencies) {
  const { repo, keys } = deps;
  const clock = deps.clock ?? (() => new Date());

  /** Appends a chained audit record; call it inside the transaction holding the credential's row lock. */
  async function appendAudit(
    tx: CredentialsRepository,
    auditKey: Buffer,
    entry: {
      credentialId: number;
      workspaceId: string;
      action: AuditAction;
      userId?: string;
      ipAddress?: string;
      metadata: Record<string, unknown>;
    },
  ) {
    const record = chainedRecord({
      credential_id: entry.credentialId,
      workspace_id: entry.workspaceId,
      action: entry.action,
      user_id: entry.userId ?? null,
      ip_address: entry.ipAddress ?? null,
      metadata: entry.metadata,
      created_at: clock(),
    });
    const prevHash = await tx.lastAuditHash(entry.credentialId);
    await tx.insertAudit({ ...record, prev_hash: prevHash, hash: chainHash(auditKey, prevHash, record) });
  }

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

  async function settingsOf(workspaceId: string): Promise<CredentialSettings> {
    const stored = await repo.getSettings(workspaceId, SETTING_PREFIX);
    const settings = { ...SETTING_DEFAULTS };
    for (const key of Object.keys(SETTING_DEFAULTS) as (keyof CredentialSettings)[]) {
      const value = stored[`${SETTING_PREFIX}${key}`];
      if (typeof value === 'boolean') settings[key] = value;
    }
    return settings;
  }

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

  const binding = (row: { workspace_id: string; id: number; credential_type_id: number }) => ({
    workspaceId: row.workspace_id,
    credentialId: row.id,
    typeId: row.credential_type_id,
  });

  /** A decrypted access waiting for its batch, with what it resolves to. */
  interface PendingAccess {
    request: AccessRequest;
    id: number;
    keys: WorkspaceKeys;
    resolve(data: CredentialData): void;
    reject(error: unknown): void;
  }
  const queue: PendingAccess[] = [];
  let batchesInFlight = 0;

  /**
   * Group commit: accesses that arrive while a batch is being written share the next
   * transaction (one lock query, one multi-row audit insert, one durable commit) instead
   * of paying a commit each. Every access still gets its own chained record, written
   * before its plaintext is released; if the transaction fails, every access in it fails.
   */
  function schedule(): void {
    while (batchesInFlight < MAX_BATCHES_IN_FLIGHT && queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH_SIZE);
      batchesInFlight += 1;
      void runBatch(batch).finally(() => {
        batchesInFlight -= 1;
        schedule();
      });
    }
  }

  async function runBatch(batch: PendingAccess[]): Promise<void> {
    const outcomes = new Map<PendingAccess, { data: CredentialData } | { error: AppError }>();
    try {
      await repo.transaction(async (tx) => {
        const ids = [...new Set(batch.map((pending) => pending.id))];
        const locked = new Map((await tx.lockCredentials(ids)).map((row) => [row.credential.id, row]));
        const heads = await tx.lastAuditHashes(ids);
        const records: Parameters<CredentialsRepository['insertAudit']> = [];
        for (const pending of batch) {
          const { request, id } = pending;
          const entry = locked.get(id);
          if (!entry || entry.credential.workspace_id !== request.workspaceId) {
            outcomes.set(pending, { error: credentialNotFound(id) });
            continue;
          }
          const row = entry.credential;
          const known = new Set(entry.fields.map((f) => f.name));
          const unknown = (request.fields ?? []).filter((f) => !known.has(f));
          if (unknown.length > 0) {
            outcomes.set(pending, {
              error: validationFailed(
                unknown.map((f) => ({ field: 'fields', message: `${f} is not a field of this credential` })),
              ),
            });
            continue;
          }
          const audit = (action: AuditAction, metadata: Record<string, unknown>) => {
            const record = chainedRecord({
              credential_id: id,
              workspace_id: request.workspaceId,
              action,
              user_id: request.userId ?? null,
              ip_address: request.ipAddress ?? null,
              metadata: { service_name: request.serviceName, ...metadata },
              created_at: clock(),
            });
            const prevHash = heads.get(id) ?? '';
            const hash = chainHash(pending.keys.auditKey, prevHash, record);
            heads.set(id, hash);
            records.push({ ...record, prev_hash: prevHash, hash });
          };
          if (!row.is_active) {
            audit('access_denied', { reason: 'inactive' });
            outcomes.set(pending, {
              error: forbidden('credential_inactive', `credential ${id} is inactive`),
            });
            continue;
          }
          if (row.expires_at !== null && row.expires_at < clock()) {
            audit('access_denied', { reason: 'expired' });
            outcomes.set(pending, {
              error: forbidden(
                'credential_expired',
                `credential ${id} expired at ${row.expires_at.toISOString()}`,
              ),
            });
            continue;
          }
          let data: CredentialData;
          try {
            data = openCredential<CredentialData>(
              pending.keys.credentialKey,
              row.encrypted_data,
              binding(row),
            );
          } catch (error) {
            if (!(error instanceof EnvelopeError)) throw error;
            audit('access_failed', { error: error.message });
            outcomes.set(pending, { error: encryptionKeyError() });
            continue;
          }
          const fields = request.fields ?? Object.keys(data);
          audit('accessed', { fields_accessed: fields });
          outcomes.set(pending, {
            data: Object.fromEntries(fields.filter((f) => f in data).map((f) => [f, data[f]])),
          });
        }
        // Fail closed: the records are committed before any plaintext is handed out below.
        await tx.insertAudit(...records);
      });
    } catch (error) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    for (const pending of batch) {
      const outcome = outcomes.get(pending);
      if (outcome && 'data' in outcome) pending.resolve(outcome.data);
      else pending.reject(outcome?.error ?? new Error('access left without an outcome'));
    }
  }

  /** Rule C2: every decrypted read goes through here, in the spec's order of checks. */
  async function access(request: AccessRequest): Promise<CredentialData> {
    let id = request.id;
    if (id === undefined) {
      if (!request.name) throw new AppError(400, 'validation_failed', 'a credential id or name is required');
      const settings = await settingsOf(request.workspaceId);
      const environment = settings.environment_lookup ? (request.environment ?? 'production') : undefined;
      id = (await repo.findCredentialByName(request.workspaceId, request.name, environment))?.id;
      if (id === undefined) throw credentialNotFound(request.name);
    }
    const credentialId = id;
    const workspaceKeys = await keysOf(request.workspaceId);
    return new Promise<CredentialData>((resolve, reject) => {
      queue.push({ request, id: credentialId, keys: workspaceKeys, resolve, reject });
      schedule();
    });
  }

  return {
    access,

    // Types.

    listTypes: (actor: VaultActor, filter: { category?: string; is_active?: boolean }) =>
      repo.listTypes(actor.workspaceId, filter),

    async getType(actor: VaultActor, id: number) {
      const type = await repo.findType(actor.workspaceId, id);
      if (!type) throw notFound('credential type', id);
      return type;
    },

    async createType(actor: VaultActor, input: NewCredentialType) {
      const errors = checkFieldDefinitions(input.schema_definition);
      const names = new Set(input.schema_definition.map((f) => f.name));
      const endpoint = input.test_endpoint;
      if (endpoint?.kind === 'http' && !endpoint.url) {
        errors.push({ field: 'body.test_endpoint.url', message: 'is required for an http test' });
      }
      const placeholders = [endpoint?.url ?? '', ...Object.values(endpoint?.headers ?? {})].flatMap((text) =>
        [...text.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g)].map((m) => m[1] as string),
      );
      for (const name of placeholders.filter((p) => !names.has(p))) {
        errors.push({
          field: 'body.test_endpoint',
          message: `uses {{${name}}}, which is not a field of this type`,
        });
      }
      if (errors.length > 0) throw validationFailed(errors);
      if (await repo.typeNameTaken(actor.workspaceId, input.name)) {
        throw conflict('duplicate_credential_type', `a credential type named ${input.name} already exists`);
      }
      try {
        return await repo.insertType({
          ...input,
          workspace_id: actor.workspaceId,
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
      actor: VaultActor,
      input: {
        name: string;
        credential_type_id: number;
        data: CredentialData;
        environment?: string;
        description?: string | null;
        tags?: string[];
        expires_at?: string | null;
      },
    ) {
      const type = await repo.findType(actor.workspaceId, input.credential_type_id);
      if (!type?.is_active) {
        throw validationFailed([
          { field: 'body.credential_type_id', message: 'does not name an active credential type' },
        ]);
      }
      const prepared = prepareCredentialData(type.name, type.schema_definition, input.data);
      if (prepared.errors.length > 0) throw validationFailed(prepared.errors);
      const environment = input.environment ?? 'production';
      const workspaceKeys = await keysOf(actor.workspaceId);
      try {
        const row = await repo.transaction(async (tx) => {
          const id = await tx.nextCredentialId();
          const bound = { workspace_id: actor.workspaceId, id, credential_type_id: type.id };
          const created = await tx.insertCredential({
            id,
            name: input.name,
            workspace_id: actor.workspaceId,
            credential_type_id: type.id,
            encrypted_data: sealCredential(workspaceKeys.credentialKey, prepared.data, binding(bound)),
            environment,
            description: input.description ?? null,
            tags: input.tags ?? [],
            expires_at: input.expires_at ? new Date(input.expires_at) : null,
            created_by: actor.userId,
          });
          await appendAudit(tx, workspaceKeys.auditKey, {
            credentialId: id,
            workspaceId: actor.workspaceId,
            action: 'created',
            userId: actor.userId,
            ipAddress: actor.ipAddress,
            metadata: { credential_type: type.name, environment },
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

    async list(actor: VaultActor, filter: Omit<CredentialFilter, 'now'>) {
      const page = await repo.listCredentials(actor.workspaceId, { ...filter, now: clock() });
      return { items: page.items.map((item) => present(item.credential, item.type_name)), total: page.total };
    },

    /** Details: non-secret fields shown, password and hidden fields masked; not an audited access. */
    async get(actor: VaultActor, id: number) {
      const row = await repo.findCredential(actor.workspaceId, id);
      if (!row) throw credentialNotFound(id);
      const type = await typeOf(actor.workspaceId, row.credential_type_id);
      let data: CredentialData | null = null;
      try {
        const workspaceKeys = await keys.keysFor(actor.workspaceId);
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
      actor: VaultActor,
      id: number,
      input: {
        name?: string;
        data?: CredentialData;
        environment?: string;
        description?: string | null;
        tags?: string[];
        is_active?: boolean;
        expires_at?: string | null;
      },
    ) {
      const workspaceKeys = await keysOf(actor.workspaceId);
      // The name and environment the credential would end with, for the duplicate message.
      let target = { name: input.name ?? '', environment: input.environment ?? '' };
      try {
        return await repo.transaction(async (tx) => {
          const row = await tx.findCredential(actor.workspaceId, id, true);
          if (!row) throw credentialNotFound(id);
          target = { name: input.name ?? row.name, environment: input.environment ?? row.environment };
          const type = await typeOf(actor.workspaceId, row.credential_type_id, tx);
          const changes: Partial<CredentialRow> = {};
          const audited: Record<string, { old: unknown; new: unknown }> = {};
          const track = <
            K extends 'name' | 'description' | 'tags' | 'is_active' | 'expires_at' | 'environment',
          >(
            key: K,
            value: CredentialRow[K] | undefined,
          ) => {
            if (value === undefined) return;
            const old = row[key];
            if (JSON.stringify(old) === JSON.stringify(value)) return;
            changes[key] = value;
            audited[key] = { old, new: value };
          };
          track('name', input.name);
          track('description', input.description);
          track('tags', input.tags);
          track('is_active', input.is_active);
          track('environment', input.environment);
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
            if (prepared.errors.length > 0) throw validationFailed(prepared.errors);
            dataFields = changedFieldNames(previous, prepared.data);
            if (dataFields.length > 0) {
              changes.encrypted_data = sealCredential(
                workspaceKeys.credentialKey,
                prepared.data,
                binding(row),
              );
            }
          }
          const updated = (await tx.updateCredential(actor.workspaceId, id, changes)) ?? row;
          await appendAudit(tx, workspaceKeys.auditKey, {
            credentialId: id,
            workspaceId: actor.workspaceId,
            action: 'updated',
            userId: actor.userId,
            ipAddress: actor.ipAddress,
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
    async remove(actor: VaultActor, id: number) {
      const workspaceKeys = await keysOf(actor.workspaceId);
      const settings = await settingsOf(actor.workspaceId);
      await repo.transaction(async (tx) => {
        const row = await tx.findCredential(actor.workspaceId, id, true);
        if (!row) throw credentialNotFound(id);
        await appendAudit(tx, workspaceKeys.auditKey, {
          credentialId: id,
          workspaceId: actor.workspaceId,
          action: 'deleted',
          userId: actor.userId,
          ipAddress: actor.ipAddress,
          metadata: { credential_name: row.name },
        });
        if (settings.archive_audit_on_delete) await tx.archiveAudit(actor.workspaceId, id, row.name);
        const marker = sealCredential(
          workspaceKeys.credentialKey,
          { deleted: true, deleted_at: clock().toISOString() },
          binding(row),
        );
        await tx.updateCredential(actor.workspaceId, id, { encrypted_data: marker });
        await tx.deleteCredential(actor.workspaceId, id);
      });
    },

    /** Rule T: decrypted access (audited), then the type's connection test; result stored and audited. */
    async test(actor: VaultActor, id: number) {
      const row = await repo.findCredential(actor.workspaceId, id);
      if (!row) throw credentialNotFound(id);
      const type = await typeOf(actor.workspaceId, row.credential_type_id);
      const data = await access({
        workspaceId: actor.workspaceId,
        id,
        serviceName: 'connection-test',
        userId: actor.userId,
        ipAddress: actor.ipAddress,
      });
      const settings = await settingsOf(actor.workspaceId);
      const endpoint = type.test_endpoint;
      const result = await deps.testConnection({
        kind: endpoint?.kind ?? 'none',
        data,
        secretFields: secretFieldNames(type.schema_definition),
        endpoint:
          endpoint?.kind === 'http' && endpoint.url
            ? { url: endpoint.url, headers: endpoint.headers, expected_status: endpoint.expected_status }
            : undefined,
        refusePrivateNetworks: settings.refuse_private_networks,
      });
      const status = result.passed ? ('passed' as const) : ('failed' as const);
      const workspaceKeys = await keysOf(actor.workspaceId);
      const testedAt = clock();
      await repo.transaction(async (tx) => {
        if (!(await tx.findCredential(actor.workspaceId, id, true))) throw credentialNotFound(id);
        await tx.updateCredential(actor.workspaceId, id, {
          last_tested: testedAt,
          test_status: status,
          test_message: result.message,
        });
        await appendAudit(tx, workspaceKeys.auditKey, {
          credentialId: id,
          workspaceId: actor.workspaceId,
          action: 'tested',
          userId: actor.userId,
          ipAddress: actor.ipAddress,
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

    async auditLogs(actor: VaultActor, id: number, filter: AuditFilter) {
      if (!(await repo.findCredential(actor.workspaceId, id))) throw credentialNotFound(id);
      const page = await repo.listAudit(actor.workspaceId, id, filter);
      return { items: page.items.map((item) => item.record), total: page.total };
    },

    /** Recomputes the chain: intact, or the first record whose link or content does not match. */
    async verifyAudit(actor: VaultActor, id: number) {
      if (!(await repo.findCredential(actor.workspaceId, id))) throw credentialNotFound(id);
      const { auditKey } = await keysOf(actor.workspaceId);
      const records = await repo.chain(actor.workspaceId, id);
      let prev = '';
      for (const record of records) {
        if (record.prev_hash !== prev) {
          return {
            intact: false,
            records: records.length,
            first_broken: { id: record.id, reason: 'prev_hash does not match the record before it' },
          };
        }
        if (chainHash(auditKey, prev, chainedRecord(record)) !== record.hash) {
          return {
            intact: false,
            records: records.length,
            first_broken: { id: record.id, reason: 'content does not match its hash' },
          };
        }
        prev = record.hash;
      }
      return { intact: true, records: records.length, first_broken: null };
    },

    async archive(actor: VaultActor, filter: { credential_id?: number; limit: number; offset: number }) {
      const page = await repo.listArchive(actor.workspaceId, filter);
      return { items: page.items.map((item) => item.record), total: page.total };
    },

    // Settings.

    getSettings: (actor: VaultActor) => settingsOf(actor.workspaceId),

    async updateSettings(actor: VaultActor, changes: Partial<CredentialSettings>) {
      for (const [key, value] of Object.entries(changes)) {
        if (value !== undefined) await repo.putSetting(actor.workspaceId, `${SETTING_PREFIX}${key}`, value);
      }
      return settingsOf(actor.workspaceId);
    },

    /** Operators: workspace keys per master key. */
    encryptionStatus: () => keys.status(),
  };
}

export type CredentialsService = ReturnType<typeof createCredentialsService>;
