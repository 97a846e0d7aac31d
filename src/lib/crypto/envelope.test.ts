import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  deriveWorkspaceKeys,
  EnvelopeError,
  generateDataKey,
  Keyring,
  keyIdOf,
  openCredential,
  parseMasterKey,
  sealCredential,
  wrappedKeyId,
} from './envelope.ts';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const ws = '2f1c8a4e-3b8e-4c55-9d0b-6f0a1b2c3d4e';
const binding = { workspaceId: ws, credentialId: 7, typeId: 3 };

/** Flips one bit of the base64url part `index` of a dotted value. */
function flip(value: string, index: number, byte: number): string {
  const parts = value.split('.');
  const bytes = Buffer.from(parts[index] as string, 'base64url');
  bytes[byte % bytes.length] = (bytes[byte % bytes.length] as number) ^ 0x01;
  parts[index] = bytes.toString('base64url');
  return parts.join('.');
}

describe('workspace key wrapping', () => {
  it('round-trips under the current key and names it', () => {
    const keyring = new Keyring(k1);
    const dataKey = generateDataKey();
    const wrapped = keyring.wrapDataKey(dataKey, ws);
    expect(wrapped.startsWith(`v1.${keyIdOf(k1)}.`)).toBe(true);
    expect(wrappedKeyId(wrapped)).toBe(keyring.currentId);
    expect(keyring.unwrapDataKey(wrapped, ws).equals(dataKey)).toBe(true);
  });

  it('binds the wrapped key to its workspace', () => {
    const keyring = new Keyring(k1);
    const wrapped = keyring.wrapDataKey(generateDataKey(), ws);
    expect(() => keyring.unwrapDataKey(wrapped, 'another-workspace')).toThrow(EnvelopeError);
  });

  it('reads values of retired keys and refuses unknown ones', () => {
    const old = new Keyring(k1);
    const dataKey = generateDataKey();
    const wrapped = old.wrapDataKey(dataKey, ws);
    const rotated = new Keyring(k2, [k1]);
    expect(rotated.unwrapDataKey(wrapped, ws).equals(dataKey)).toBe(true);
    const rewrapped = rotated.wrapDataKey(dataKey, ws);
    expect(wrappedKeyId(rewrapped)).toBe(keyIdOf(k2));
    const dropped = new Keyring(k2);
    expect(dropped.unwrapDataKey(rewrapped, ws).equals(dataKey)).toBe(true);
    const error = (() => {
      try {
        dropped.unwrapDataKey(wrapped, ws);
      } catch (e) {
        return e as EnvelopeError;
      }
    })();
    expect(error?.reason).toBe('unknown_key');
    expect(error?.message).toContain(keyIdOf(k1));
  });

  it('gives distinct keys distinct stable ids that reveal nothing of the key', () => {
    expect(keyIdOf(k1)).toBe(keyIdOf(Buffer.from(k1)));
    expect(keyIdOf(k1)).not.toBe(keyIdOf(k2));
    expect(keyIdOf(k1)).toMatch(/^[0-9a-f]{16}$/);
    expect(k1.toString('hex')).not.toContain(keyIdOf(k1));
  });

  it('accepts only 32-byte base64 master keys', () => {
    expect(parseMasterKey(k1.toString('base64')).equals(k1)).toBe(true);
    expect(() => parseMasterKey(randomBytes(16).toString('base64'))).toThrow('32 bytes');
    expect(() => parseMasterKey('not base64!')).toThrow('32 bytes');
  });
});

describe('credential blobs', () => {
  const { credentialKey } = deriveWorkspaceKeys(generateDataKey());
  const data = { host: 'db', password: 'canary-Secret-123', port: 5432 };

  it('round-trips, with a fresh nonce every time', () => {
    const a = sealCredential(credentialKey, data, binding);
    const b = sealCredential(credentialKey, data, binding);
    expect(a).not.toBe(b);
    expect(a.split('.')[1]).not.toBe(b.split('.')[1]);
    expect(openCredential(credentialKey, a, binding)).toEqual(data);
    expect(a).not.toContain('canary');
  });

  it('fails on any flipped byte of nonce, ciphertext or tag', () => {
    const blob = sealCredential(credentialKey, data, binding);
    const sealedLength = Buffer.from(blob.split('.')[2] as string, 'base64url').length;
    for (let byte = 0; byte < 12; byte++) {
      expect(() => openCredential(credentialKey, flip(blob, 1, byte), binding)).toThrow(EnvelopeError);
    }
    for (let byte = 0; byte < sealedLength; byte++) {
      expect(() => openCredential(credentialKey, flip(blob, 2, byte), binding)).toThrow(EnvelopeError);
    }
  });

  it('does not open in another row, workspace or type, or under another key', () => {
    const blob = sealCredential(credentialKey, data, binding);
    for (const other of [
      { ...binding, credentialId: 8 },
      { ...binding, workspaceId: 'other' },
      { ...binding, typeId: 4 },
    ]) {
      expect(() => openCredential(credentialKey, blob, other)).toThrow('failed authentication');
    }
    const { credentialKey: otherKey } = deriveWorkspaceKeys(generateDataKey());
    expect(() => openCredential(otherKey, blob, binding)).toThrow(EnvelopeError);
    expect(() => openCredential(credentialKey, 'v0.a.b', binding)).toThrow('unknown format');
  });

  it('derives separate keys per purpose', () => {
    const keys = deriveWorkspaceKeys(generateDataKey());
    expect(keys.auditKey.equals(keys.credentialKey)).toBe(false);
  });
});
