import { describe, expect, it } from 'vitest';
import { hashApiKey, looksLikeApiKey, mintApiKey } from './api-key.ts';

describe('API keys', () => {
  it('mints distinct keys that start with their visible prefix and match their hash', () => {
    const keys = Array.from({ length: 100 }, mintApiKey);
    expect(new Set(keys.map((k) => k.key)).size).toBe(100);
    for (const minted of keys) {
      expect(minted.key.startsWith(`${minted.prefix}_`)).toBe(true);
      expect(looksLikeApiKey(minted.key)).toBe(true);
      expect(minted.hash).toBe(hashApiKey(minted.key));
      expect(minted.hash).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('rejects strings of the wrong shape before any lookup', () => {
    expect(looksLikeApiKey('')).toBe(false);
    expect(looksLikeApiKey('apk_short_x')).toBe(false);
    expect(looksLikeApiKey(`${mintApiKey().key}x`)).toBe(false);
  });
});
