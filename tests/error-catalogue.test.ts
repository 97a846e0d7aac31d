import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/errors.ts';

/** The README's "Error codes" table: every `| `code` | status | ... |` row of that section. */
function documentedCodes(): Record<string, number> {
  const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../README.md'), 'utf8');
  const section = /^## Error codes\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? '';
  return Object.fromEntries(
    [...section.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((match) => [match[1], Number(match[2])]),
  );
}

describe('error catalogue', () => {
  it('documents every code with its status, and nothing that is not a code', () => {
    const documented = documentedCodes();
    expect(Object.keys(documented).length).toBeGreaterThan(10);
    expect(documented).toEqual({ ...ERROR_CODES });
  });

  it('uses no code in src/ outside the catalogue', () => {
    const src = path.resolve(import.meta.dirname, '../src');
    const files = fs.readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const used = new Set<string>();
    for (const file of files) {
      const text = fs.readFileSync(path.join(src, file), 'utf8');
      for (const match of text.matchAll(/\bcode: '([a-z_]+)'/g)) used.add(match[1] as string);
    }
    expect([...used].filter((code) => !(code in ERROR_CODES))).toEqual([]);
  });
});
