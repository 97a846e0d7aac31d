import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** One CIDR range, kept as raw bytes so IPv4 and IPv6 share one matcher. */
export interface CidrRange {
  cidr: string;
  bytes: Uint8Array;
  prefix: number;
}

/**
 * Where an outbound connection to an address a user chose may go (connection tests, LLM and
 * embedding base URLs, URL sources, the `http_request` tool). Built per workspace from the
 * operator's platform policy, which a workspace can only narrow (`workspaceAddressPolicy`).
 */
export interface AddressPolicy {
  /**
   * Refuse private space: loopback, RFC 1918, CGNAT, unique-local, site-local and link-local
   * IPv6, local-use NAT64, and IPv6 forms that embed such an IPv4 address. Reserved ranges
   * (documentation, benchmarking, multicast, broadcast, "this network") are refused either way.
   */
  refusePrivateNetworks: boolean;
  /**
   * The operator's exceptions (`OUTBOUND_ALLOWED_CIDRS`): ranges reachable even though they are
   * private or reserved, such as the one address of an internal model gateway. Never the cloud
   * metadata ranges, which no policy admits.
   */
  allowed?: readonly CidrRange[];
  /**
   * Who refuses private networks, so a refusal can name the setting that would allow it: the
   * platform (`OUTBOUND_ALLOW_PRIVATE_NETWORKS` is off) or the workspace (its own
   * `refuse_private_networks`). Unknown when absent.
   */
  refusedBy?: 'platform' | 'workspace';
}

/**
 * The operator's outbound policy, from the environment: whether private networks may be
 * reached at all (`OUTBOUND_ALLOW_PRIVATE_NETWORKS`) and the ranges always reachable
 * (`OUTBOUND_ALLOWED_CIDRS`). Tenants cannot change it.
 */
export interface PlatformAddressPolicy {
  allowPrivateNetworks: boolean;
  allowed: readonly CidrRange[];
}

/** Why an address was refused, or that it may be used. */
export type AddressVerdict =
  | { allowed: true }
  | {
      allowed: false;
      kind: 'metadata' | 'private' | 'reserved' | 'invalid';
      cidr: string;
      address: string;
      /** The IPv4 address an IPv6 form carries (mapped, NAT64, 6to4, Teredo), when it decided. */
      embedded?: string;
    };

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

/**
 * Parses `address/prefix` (or a bare address, a range of one) for the operator's allow-list;
 * undefined when it is not one. Host bits beyond the prefix are ignored, as routers do.
 */
export function parseCidr(text: string): CidrRange | undefined {
  const [base = '', length, ...rest] = text.trim().split('/');
  const bytes = parseAddress(base);
  if (!bytes || rest.length > 0) return undefined;
  const bits = bytes.length * 8;
  if (length !== undefined && !/^\d{1,3}$/.test(length)) return undefined;
  const prefix = length === undefined ? bits : Number(length);
  if (prefix > bits) return undefined;
  return { cidr: `${base}/${prefix}`, bytes, prefix };
}

/** A range the code itself names (built-in lists, tests); a typo there throws at load. */
export function cidrRange(cidr: string): CidrRange {
  const parsed = parseCidr(cidr);
  if (!parsed) throw new Error(`bad built-in range ${cidr}`);
  return parsed;
}

function inRange(bytes: Uint8Array, candidate: CidrRange): boolean {
  if (bytes.length !== candidate.bytes.length) return false;
  let bits = candidate.prefix;
  for (let index = 0; bits > 0; index += 1, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[index] ?? 0) & mask) !== ((candidate.bytes[index] ?? 0) & mask)) return false;
  }
  return true;
}

/** Cloud metadata endpoints live here; reaching them leaks instance credentials, so never allowed. */
const METADATA_RANGES = [cidrRange('169.254.0.0/16'), cidrRange('fd00:ec2::254/128')];

