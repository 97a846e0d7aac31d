import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkMigrations } from '../../src/cli/check-migrations.ts';

/**
 * The committed migrations hold the whole schema: drizzle-kit, generating against a copy of
 * them, finds nothing to add. A schema edit without `npm run db:generate` fails here (and so
 * in CI). drizzle-kit writes only into a temporary copy.
 */
describe('migrations', () => {
  it('hold every change of src/db/schema', { timeout: 180_000 }, async () => {
    const report = await checkMigrations();
    expect(report.added, report.output).toEqual([]);
    expect(report.output).toContain('No schema changes');
  });

  it('drift is found: without the newest migration, the check would add one', {
    timeout: 180_000,
  }, async () => {
    const report = await checkMigrations({
      prepare: (copy) => {
        const journalFile = path.join(copy, 'meta/_journal.json');
        const journal = JSON.parse(fs.readFileSync(journalFile, 'utf8')) as {
          entries: Array<{ idx: number; tag: string }>;
        };
        const newest = journal.entries.pop() as { idx: number; tag: string };
        fs.writeFileSync(journalFile, JSON.stringify(journal));
        fs.rmSync(path.join(copy, `${newest.tag}.sql`));
        fs.rmSync(path.join(copy, `meta/${String(newest.idx).padStart(4, '0')}_snapshot.json`));
      },
    });
    expect(
      report.added.some((file) => file.endsWith('.sql')),
      report.output,
    ).toBe(true);
  });
});
