import type { Caller } from '../../caller.ts';
import type { Db } from '../../db/transaction.ts';
import { forbidden, invalid } from '../../errors.ts';
import { canonicalJson, chainVerifier, linkAfter, sha256Digest } from '../../lib/crypto/hash-chain.ts';
import { type AuditRecord, createAuditRepository, type Trail } from './audit.repository.ts';
import { chainedFields, csvHeader, csvRow, type ExportEntry, entryOrder, ocsfEvent } from './audit-format.ts';

/** Who made a change, as the audit trail records it (the caller of the request, or the platform). */
export type RecordedBy = Pick<Caller, 'userId'> & Partial<Pick<Caller, 'via' | 'ipAddress' | 'requestId'>>;

/** One administrative change to record. */
export interface AuditEntry {
  /** A dotted verb: `member.added`, `role.changed`, `api_key.created`, `flag.updated`, ... */
  action: string;
  /** What changed: `member`, `api_key`, `flag`, `settings`, `workspace`, ... */
  targetType: string;
  targetId: string;
  /**
   * Old and new values (`{field: {old, new}}`, or `{new: ...}` for a creation). Never secrets:
   * pass references; values under secret-looking keys are masked all the same.
   */
  changes: Record<string, unknown>;
}

/** A vault (credential) audit record, as the vault hands it to the workspace export. */
export interface VaultAuditRow {
  id: number;
  credential_id: number;
  action: string;
  user_id: string | null;
  ip_address: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
  prev_hash: string;
  hash: string;
}

/** The vault's part of the export: its credential audit records in keyset batches. */
export interface AuditVault {
  auditRange(
    workspaceId: string,
    query: {
      from?: Date;
      to?: Date;
      actions?: string[];
      after?: { created_at: Date; id: number };
      limit: number;
    },
  ): Promise<VaultAuditRow[]>;
}

export interface AuditDependencies {
  db: Db;
  /** The vault's credential records, merged into the workspace export. */
  vault: AuditVault;
  clock?: () => Date;
  /** Rows read per query while verifying or exporting (memory stays about this many rows). */
  batchSize?: number;
  /** Users who may read the platform trail (`PLATFORM_ADMIN_USERS`). */
  platformAdmins?: ReadonlySet<string>;
}

export type ExportFormat = 'jsonl' | 'csv' | 'ocsf';

/** Which trail a reader asks for: the workspace's, or the platform's (changes of no workspace). */
export type AuditScope = 'workspace' | 'platform';

/** Who reads a trail: the workspace's admins, or for the platform trail a platform operator. */
type Reader = Pick<Caller, 'workspaceId' | 'userId'>;

/** `POST /settings/audit/export`. */
export interface ExportInput {
  /** `workspace` (default): the caller's workspace; `platform`: the platform trail (operators). */
  scope?: AuditScope;
  format: ExportFormat;
  from?: string;
  to?: string;
  actions?: string[];
}

/** The actions the vault records, as the workspace export names them. */
const VAULT_PREFIX = 'credential.';

/** Keys whose values never enter the trail, whatever a caller passes (a safety net, not the rule). */
const SECRET_KEY = /(password|secret|token|private_key|api_key|key_hash|^key)$/i;

/** Masks values under secret-looking keys, at any depth. */
export function maskSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, inner]) => [
      key,
      SECRET_KEY.test(key) && inner !== null && typeof inner !== 'object' ? '[redacted]' : maskSecrets(inner),
    ]),
  );
}

/**
 * The fields that differ between two versions of something, as `{field: {old, new}}` (by
 * canonical JSON, so key order does not count). `undefined` reads as null.
 */
export function changesBetween(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown>,
): Record<string, { old: unknown; new: unknown }> {
  const keys = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after)])].sort();
  const changes: Record<string, { old: unknown; new: unknown }> = {};
  for (const key of keys) {
    const old = before?.[key] ?? null;
    const now = after[key] ?? null;
    if (canonicalJson(old) !== canonicalJson(now)) changes[key] = { old, new: now };
  }
  return changes;
}

const fromWorkspace = (row: AuditRecord): ExportEntry => ({
  source: 'workspace',
  id: row.id,
  time: row.created_at.toISOString(),
  actor: { id: row.actor_id, kind: row.actor_kind },
  action: row.action,
  target: { type: row.target_type, id: row.target_id },
  changes: row.changes,
  request_id: row.request_id,
  ip_address: row.ip_address,
  prev_hash: row.prev_hash,
  hash: row.hash,
});

