import { describe, expect, it } from 'vitest';
import { LruCache } from './lru-cache.ts';

describe('LruCache', () => {
  it('returns values until they expire', () => {
    let now = 1000;
    const cache = new LruCache<string, number>(10, () => now);
    cache.set('a', 1, 2000);
    expect(cache.get('a')).toBe(1);
    now = 2000;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('evicts the least recently used entry when full', () => {
    const cache = new LruCache<string, number>(2, () => 0);
    cache.set('a', 1, 10);
    cache.set('b', 2, 10);
    cache.get('a');
    cache.set('c', 3, 10);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
  });

  it('forgets deleted entries', () => {
    const cache = new LruCache<string, number>(2, () => 0);
    cache.set('a', 1, 10);
    cache.delete('a');
    expect(cache.get('a')).toBeUndefined();
  });
});
