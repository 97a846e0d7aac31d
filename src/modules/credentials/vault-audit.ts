import { chainVerifier, hmacDigest, linkAfter } from '../../lib/crypto/hash-chain.ts';
import type { AuditAction, AuditRow, CredentialsRepository, NewAuditRow } from './credentials.repository.ts';

/**
 * The vault's audit chain: one chain per credential, each record linked to the one before it
 * by the shared kernel (`lib/crypto/hash-chain.ts`), keyed with the workspace's audit key
 * (HMAC-SHA256), so a database writer without the key cannot forge or repair a link. A record
 * is written in the transaction of what it records, under the credential's row lock, so two
 * writers never link to the same head.
 */

/** One event of a credential's life to record. */
export interface VaultAuditEntry {
  credentialId: number;
  workspaceId: string;
  action: AuditAction;
  userId?: string | null;
  ipAddress?: string | null;
  metadata: Record<string, unknown>;
}

/** The fields of a vault record that its link covers: all but the id and the hashes. */
export function chainedRecord(
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

/** The record of `entry` at `now`, linked after `prevHash` ('' for a credential's first). */
export function linkedRecord(
  auditKey: Buffer,
  prevHash: string,
  entry: VaultAuditEntry,
  now: Date,
): NewAuditRow {
  const record = chainedRecord({
    credential_id: entry.credentialId,
    workspace_id: entry.workspaceId,
    action: entry.action,
    user_id: entry.userId ?? null,
    ip_address: entry.ipAddress ?? null,
    metadata: entry.metadata,
    created_at: now,
  });
  return { ...record, ...linkAfter(hmacDigest(auditKey), prevHash, record) };
}

/** Appends one record; call it inside the transaction holding the credential's row lock. */
export async function appendAudit(
  tx: CredentialsRepository,
  auditKey: Buffer,
  now: Date,
  entry: VaultAuditEntry,
): Promise<void> {
  await tx.insertAudit(linkedRecord(auditKey, await tx.lastAuditHash(entry.credentialId), entry, now));
}

/** Recomputes a credential's chain, oldest first: intact, or the first record that does not link. */
export function verifyChain(auditKey: Buffer, records: AuditRow[]) {
  const chain = chainVerifier(hmacDigest(auditKey), (record: AuditRow) => chainedRecord(record));
  for (const record of records) {
    const reason = chain.check(record);
    if (reason) return { intact: false, records: records.length, first_broken: { id: record.id, reason } };
  }
  return { intact: true, records: records.length, first_broken: null };
}