const fromVault = (row: VaultAuditRow): ExportEntry => ({
  source: 'vault',
  id: row.id,
  time: row.created_at.toISOString(),
  actor: { id: row.user_id, kind: row.user_id ? 'user' : 'system' },
  action: `${VAULT_PREFIX}${row.action}`,
  target: { type: 'credential', id: String(row.credential_id) },
  changes: row.metadata,
  request_id: null,
  ip_address: row.ip_address,
  prev_hash: row.prev_hash,
  hash: row.hash,
});

/**
 * Reads a keyset-paged source to the end, one batch in memory at a time, stopping when the
 * signal aborts (the client left).
 */
async function* batches<Row extends { created_at: Date; id: number }>(
  read: (after: { created_at: Date; id: number } | undefined) => Promise<Row[]>,
  limit: number,
  signal?: AbortSignal,
): AsyncGenerator<Row> {
  let after: { created_at: Date; id: number } | undefined;
  while (!signal?.aborted) {
    const rows = await read(after);
    yield* rows;
    const last = rows.at(-1);
    if (!last || rows.length < limit) return;
    after = { created_at: last.created_at, id: last.id };
  }
}

/** Merges two sources already in `entryOrder` into one, holding one entry of each. */
async function* merge(a: AsyncGenerator<ExportEntry>, b: AsyncGenerator<ExportEntry>) {
  let left = await a.next();
  let right = await b.next();
  while (!left.done || !right.done) {
    if (right.done || (!left.done && entryOrder(left.value, right.value) <= 0)) {
      yield left.value as ExportEntry;
      left = await a.next();
    } else {
      yield right.value;
      right = await b.next();
    }
  }
}

async function* mapped<Row, Out>(source: AsyncGenerator<Row>, map: (row: Row) => Out) {
  for await (const row of source) yield map(row);
}

async function* none(): AsyncGenerator<ExportEntry> {}

/**
 * What every module records its changes with: `record` appends a hash-chained record in the
 * caller's transaction. It needs nothing but that transaction, so a module the trail itself
 * reads (the vault, whose credential records the export merges in) builds its own instead of
 * waiting for the audit module.
 */
export function createAuditRecorder(clock: () => Date = () => new Date()) {
  return {
    /**
     * Appends one record to the workspace's chain (or, with `workspaceId` null, to the
     * platform's) inside the caller's transaction, so it
     * commits (or rolls back) with the change it records. Takes the chain head's lock, which
     * queues concurrent writers of the same workspace until this transaction ends.
     */
    async record(tx: Db, workspaceId: string | null, caller: RecordedBy, entry: AuditEntry): Promise<void> {
      const txRepo = createAuditRepository(tx);
      const prevHash = await txRepo.lockHead(workspaceId);
      const fields = chainedFields({
        workspace_id: workspaceId,
        created_at: clock(),
        actor_id: caller.userId,
        actor_kind: caller.via === 'api_key' ? 'api_key' : caller.userId === 'system' ? 'system' : 'user',
        action: entry.action,
        target_type: entry.targetType,
        target_id: entry.targetId,
        changes: maskSecrets(entry.changes) as Record<string, unknown>,
        request_id: caller.requestId ?? null,
        ip_address: caller.ipAddress ?? null,
      });
      await txRepo.append({ ...fields, ...linkAfter(sha256Digest, prevHash, fields) });
    },
  };
}

/**
 * The workspace audit trail (docs/audit.md): `record` appends a hash-chained record in the
 * caller's transaction; `info` counts and verifies; `export` streams the trail, merged with the
 * vault's credential records, in keyset batches.
 */
