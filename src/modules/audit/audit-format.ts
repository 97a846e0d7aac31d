/**
 * The workspace audit trail's pure parts: the fields its chain links cover and the three
 * export formats. The chain itself is the kernel shared with the vault
 * (`lib/crypto/hash-chain.ts`), unkeyed here: `sha256Digest` over `chainedFields` (the vault
 * keys its HMAC with the workspace's audit key; see docs/audit.md).
 */
import type { AuditRecord } from '../../db/schema/audit.ts';

/** The product named in exported OCSF records; keep `version` in step with package.json. */
export const PRODUCT = { name: 'agent-platform', vendor_name: 'agent-platform', version: '0.1.0' };

/** The OCSF schema version the exported records follow. */
export const OCSF_VERSION = '1.3.0';

/** The fields a link covers: everything but the id (assigned on insert) and the hashes. */
export function chainedFields(record: Omit<AuditRecord, 'id' | 'prev_hash' | 'hash'>) {
  return {
    workspace_id: record.workspace_id,
    created_at: record.created_at,
    actor_id: record.actor_id,
    actor_kind: record.actor_kind,
    action: record.action,
    target_type: record.target_type,
    target_id: record.target_id,
    changes: record.changes,
    request_id: record.request_id ?? null,
    ip_address: record.ip_address ?? null,
  };
}

/**
 * One line of an export: a workspace record (`source: "workspace"`) or a credential's vault
 * record (`source: "vault"`, action `credential.<action>`, target the credential), in one shape.
 */
export interface ExportEntry {
  source: 'workspace' | 'vault';
  id: number;
  time: string;
  actor: { id: string | null; kind: string };
  action: string;
  target: { type: string; id: string };
  changes: Record<string, unknown>;
  request_id: string | null;
  ip_address: string | null;
  prev_hash: string;
  hash: string;
}

/** The columns of a CSV export, in order. */
export const CSV_COLUMNS = [
  'source',
  'id',
  'time',
  'actor_id',
  'actor_kind',
  'action',
  'target_type',
  'target_id',
  'changes',
  'request_id',
  'ip_address',
  'prev_hash',
  'hash',
] as const;

/**
 * Characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection"): a
 * user id, flag key or request id such as `=HYPERLINK(...)` would run when an auditor opens
 * the export. Tab and carriage return are on the list because some spreadsheets skip them
 * before looking for `=`.
 */
const FORMULA_LEADING = /^[=+\-@\t\r]/;

/**
 * One CSV field. Text that a spreadsheet would take for a formula is prefixed with a single
 * quote (OWASP's neutralisation; the export is for reading, not for computing), then RFC 4180
 * applies: a field with a comma, quote, CR or LF is quoted, quotes doubled. Numbers are ours
 * (record ids) and never negative, so they are written as they are.
 */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  const text = FORMULA_LEADING.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The header row, CRLF-terminated as RFC 4180 says. */
export const csvHeader = (): string => `${CSV_COLUMNS.join(',')}\r\n`;

/** One CSV row (CRLF-terminated); `changes` is its JSON text. */
export function csvRow(entry: ExportEntry): string {
  const values: (string | number | null)[] = [
    entry.source,
    entry.id,
    entry.time,
    entry.actor.id,
    entry.actor.kind,
    entry.action,
    entry.target.type,
    entry.target.id,
    JSON.stringify(entry.changes),
    entry.request_id,
    entry.ip_address,
    entry.prev_hash,
    entry.hash,
  ];
  return `${values.map(csvField).join(',')}\r\n`;
}

/** OCSF API Activity `activity_id`: 1 Create, 2 Read, 3 Update, 4 Delete, 99 Other. */
export function ocsfActivity(action: string): { id: number; name: string } {
  const verb = action.slice(action.lastIndexOf('.') + 1);
  if (/^(created|added|granted|enabled|scheduled)$/.test(verb)) return { id: 1, name: 'Create' };
  if (/^(accessed|read|viewed|exported)$/.test(verb)) return { id: 2, name: 'Read' };
  if (/^(deleted|removed|revoked|disabled)$/.test(verb)) return { id: 4, name: 'Delete' };
  if (/^(updated|changed|renamed|rotated|restored)$/.test(verb)) return { id: 3, name: 'Update' };
  return { id: 99, name: 'Other' };
}

/**
 * One OCSF 1.x "API Activity" event (class_uid 6003, category_uid 6 Application Activity).
 * What OCSF has no attribute for (target, changes, chain hashes, origin) goes in `unmapped`.
 */
export function ocsfEvent(entry: ExportEntry) {
  const activity = ocsfActivity(entry.action);
  return {
    activity_id: activity.id,
    activity_name: activity.name,
    category_uid: 6,
    category_name: 'Application Activity',
    class_uid: 6003,
    class_name: 'API Activity',
    type_uid: 6003 * 100 + activity.id,
    type_name: `API Activity: ${activity.name}`,
    severity_id: 1,
    severity: 'Informational',
    status_id: 1,
    status: 'Success',
    time: Date.parse(entry.time),
    actor: { user: { uid: entry.actor.id ?? 'unknown', type: entry.actor.kind } },
    api: {
      operation: entry.action,
      ...(entry.request_id ? { request: { uid: entry.request_id } } : {}),
    },
    src_endpoint: entry.ip_address ? { ip: entry.ip_address } : {},
    metadata: {
      uid: `${entry.source}:${entry.id}`,
      version: OCSF_VERSION,
      product: PRODUCT,
      log_name: entry.source === 'vault' ? 'credential_audit' : 'workspace_audit',
    },
    unmapped: {
      source: entry.source,
      target: entry.target,
      changes: entry.changes,
      prev_hash: entry.prev_hash,
      hash: entry.hash,
    },
  };
}

/** The order of a merged export: by time, then workspace records before vault ones, then id. */
export function entryOrder(a: ExportEntry, b: ExportEntry): number {
  if (a.time !== b.time) return a.time < b.time ? -1 : 1;
  if (a.source !== b.source) return a.source === 'workspace' ? -1 : 1;
  return a.id - b.id;
}