/** The operator's own networks: reachable only where the platform and the workspace allow them. */
const PRIVATE_RANGES = [
  cidrRange('10.0.0.0/8'),
  cidrRange('100.64.0.0/10'),
  cidrRange('127.0.0.0/8'),
  cidrRange('172.16.0.0/12'),
  cidrRange('192.168.0.0/16'),
  cidrRange('::1/128'),
  cidrRange('fc00::/7'),
  cidrRange('fe80::/10'),
  cidrRange('fec0::/10'),
  // Local-use NAT64 (RFC 8215): a translator of the operator's network, to whatever it chooses.
  cidrRange('64:ff9b:1::/48'),
];

/**
 * Addresses no outbound request has business with (RFC 6890 and its IPv6 siblings): "this
 * network" (0.0.0.0 and :: reach the local host), protocol assignments, the documentation and
 * benchmarking ranges, the 6to4 relay anycast, multicast, the old class E and broadcast, and
 * the deprecated IPv4-compatible IPv6 block. Refused under every policy but the allow-list.
 */
const RESERVED_RANGES = [
  cidrRange('0.0.0.0/8'),
  cidrRange('192.0.0.0/24'),
  cidrRange('192.0.2.0/24'),
  cidrRange('192.88.99.0/24'),
  cidrRange('198.18.0.0/15'),
  cidrRange('198.51.100.0/24'),
  cidrRange('203.0.113.0/24'),
  cidrRange('224.0.0.0/4'),
  cidrRange('255.255.255.255/32'),
  cidrRange('240.0.0.0/4'),
  cidrRange('::/128'),
  cidrRange('::/96'),
  cidrRange('100::/64'),
  cidrRange('2001:db8::/32'),
  cidrRange('3fff::/20'),
  cidrRange('ff00::/8'),
];

const IPV4_MAPPED = cidrRange('::ffff:0:0/96');
const NAT64_WELL_KNOWN = cidrRange('64:ff9b::/96');
const SIX_TO_FOUR = cidrRange('2002::/16');
const TEREDO = cidrRange('2001::/32');

/**
 * The IPv4 hosts an IPv6 address leads to: mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d)
 * carry it in the last 32 bits, 6to4 (2002:AABB:CCDD::) in bits 16 to 47, and Teredo
 * (2001:0:SSSS:SSSS:…:CCCC:CCCC) its server in bits 32 to 63 and its client, inverted, in the
 * last 32. Each is judged like the IPv4 address itself, or ::ffff:127.0.0.1 would pass as IPv6.
 */
function embeddedIPv4(bytes: Uint8Array): Uint8Array[] {
  if (bytes.length !== 16) return [];
  if (inRange(bytes, IPV4_MAPPED) || inRange(bytes, NAT64_WELL_KNOWN)) return [bytes.slice(12)];
  if (inRange(bytes, SIX_TO_FOUR)) return [bytes.slice(2, 6)];
  if (inRange(bytes, TEREDO)) return [bytes.slice(4, 8), bytes.slice(12).map((byte) => byte ^ 0xff)];
  return [];
}

type Refusal = Exclude<AddressVerdict, { allowed: true }>;

/** The verdict on one address (the literal one, or one embedded in it); undefined when allowed. */
function judge(bytes: Uint8Array, policy: AddressPolicy): Pick<Refusal, 'kind' | 'cidr'> | undefined {
  const metadata = METADATA_RANGES.find((candidate) => inRange(bytes, candidate));
  if (metadata) return { kind: 'metadata', cidr: metadata.cidr };
  if (policy.allowed?.some((candidate) => inRange(bytes, candidate))) return undefined;
  const privateRange = PRIVATE_RANGES.find((candidate) => inRange(bytes, candidate));
  if (privateRange)
    return policy.refusePrivateNetworks ? { kind: 'private', cidr: privateRange.cidr } : undefined;
  const reserved = RESERVED_RANGES.find((candidate) => inRange(bytes, candidate));
  return reserved ? { kind: 'reserved', cidr: reserved.cidr } : undefined;
}

