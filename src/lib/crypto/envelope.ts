import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * The vault's envelope encryption.
 *
 * master key (ENCRYPTION_KEY, and retired ones) --HKDF "wrap"--> wrapping key
 *   wraps each workspace's random 256-bit data key, bound to the workspace id.
 * workspace data key --HKDF "credential-data"--> encryption key of that workspace's
 *   credential blobs, each bound to workspace id, credential id and type id;
 * workspace data key --HKDF "audit-chain"--> HMAC key of that workspace's audit chains.
 *
 * Rotating the master key only re-wraps data keys, so blobs and audit chains stay valid.
 * Every ciphertext is AES-256-GCM with a fresh 96-bit nonce and a 128-bit tag.
 */

export const FORMAT_VERSION = 'v1';
const ALGORITHM = 'aes-256-gcm';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const INFO = {
  keyId: 'agent-platform/v1/key-id',
  wrap: 'agent-platform/v1/wrap-data-key',
  credentialData: 'agent-platform/v1/credential-data',
  auditChain: 'agent-platform/v1/audit-chain',
};

/** Why a value could not be opened; never carries key material or plaintext. */
export class EnvelopeError extends Error {
  readonly reason: 'malformed' | 'unknown_key' | 'authentication_failed';

  constructor(reason: EnvelopeError['reason'], message: string) {
    super(message);
    this.name = 'EnvelopeError';
    this.reason = reason;
  }
}

const derive = (key: Buffer, info: string, length = KEY_BYTES): Buffer =>
  Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), info, length));

/** A public, stable name for a master key: 16 hex characters derived from it, revealing nothing. */
export const keyIdOf = (masterKey: Buffer): string => derive(masterKey, INFO.keyId, 8).toString('hex');

/**
 * The master-key format: exactly 32 bytes encoded as base64 (`openssl rand -base64 32`).
 * The one definition, used by the configuration check and by `parseMasterKey`.
 */
export const isMasterKey = (text: string): boolean =>
  /^[A-Za-z0-9+/]+={0,2}$/.test(text.trim()) && Buffer.from(text.trim(), 'base64').length === KEY_BYTES;

/** Decodes a base64 master key, insisting on exactly 32 bytes. */
export function parseMasterKey(base64: string): Buffer {
  if (!isMasterKey(base64)) throw new Error('a master key must be exactly 32 bytes encoded as base64');
  return Buffer.from(base64.trim(), 'base64');
}

function seal(key: Buffer, plaintext: Buffer, aad: string): { nonce: Buffer; sealed: Buffer } {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const sealed = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { nonce, sealed };
}

function open(key: Buffer, nonce: Buffer, sealed: Buffer, aad: string): Buffer {
  if (nonce.length !== NONCE_BYTES || sealed.length < TAG_BYTES) {
    throw new EnvelopeError('malformed', 'the stored value is truncated');
  }
  const decipher = createDecipheriv(ALGORITHM, key, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new EnvelopeError(
      'authentication_failed',
      'the stored value failed authentication (tampered, moved or wrong key)',
    );
  }
}

const b64 = (buffer: Buffer) => buffer.toString('base64url');
const unb64 = (text: string) => Buffer.from(text, 'base64url');

/**
 * The configured master keys: the current one wraps, any of them unwraps, chosen by the
 * key id written in the wrapped value.
 */
export class Keyring {
  readonly currentId: string;
  private readonly wrappingKeys = new Map<string, Buffer>();

  constructor(current: Buffer, previous: Buffer[] = []) {
    this.currentId = keyIdOf(current);
    for (const key of [current, ...previous]) this.wrappingKeys.set(keyIdOf(key), derive(key, INFO.wrap));
  }

  /** Ids of every configured key, current first. */
  get keyIds(): string[] {
    return [...this.wrappingKeys.keys()];
  }

  has(keyId: string): boolean {
    return this.wrappingKeys.has(keyId);
  }

  /** `v1.<key id>.<nonce>.<ciphertext+tag>`, bound to the workspace it belongs to. */
  wrapDataKey(dataKey: Buffer, workspaceId: string): string {
    const key = this.wrappingKeys.get(this.currentId) as Buffer;
    const { nonce, sealed } = seal(key, dataKey, wrapAad(workspaceId));
    return [FORMAT_VERSION, this.currentId, b64(nonce), b64(sealed)].join('.');
  }

  unwrapDataKey(wrapped: string, workspaceId: string): Buffer {
    const parts = wrapped.split('.');
    if (parts.length !== 4 || parts[0] !== FORMAT_VERSION) {
      throw new EnvelopeError('malformed', 'unknown format of a wrapped workspace key');
    }
    const [, keyId, nonce, sealed] = parts as [string, string, string, string];
    const key = this.wrappingKeys.get(keyId);
    if (!key)
      throw new EnvelopeError(
        'unknown_key',
        `workspace key is wrapped by master key ${keyId}, which is not configured`,
      );
    const dataKey = open(key, unb64(nonce), unb64(sealed), wrapAad(workspaceId));
    if (dataKey.length !== KEY_BYTES)
      throw new EnvelopeError('malformed', 'a workspace key has the wrong length');
    return dataKey;
  }
}

/** The key id named by a wrapped workspace key, without opening it. */
export const wrappedKeyId = (wrapped: string): string | undefined => wrapped.split('.')[1];

const wrapAad = (workspaceId: string) => `workspace-key|${FORMAT_VERSION}|${workspaceId}`;

/** A fresh random workspace data key. */
export const generateDataKey = (): Buffer => randomBytes(KEY_BYTES);

/** The per-purpose keys of one workspace, derived from its data key. */
export interface WorkspaceKeys {
  credentialKey: Buffer;
  auditKey: Buffer;
}

export const deriveWorkspaceKeys = (dataKey: Buffer): WorkspaceKeys => ({
  credentialKey: derive(dataKey, INFO.credentialData),
  auditKey: derive(dataKey, INFO.auditChain),
});

/** Where a credential blob belongs; a blob copied anywhere else does not open. */
export interface BlobBinding {
  workspaceId: string;
  credentialId: number;
  typeId: number;
}

const blobAad = (b: BlobBinding) =>
  `credential|${FORMAT_VERSION}|${b.workspaceId}|${b.credentialId}|${b.typeId}`;

/** `v1.<nonce>.<ciphertext+tag>` of the JSON of `data`. */
export function sealCredential(key: Buffer, data: unknown, binding: BlobBinding): string {
  const { nonce, sealed } = seal(key, Buffer.from(JSON.stringify(data), 'utf8'), blobAad(binding));
  return [FORMAT_VERSION, b64(nonce), b64(sealed)].join('.');
}

export function openCredential<T = unknown>(key: Buffer, blob: string, binding: BlobBinding): T {
  const parts = blob.split('.');
  if (parts.length !== 3 || parts[0] !== FORMAT_VERSION) {
    throw new EnvelopeError('malformed', 'unknown format of an encrypted credential');
  }
  const plaintext = open(key, unb64(parts[1] as string), unb64(parts[2] as string), blobAad(binding));
  try {
    return JSON.parse(plaintext.toString('utf8')) as T;
  } catch {
    throw new EnvelopeError('malformed', 'an encrypted credential does not hold JSON');
  }
}
