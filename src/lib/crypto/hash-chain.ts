import { createHash, createHmac } from 'node:crypto';

/**
 * The hash chain kernel of both audit trails: the vault's credential records (keyed) and the
 * workspace and platform trails (unkeyed). Pure: no I/O, no clock.
 *
 *   record n-1                 record n
 *   ┌───────────────┐          ┌────────────────────────────────────────────────┐
 *   │ hash ─────────┼────────► │ prev_hash                                      │
 *   └───────────────┘          │ hash = digest(prev_hash "\n" canonical(fields)) │
 *                              └────────────────────────────────────────────────┘
 *
 * The first record's `prev_hash` is the empty string. `digest` is SHA-256 for the workspace
 * trail (docs/audit.md) and HMAC-SHA256 keyed with the workspace's audit key for the vault
 * (lib/crypto/envelope.ts derives it), so only a holder of the key can rewrite a vault chain.
 * Each trail decides which of its record's fields the link covers; the layout of the digest
 * input is the same for both, and stored hashes depend on it: never change it.
 */

/**
 * JSON with object keys sorted at every level, so one record always hashes the same.
 * Dates become ISO strings; undefined members are dropped as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The hash of a record's chained fields after the previous record's hash (64 hex digits). */
export type ChainDigest = (prevHash: string, fields: unknown) => string;

/** The unkeyed digest: SHA-256 (the workspace and platform audit trails). */
export const sha256Digest: ChainDigest = (prevHash, fields) =>
  createHash('sha256').update(prevHash).update('\n').update(canonicalJson(fields)).digest('hex');

/** The keyed digest: HMAC-SHA256 with `key` (the vault, keyed by the workspace's audit key). */
export const hmacDigest =
  (key: Buffer): ChainDigest =>
  (prevHash, fields) =>
    createHmac('sha256', key).update(prevHash).update('\n').update(canonicalJson(fields)).digest('hex');

/** The two columns every chained record stores. */
export interface ChainLink {
  prev_hash: string;
  hash: string;
}

/** The link of a record with `fields` after the record whose hash is `prevHash`. */
export const linkAfter = (digest: ChainDigest, prevHash: string, fields: unknown): ChainLink => ({
  prev_hash: prevHash,
  hash: digest(prevHash, fields),
});

/** Why a record breaks its chain: it does not follow the record before it, or it was altered. */
export type ChainBreak = 'prev_hash does not match the record before it' | 'content does not match its hash';

/**
 * Walks a chain in order, one record at a time, so a long trail can be checked batch by batch
 * without holding it: `check` answers why a record breaks the chain, or undefined when it
 * links (and moves on to it). `head` is the hash of the last record that linked.
 */
export function chainVerifier<Row extends ChainLink>(digest: ChainDigest, fieldsOf: (row: Row) => unknown) {
  let head = '';
  let checked = 0;
  return {
    check(row: Row): ChainBreak | undefined {
      if (row.prev_hash !== head) return 'prev_hash does not match the record before it';
      if (digest(head, fieldsOf(row)) !== row.hash) return 'content does not match its hash';
      head = row.hash;
      checked += 1;
      return undefined;
    },
    /** The hash the next record must name as its `prev_hash` ('' before the first). */
    get head() {
      return head;
    },
    /** Records that linked so far. */
    get checked() {
      return checked;
    },
  };
}
