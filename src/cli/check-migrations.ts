/**
 * `npm run db:check`: fails when the schema (src/db/schema/) has changes that no committed
 * migration (src/db/migrations/) holds, so a schema edit without `npm run db:generate` cannot
 * land. drizzle-kit generates into a copy of the migrations in a temporary directory; the
 * repository is never written. Also run by tests/db/migrations-drift.test.ts, so `npm test`
 * (and CI) fails on drift.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const root = path.resolve(import.meta.dirname, '../..');
const MIGRATIONS = path.join(root, 'src/db/migrations');
const SCHEMA = './src/db/schema/index.ts';

/** What a drift check found: the migration files drizzle-kit would add (none when in step). */
export interface DriftReport {
  added: string[];
  /** drizzle-kit's own output, for the failure message. */
  output: string;
}

/**
 * Generates a migration from the schema against a copy of `migrations` (default: the
 * committed ones) and answers the files it would add. `prepare` may alter the copy first (the
 * test removes the newest migration from it, to see a drift found).
 */
export async function checkMigrations(
  options: { migrations?: string; prepare?: (copy: string) => void } = {},
): Promise<DriftReport> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-check-'));
  try {
    const copy = path.join(scratch, 'migrations');
    fs.cpSync(options.migrations ?? MIGRATIONS, copy, { recursive: true });
    options.prepare?.(copy);
    const before = new Set(listFiles(copy));
    // drizzle-kit takes `--out` relative to the working directory.
    const out = path.relative(root, copy);
    const { stdout, stderr } = await promisify(execFile)(
      path.join(root, 'node_modules/.bin/drizzle-kit'),
      ['generate', '--dialect', 'postgresql', '--schema', SCHEMA, '--out', out],
      { cwd: root, env: { ...process.env, NO_COLOR: '1' }, maxBuffer: 16 * 1024 * 1024 },
    );
    return { added: listFiles(copy).filter((file) => !before.has(file)), output: `${stdout}${stderr}` };
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

function listFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

if (import.meta.main) {
  const report = await checkMigrations();
  if (report.added.length > 0) {
    process.stderr.write(
      `db:check: the schema has changes no committed migration holds; run \`npm run db:generate\` and commit ${report.added.join(', ')}\n${report.output}`,
    );
    process.exit(1);
  }
  process.stdout.write('db:check: the committed migrations match the schema\n');
}
