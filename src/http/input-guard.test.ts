import { describe, expect, it } from 'vitest';
import { findUnstorableText, jsonDepthExceeds, textProblem } from './input-guard.ts';
import { isStorableDateTime } from './validation.ts';

describe('jsonDepthExceeds', () => {
  it('counts arrays and objects, not brackets inside strings or after escapes', () => {
    expect(jsonDepthExceeds('[[[]]]', 3)).toBe(false);
    expect(jsonDepthExceeds('[[[[]]]]', 3)).toBe(true);
    expect(jsonDepthExceeds('{"a":{"b":[1]}}', 3)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ a: '[[[[[[', b: '\\"[[[[' }), 1)).toBe(false);
    expect(jsonDepthExceeds(`${'['.repeat(100_000)}`, 64)).toBe(true);
  });
});

describe('findUnstorableText', () => {
  it('names values and keys with NUL or lone surrogates, keys shown escaped', () => {
    expect(textProblem('fine \ud83d\ude00')).toBeUndefined();
    expect(
      findUnstorableText(
        { a: ['ok', 'x\u0000'], 'k\u0000': 1, s: '\udc00', nested: { '\ud800': null } },
        'body',
      ),
    ).toEqual([
      { field: 'body.a.1', message: 'must not contain the NUL character (U+0000)' },
      { field: 'body.k\\u0000', message: '(a key) must not contain the NUL character (U+0000)' },
      { field: 'body.s', message: 'must not contain unpaired UTF-16 surrogates (U+D800 to U+DFFF)' },
      {
        field: 'body.nested.\\ud800',
        message: '(a key) must not contain unpaired UTF-16 surrogates (U+D800 to U+DFFF)',
      },
    ]);
  });
});

describe('isStorableDateTime', () => {
  it('accepts RFC 3339 instants in years 1 to 9999 and refuses what Date or PostgreSQL cannot hold', () => {
    expect(isStorableDateTime('2030-06-30T23:59:59Z')).toBe(true);
    expect(isStorableDateTime('0001-01-01T00:00:00Z')).toBe(true);
    expect(isStorableDateTime('9999-12-31T23:59:59+05:00')).toBe(true);
    expect(isStorableDateTime('2030-06-30T23:59:60Z')).toBe(false);
    expect(isStorableDateTime('0000-01-01T00:00:00Z')).toBe(false);
    expect(isStorableDateTime('9999-12-31T23:59:59-01:00')).toBe(false);
    expect(isStorableDateTime('2030-02-30T00:00:00Z')).toBe(false);
    expect(isStorableDateTime('tomorrow')).toBe(false);
  });
});