export function createAuditService(deps: AuditDependencies) {
  const repo = createAuditRepository(deps.db);
  const clock = deps.clock ?? (() => new Date());
  const batchSize = deps.batchSize ?? 500;
  const recorder = createAuditRecorder(clock);

  /** Walks the chain in id order, batch by batch: intact, or the first record that does not link. */
  async function verify(trail: Trail) {
    const chain = chainVerifier(sha256Digest, (row: AuditRecord) => chainedFields(row));
    let afterId = 0;
    for (;;) {
      const rows = await repo.chainBatch(trail, afterId, batchSize);
      for (const row of rows) {
        const reason = chain.check(row);
        if (reason) return { verified: false, checked: chain.checked, first_broken_id: row.id, reason };
        afterId = row.id;
      }
      if (rows.length < batchSize) break;
    }
    const head = await repo.head(trail);
    if (head && head.hash !== chain.head) {
      return {
        verified: false,
        checked: chain.checked,
        first_broken_id: head.last_id ?? afterId,
        reason: 'the newest records are missing: the chain ends before its recorded head',
      };
    }
    return { verified: true, checked: chain.checked };
  }

  /** The trail `scope` names for `reader`; the platform trail is for platform operators only. */
  function trailOf(reader: Reader, scope: AuditScope | undefined): Trail {
    if (scope !== 'platform') return reader.workspaceId;
    if (!deps.platformAdmins?.has(reader.userId)) {
      throw forbidden(
        'platform_admin_required',
        'only platform operators (PLATFORM_ADMIN_USERS) may read the platform audit trail',
      );
    }
    return null;
  }

  return {
    record: recorder.record,

    /** Counts, time span, retention and the chain's verification (streamed in batches). */
    async info(caller: Reader, scope?: AuditScope) {
      const trail = trailOf(caller, scope);
      const rows = await repo.summary(trail);
      const times = (pick: 'oldest' | 'newest') =>
        rows
          .map((row) => row[pick])
          .filter((time): time is Date => time !== null)
          .map((time) => time.getTime());
      const oldest = times('oldest');
      const newest = times('newest');
      return {
        total: rows.reduce((sum, row) => sum + row.count, 0),
        by_action: Object.fromEntries(rows.map((row) => [row.action, row.count])),
        oldest_at: oldest.length > 0 ? new Date(Math.min(...oldest)).toISOString() : null,
        newest_at: newest.length > 0 ? new Date(Math.max(...newest)).toISOString() : null,
        retention: {
          days: null,
          description: 'records are kept for the life of the workspace; nothing is pruned',
        },
        chain: await verify(trail),
      };
    },

    /**
     * The trail as text chunks in the chosen format, oldest first, the workspace's records and
     * the vault's credential records merged by time. Reads one batch of each at a time and
     * only when the consumer asks for more (back-pressure); stops when `signal` aborts.
     */
    export(caller: Reader, input: ExportInput, signal?: AbortSignal): AsyncGenerator<string> {
      const from = input.from === undefined ? undefined : new Date(input.from);
      const to = input.to === undefined ? undefined : new Date(input.to);
      if (from && to && from >= to) throw invalid('body.to', 'must be after body.from');
      const actions = input.actions;
      const workspaceActions = actions?.filter((action) => !action.startsWith(VAULT_PREFIX));
      const vaultActions = actions
        ?.filter((action) => action.startsWith(VAULT_PREFIX))
        .map((action) => action.slice(VAULT_PREFIX.length));
      const trail = trailOf(caller, input.scope);
      const limit = batchSize;

      const own =
        workspaceActions && workspaceActions.length === 0
          ? none()
          : mapped(
              batches(
                (after) => repo.rangeBatch(trail, { from, to, actions: workspaceActions, after, limit }),
                limit,
                signal,
              ),
              fromWorkspace,
            );
      const vault =
        // The vault's records belong to a workspace: none in the platform trail.
        trail === null || (vaultActions && vaultActions.length === 0)
          ? none()
          : mapped(
              batches(
                (after) => deps.vault.auditRange(trail, { from, to, actions: vaultActions, after, limit }),
                limit,
                signal,
              ),
              fromVault,
            );
      const format =
        input.format === 'csv'
          ? csvRow
          : input.format === 'ocsf'
            ? (entry: ExportEntry) => `${JSON.stringify(ocsfEvent(entry))}\n`
            : (entry: ExportEntry) => `${JSON.stringify(entry)}\n`;

      return (async function* () {
        if (input.format === 'csv') yield csvHeader();
        // Lines are sent in chunks of a batch, so a chunk is one write, not one per record.
        let chunk: string[] = [];
        for await (const entry of merge(own, vault)) {
          if (signal?.aborted) return;
          chunk.push(format(entry));
          if (chunk.length >= limit) {
            yield chunk.join('');
            chunk = [];
          }
        }
        if (chunk.length > 0 && !signal?.aborted) yield chunk.join('');
      })();
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;

/** What other modules take to record their changes: `record(tx, workspaceId, caller, entry)`. */
export type AuditRecorder = ReturnType<typeof createAuditRecorder>;

/** An export's file name: `audit-<workspace>-<date>.<ext>`. */
export const exportFileName = (workspaceId: string, format: ExportFormat, now: Date): string =>
  `audit-${workspaceId}-${now.toISOString().slice(0, 10)}.${format === 'csv' ? 'csv' : 'jsonl'}`;
