import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type ChainLink,
  canonicalJson,
  chainVerifier,
  hmacDigest,
  linkAfter,
  sha256Digest,
} from './hash-chain.ts';

describe('canonicalJson', () => {
  it('sorts keys at every level, writes dates as ISO strings and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 2 }], c: new Date(0) }, z: undefined })).toBe(
      '{"a":{"c":"1970-01-01T00:00:00.000Z","d":[2,{"x":2,"y":1}]},"b":1}',
    );
    expect(canonicalJson([undefined, null])).toBe('[null,null]');
  });
});

describe('digests', () => {
  const fields = { action: 'accessed', metadata: { fields: ['password'] } };

  it('keep the stored layout: digest(prev_hash "\\n" canonical(fields))', () => {
    const key = randomBytes(32);
    const input = `prev\n${canonicalJson(fields)}`;
    expect(sha256Digest('prev', fields)).toBe(createHash('sha256').update(input).digest('hex'));
    expect(hmacDigest(key)('prev', fields)).toBe(createHmac('sha256', key).update(input).digest('hex'));
  });

  it('change with the fields, the previous hash or the key, not with key order', () => {
    const key = randomBytes(32);
    const hash = hmacDigest(key)('', fields);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hmacDigest(key)('', { metadata: { fields: ['password'] }, action: 'accessed' })).toBe(hash);
    expect(hmacDigest(key)('', { ...fields, action: 'updated' })).not.toBe(hash);
    expect(hmacDigest(key)('x', fields)).not.toBe(hash);
    expect(hmacDigest(randomBytes(32))('', fields)).not.toBe(hash);
    expect(sha256Digest('', fields)).not.toBe(hash);
  });
});

describe('chainVerifier', () => {
  type Row = ChainLink & { id: number; text: string };
  const build = (texts: string[]): Row[] => {
    let prev = '';
    return texts.map((text, index) => {
      const link = linkAfter(sha256Digest, prev, { text });
      prev = link.hash;
      return { id: index + 1, text, ...link };
    });
  };
  const verify = (rows: Row[]) => {
    const verifier = chainVerifier<Row>(sha256Digest, (row) => ({ text: row.text }));
    for (const row of rows) {
      const broken = verifier.check(row);
      if (broken) return { broken, id: row.id, checked: verifier.checked };
    }
    return { head: verifier.head, checked: verifier.checked };
  };

  it('accepts an intact chain and ends at its last hash', () => {
    const rows = build(['a', 'b', 'c']);
    expect(verify(rows)).toEqual({ head: rows[2]?.hash, checked: 3 });
    expect(verify([])).toEqual({ head: '', checked: 0 });
  });

  it('names an altered record', () => {
    const rows = build(['a', 'b', 'c']);
    rows[1] = { ...(rows[1] as Row), text: 'B' };
    expect(verify(rows)).toEqual({ broken: 'content does not match its hash', id: 2, checked: 1 });
  });

  it('names the record after a removed one', () => {
    const rows = build(['a', 'b', 'c']);
    expect(verify([rows[0] as Row, rows[2] as Row])).toEqual({
      broken: 'prev_hash does not match the record before it',
      id: 3,
      checked: 1,
    });
  });
});