/**
 * Decides whether an outbound request may open a socket to this literal address. Exported
 * apart from the resolver so every caller (and the tests) judge addresses with one rule set;
 * callers pass the address they will actually connect to.
 */
export function checkAddress(address: string, policy: AddressPolicy): AddressVerdict {
  const bytes = parseAddress(address);
  if (!bytes) return { allowed: false, kind: 'invalid', cidr: '', address };
  const own = judge(bytes, policy);
  if (own) return { allowed: false, ...own, address };
  for (const embedded of embeddedIPv4(bytes)) {
    const verdict = judge(embedded, policy);
    if (verdict) return { allowed: false, ...verdict, address, embedded: embedded.join('.') };
  }
  return { allowed: true };
}

/**
 * The policy of one workspace: the platform's, narrowed by the workspace's own
 * `refuse_private_networks`. A workspace can refuse what the platform allows, never the
 * reverse, so a tenant who owns a workspace cannot open the operator's network to itself.
 */
export function workspaceAddressPolicy(
  platform: PlatformAddressPolicy,
  workspaceRefusesPrivateNetworks: boolean,
): AddressPolicy {
  const refusedBy = !platform.allowPrivateNetworks
    ? 'platform'
    : workspaceRefusesPrivateNetworks
      ? 'workspace'
      : undefined;
  return {
    refusePrivateNetworks: refusedBy !== undefined,
    allowed: platform.allowed,
    ...(refusedBy ? { refusedBy } : {}),
  };
}

/**
 * What would allow a refused range, for the refusal's message: a workspace's own refusal is its
 * setting; the platform's, the operator's two variables (docs/outbound.md).
 */
function allowedBy(kind: Refusal['kind'], refusedBy: AddressPolicy['refusedBy']): string {
  if (kind === 'reserved')
    return ' (only the operator can admit it, with OUTBOUND_ALLOWED_CIDRS; see docs/outbound.md)';
  if (refusedBy === 'workspace')
    return " (a workspace admin allows private networks by turning the workspace's refuse_private_networks off: PUT /api/credentials/settings; see docs/outbound.md)";
  if (refusedBy === 'platform')
    return ' (the operator allows private networks with OUTBOUND_ALLOW_PRIVATE_NETWORKS=true, or this address alone with OUTBOUND_ALLOWED_CIDRS; see docs/outbound.md)';
  return " (allowed by the operator's OUTBOUND_ALLOW_PRIVATE_NETWORKS=true with the workspace's refuse_private_networks off, or by OUTBOUND_ALLOWED_CIDRS; see docs/outbound.md)";
}

function refusal(host: string, verdict: Refusal, policy: AddressPolicy): string {
  const subject =
    host === verdict.address ? `${host} is` : `${host} resolves to ${verdict.address}, which is`;
  const carried = verdict.embedded ? `${subject} an IPv6 form of ${verdict.embedded}, which is` : subject;
  if (verdict.kind === 'metadata') return `refused: ${carried} a link-local / cloud metadata address`;
  if (verdict.kind === 'invalid') return `refused: ${subject} not an IP address that can be checked`;
  const hint = allowedBy(verdict.kind, policy.refusedBy);
  if (verdict.kind === 'reserved') return `refused: ${carried} in the reserved range ${verdict.cidr}${hint}`;
  const who = policy.refusedBy === 'platform' ? 'this platform' : 'this workspace';
  return `refused: ${carried} in the private range ${verdict.cidr} and ${who} refuses private networks${hint}`;
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
    if (!verdict.allowed) return { ok: false, message: refusal(bare, verdict, policy) };
  }
  const first = addresses[0];
  if (!first) return { ok: false, message: `host name ${bare} could not be resolved` };
  return { ok: true, host: bare, address: first.address, family: first.family === 6 ? 6 : 4 };
}
