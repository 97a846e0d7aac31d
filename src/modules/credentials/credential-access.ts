import { type Db, inTransaction } from '../../db/transaction.ts';
import { AppError, forbidden, invalidFields, notFound } from '../../errors.ts';
import { EnvelopeError, openCredential, type WorkspaceKeys } from '../../lib/crypto/envelope.ts';
import { destinationAllowed, destinationOf } from '../../lib/net/allowed-hosts.ts';
import { type CredentialData, secretFieldNames } from './credential-data.ts';
import { defaultHosts } from './credential-hosts.ts';
import {
  type AuditAction,
  type CredentialsRepository,
  createCredentialsRepository,
} from './credentials.repository.ts';
import { linkedRecord } from './vault-audit.ts';

/**
 * The vault's decrypted access (rule C2): every read of a credential's plaintext, from
 * anywhere in the platform, is checked in the spec's order and recorded in the credential's
 * audit chain before the plaintext is released. Accesses are written by group commit (see
 * `schedule`), the vault's measured hot path (bench/RESULTS.md, the vault benchmark).
 */

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
  /**
   * Where the decrypted values will be sent: recorded as `destination_host`. With
   * `allowedOnly` (tools), the access is refused (`access_denied`, 403
   * `destination_not_allowed`) unless the credential's allowed hosts include it (rule C3b).
   */
  destination?: { url: URL; allowedOnly: boolean };
  /** The work the access is for, recorded with it: the agent, and the run or chat conversation. */
  usedBy?: AccessPurpose;
}

/** What a decrypted access is for, as its audit record names it. */
export interface AccessPurpose {
  agentId?: string;
  runId?: string;
  conversationId?: string;
}

/** Decrypted accesses written per transaction, and transactions under way at once. */
const MAX_BATCH_SIZE = 64;
const MAX_BATCHES_IN_FLIGHT = 2;

export const credentialNotFound = (id: number | string) => notFound('credential', id);
export const encryptionKeyError = () =>
  new AppError(500, 'encryption_key_error', 'the stored credential data cannot be decrypted');

/** What a credential's blob is bound to (its envelope's associated data): where it belongs. */
export const binding = (row: { workspace_id: string; id: number; credential_type_id: number }) => ({
  workspaceId: row.workspace_id,
  credentialId: row.id,
  typeId: row.credential_type_id,
});

export interface AccessDependencies {
  db: Db;
  clock: () => Date;
  /** The workspace's keys; a key that cannot be opened answers `encryptionKeyError`. */
  keysOf(workspaceId: string): Promise<WorkspaceKeys>;
  /** Whether a lookup by name counts the environment (the vault's `environment_lookup` setting). */
  environmentLookup(workspaceId: string): Promise<boolean>;
}

/** The decrypted access of one vault: `access(request)` resolves to the fields asked for. */
export function createCredentialAccess(deps: AccessDependencies) {
  const { db, clock } = deps;
  const repo = createCredentialsRepository(db);

  /** Runs `work` with the repository bound to one transaction. */
  const transaction = <T>(work: (tx: CredentialsRepository) => Promise<T>) =>
    inTransaction(db, (tx) => work(createCredentialsRepository(tx)));

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
      await transaction(async (tx) => {
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
              error: invalidFields(
                unknown.map((f) => ({ field: 'fields', message: `${f} is not a field of this credential` })),
              ),
            });
            continue;
          }
          const destination = request.destination ? destinationOf(request.destination.url) : undefined;
          const context = {
            service_name: request.serviceName,
            ...(request.usedBy?.agentId ? { agent_id: request.usedBy.agentId } : {}),
            ...(request.usedBy?.runId ? { run_id: request.usedBy.runId } : {}),
            ...(request.usedBy?.conversationId ? { conversation_id: request.usedBy.conversationId } : {}),
            ...(destination ? { destination_host: destination } : {}),
          };
          const audit = (action: AuditAction, metadata: Record<string, unknown>) => {
            const record = linkedRecord(
              pending.keys.auditKey,
              heads.get(id) ?? '',
              {
                credentialId: id,
                workspaceId: request.workspaceId,
                action,
                userId: request.userId,
                ipAddress: request.ipAddress,
                metadata: { ...context, ...metadata },
              },
              clock(),
            );
            heads.set(id, record.hash);
            records.push(record);
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
          /** Rule C3b: true (and the refusal recorded) when the destination is not among `allowed`. */
          const refusedDestination = (allowed: string[] | null) => {
            if (!destination || !request.destination?.allowedOnly || allowed === null) return false;
            if (destinationAllowed(destination, allowed)) return false;
            audit('access_denied', { reason: 'destination_not_allowed' });
            outcomes.set(pending, {
              error: forbidden(
                'destination_not_allowed',
                `credential ${id} may not be sent to ${destination}: an admin adds that host to the credential's allowed_hosts`,
              ),
            });
            return true;
          };
          // An admin's explicit list is checked before the blob is even opened.
          if (refusedDestination(row.allowed_hosts)) continue;
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
          // Without an explicit list, the default comes from the (non-secret) test endpoint fields.
          if (
            row.allowed_hosts === null &&
            refusedDestination(defaultHosts(entry.endpoint, data, new Set(secretFieldNames(entry.fields))))
          )
            continue;
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
      const environment = (await deps.environmentLookup(request.workspaceId))
        ? (request.environment ?? 'production')
        : undefined;
      id = (await repo.findCredentialByName(request.workspaceId, request.name, environment))?.id;
      if (id === undefined) throw credentialNotFound(request.name);
    }
    const credentialId = id;
    const workspaceKeys = await deps.keysOf(request.workspaceId);
    return new Promise<CredentialData>((resolve, reject) => {
      queue.push({ request, id: credentialId, keys: workspaceKeys, resolve, reject });
      schedule();
    });
  }

  return { access };
}
