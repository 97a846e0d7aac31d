import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACTIVITY_KINDS } from '../../src/db/schema/activity.ts';

/**
 * docs/activity.md's table of event kinds is the list a client filters and subscribes by: it
 * names every kind of `ACTIVITY_KINDS`, and marks as reserved exactly those no module records.
 */

const root = path.resolve(import.meta.dirname, '../..');

/** The table's rows: the kinds of each, and whether the row says they are reserved. */
function documentedKinds(): { kinds: string[]; reserved: string[] } {
  const doc = fs.readFileSync(path.join(root, 'docs/activity.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Event kinds'), doc.indexOf('## Payload'));
  const kinds: string[] = [];
  const reserved: string[] = [];
  for (const row of section.split('\n').filter((line) => line.startsWith('| `'))) {
    const [, first, , recordedBy] = row.split('|');
    const names = [...(first ?? '').matchAll(/`([a-z_]+\.[a-z_]+)`/g)].map((m) => m[1] as string);
    kinds.push(...names);
    if (/^\s*reserved\b/.test(recordedBy ?? '')) reserved.push(...names);
  }
  return { kinds, reserved };
}

/** Every kind some module's code names as a string literal (what it records), tests aside. */
function kindsInCode(): Set<string> {
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
        if (file === path.join(root, 'src/db/schema/activity.ts')) continue; // the list itself
        const text = fs.readFileSync(file, 'utf8');
        for (const kind of ACTIVITY_KINDS) if (text.includes(`'${kind}'`)) found.add(kind);
      }
    }
  };
  walk(path.join(root, 'src'));
  return found;
}

describe('docs/activity.md event kinds', () => {
  it('names every kind the API knows, each once', () => {
    const { kinds } = documentedKinds();
    expect(new Set(kinds).size).toBe(kinds.length);
    expect([...kinds].sort()).toEqual([...ACTIVITY_KINDS].sort());
  });

  it('marks as reserved exactly the kinds no module records', () => {
    const recorded = kindsInCode();
    // The finder sees the literals modules record with (a sanity check of the scan itself).
    for (const kind of ['agent.created', 'workflow.completed', 'codegraph.indexed', 'playbook.mined']) {
      expect(recorded).toContain(kind);
    }
    const unrecorded = ACTIVITY_KINDS.filter((kind) => !recorded.has(kind));
    expect([...documentedKinds().reserved].sort()).toEqual([...unrecorded].sort());
  });
});
