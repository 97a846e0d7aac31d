import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** One CIDR range, kept as raw bytes so IPv4 and IPv6 share one matcher. */
interface Range {
  cidr: string;
  bytes: Uint8Array;
  prefix: number;
}

/**
 * Where an outbound connection to an address a user chose may go: connection tests today,
 * LLM base URLs, URL sources and webhooks next. The caller decides the policy (per workspace).
 */
export interface AddressPolicy {
  /**
   * Also refuse loopback, RFC 1918, CGNAT, unique-local and link-local IPv6 ranges. On by default
   * (a multi-tenant service must not probe its own network for tenants); a workspace admin of a
   * self-hosted install whose databases live on a private network turns it off.
   */
  refusePrivateNetworks: boolean;
  /**
   * Development only (`VAULT_ALLOW_LOOPBACK`): loopback stays reachable while private networks are
   * refused, so a developer can test against services on their own machine.
   */
  allowLoopback?: boolean;
}

/** Why an address was refused, or that it may be used. */
export type AddressVerdict =
  | { allowed: true }
  | { allowed: false; kind: 'metadata' | 'private' | 'invalid'; cidr: string; address: string };

/** A host name resolved to one address that passed the policy, or a message saying why not. */
export type VettedHost =
  | { ok: true; host: string; address: string; family: 4 | 6 }
  | { ok: false; message: string };

function parseIPv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (const [index, part] of parts.entries()) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes[index] = value;
  }
  return bytes;
}

function parseIPv6(text: string): Uint8Array | undefined {
  const withoutZone = text.split('%')[0] ?? '';
  const halves = withoutZone.split('::');
  if (halves.length > 2) return undefined;
  const toGroups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups: number[] = [];
    const pieces = part.split(':');
    for (const [index, piece] of pieces.entries()) {
      if (index === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIPv4(piece);
        if (!v4) return undefined;
        groups.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(piece)) return undefined;
        groups.push(Number.parseInt(piece, 16));
      }
    }
    return groups;
  };
  const head = toGroups(halves[0] ?? '');
  const tail = halves.length === 2 ? toGroups(halves[1] ?? '') : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  for (const [index, group] of groups.entries()) {
    bytes[index * 2] = group >> 8;
    bytes[index * 2 + 1] = group & 0xff;
  }
  return bytes;
}

/** Parses an IPv4 or IPv6 literal (brackets and zone ids allowed) to its bytes. */
function parseAddress(text: string): Uint8Array | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  return bare.includes(':') ? parseIPv6(bare) : parseIPv4(bare);
}

function range(cidr: string): Range {
  const [base = '', length = ''] = cidr.split('/');
  const bytes = parseAddress(base);
  if (!bytes) throw new Error(`bad built-in range ${cidr}`);
  return { cidr, bytes, prefix: Number(length) };
}

function inRange(bytes: Uint8Array, candidate: Range): boolean {
  if (bytes.length !== candidate.bytes.length) return false;
  let bits = candidate.prefix;
  for (let index = 0; bits > 0; index += 1, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[index] ?? 0) & mask) !== ((candidate.bytes[index] ?? 0) & mask)) return false;
  }
  return true;
}

/** Cloud metadata endpoints live here; reaching them leaks instance credentials, so never allowed. */
const METADATA_RANGES = [range('169.254.0.0/16'), range('fd00:ec2::254/128')];

const LOOPBACK_RANGES = [range('127.0.0.0/8'), range('::1/128')];

const PRIVATE_RANGES = [
  range('0.0.0.0/8'),
  range('10.0.0.0/8'),
  range('100.64.0.0/10'),
  range('127.0.0.0/8'),
  range('172.16.0.0/12'),
  range('192.168.0.0/16'),
  range('::/128'),
  range('::1/128'),
  range('fc00::/7'),
  range('fe80::/10'),
];

const IPV4_MAPPED = range('::ffff:0:0/96');
const NAT64_WELL_KNOWN = range('64:ff9b::/96');

/**
 * IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) addresses reach the embedded IPv4 host,
 * so they are judged as that host; otherwise ::ffff:169.254.169.254 would slip past the IPv4 rules.
 */
function effectiveBytes(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 16 && (inRange(bytes, IPV4_MAPPED) || inRange(bytes, NAT64_WELL_KNOWN))) {
    return bytes.slice(12);
  }
  return bytes;
}

/**
 * Decides whether a connection test may open a socket to this literal address. Exported apart from
 * the resolver so every caller (and the tests) judge addresses with exactly one rule set.
 */
export function checkAddress(address: string, policy: AddressPolicy): AddressVerdict {
  const parsed = parseAddress(address);
  if (!parsed) return { allowed: false, kind: 'invalid', cidr: '', address };
  const bytes = effectiveBytes(parsed);
  const metadata = METADATA_RANGES.find((candidate) => inRange(bytes, candidate));
  if (metadata) return { allowed: false, kind: 'metadata', cidr: metadata.cidr, address };
  if (policy.refusePrivateNetworks) {
    const loopback = LOOPBACK_RANGES.some((candidate) => inRange(bytes, candidate));
    const privateRange = PRIVATE_RANGES.find((candidate) => inRange(bytes, candidate));
    if (privateRange && !(loopback && policy.allowLoopback))
      return { allowed: false, kind: 'private', cidr: privateRange.cidr, address };
  }
  return { allowed: true };
}

function refusal(host: string, verdict: Exclude<AddressVerdict, { allowed: true }>): string {
  const subject =
    host === verdict.address ? `${host} is` : `${host} resolves to ${verdict.address}, which is`;
  if (verdict.kind === 'metadata') return `refused: ${subject} a link-local / cloud metadata address`;
  if (verdict.kind === 'invalid') return `refused: ${subject} not an IP address that can be checked`;
  return `refused: ${subject} in the private range ${verdict.cidr} and this workspace refuses private networks`;
}

const UNRESOLVED_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NODATA', 'EAI_NONAME', 'EAI_FAIL']);

/**
 * Resolves a host once and returns the single address the caller must connect to. Every resolved
 * address is checked (a name with one safe and one metadata address is refused), and the caller
 * connects to the returned literal instead of the name, so a DNS answer that changes between the
 * check and the connect (DNS rebinding) cannot redirect the connection.
 */
export async function vetHost(host: string, policy: AddressPolicy): Promise<VettedHost> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (bare === '' || /[\s/\\]/.test(bare))
    return { ok: false, message: `host "${host}" is not a valid host name` };
  let addresses: { address: string; family: number }[];
  try {
    addresses = isIP(bare) ? [{ address: bare, family: isIP(bare) }] : await lookup(bare, { all: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (UNRESOLVED_CODES.has(code)) return { ok: false, message: `host name ${bare} could not be resolved` };
    return { ok: false, message: `host name ${bare} could not be resolved (${code || 'lookup error'})` };
  }
  for (const { address } of addresses) {
    const verdict = checkAddress(address, policy);
    if (!verdict.allowed) return { ok: false, message: refusal(bare, verdict) };
  }
  const first = addresses[0];
  if (!first) return { ok: false, message: `host name ${bare} could not be resolved` };
  return { ok: true, host: bare, address: first.address, family: first.family === 6 ? 6 : 4 };
}
