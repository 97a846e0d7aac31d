import { createHash, randomBytes } from 'node:crypto';

/** A freshly minted API key: the secret shown once, and what is stored. */
export interface MintedApiKey {
  key: string;
  prefix: string;
  hash: string;
}

const KEY_PATTERN = /^apk_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43}$/;

/**
 * Mints `apk_<8-char id>_<256-bit secret>`. The key has full entropy, so a plain SHA-256
 * is the right stored form (a slow password hash would only slow every request).
 */
export function mintApiKey(): MintedApiKey {
  const id = randomBytes(6).toString('base64url').replace(/[-_]/g, 'x').slice(0, 8);
  const prefix = `apk_${id}`;
  const key = `${prefix}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix, hash: hashApiKey(key) };
}

/** The stored form of a key. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** Cheap shape check, so garbage never reaches the database. */
export const looksLikeApiKey = (key: string): boolean => KEY_PATTERN.test(key);
