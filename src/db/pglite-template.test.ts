import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openDatabase, pgliteDirectory } from './client.ts';
import { migrateDatabase, migrationsFolder } from './migrate.ts';
import { copyPgliteTemplate, pgliteTemplateFor, writePgliteTemplate } from './pglite-template.ts';

// initdb and every migration in WebAssembly: slow on a busy 2-core machine.
vi.setConfig({ testTimeout: 180_000 });
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'pglite-template-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

const root = path.join(scratch, 'template');
const committed = readMigrationFiles({ migrationsFolder }).map((migration) => migration.hash);
const config = (dataDir: string) => ({
  kind: 'pglite' as const,
  dataDir,
  queueTimeoutMs: 10_000,
  queueMax: 10,
});

/** The migrations recorded as applied in the cluster of `dataDir`, after the service's migrate step. */
async function appliedAfterStart(dataDir: string): Promise<{ hashes: string[]; types: number }> {
  const database = await openDatabase(config(dataDir));
  try {
    await migrateDatabase(database);
    if (!('pglite' in database.raw)) throw new Error('not PGlite');
    const { pglite } = database.raw;
    const applied = await pglite.query<{ hash: string }>(
      'select hash from drizzle.__drizzle_migrations order by created_at, id',
    );
    const types = await pglite.query<{ n: number }>('select count(*)::int as n from credential_types');
    return { hashes: applied.rows.map((row) => row.hash), types: types.rows[0]?.n ?? 0 };
  } finally {
    await database.close();
  }
}

describe('the PGlite template', () => {
  it('starts a fresh DATA_DIR as a migrated cluster, and is ignored once the directory has one', async () => {
    expect(pgliteTemplateFor(path.join(scratch, 'none'), root)).toBeUndefined();
    await writePgliteTemplate(root);
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'template.json'), 'utf8'));
    expect(manifest.migrations).toEqual(committed);

    const dataDir = path.join(scratch, 'data');
    const directory = pgliteDirectory(dataDir);
    expect(pgliteTemplateFor(directory, root)).toBe(path.join(root, 'pgdata'));
    expect(copyPgliteTemplate(directory, root)).toBe(true);
    expect(fs.existsSync(path.join(directory, 'PG_VERSION'))).toBe(true);
    // Nothing left to migrate, and the seeded rows are there.
    const first = await appliedAfterStart(dataDir);
    expect(first.hashes).toEqual(committed);
    expect(first.types).toBeGreaterThan(0);

    // A directory with a cluster is left alone.
    expect(pgliteTemplateFor(directory, root)).toBeUndefined();
    expect(copyPgliteTemplate(directory, root)).toBe(false);
  });

  it('is used when its migrations are the first of the committed ones, else ignored', async () => {
    const manifestFile = path.join(root, 'template.json');
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    const fresh = path.join(scratch, 'fresh', 'pgdata');

    // An older template (made before the last migration): still a prefix, the migrator adds the rest.
    fs.writeFileSync(manifestFile, JSON.stringify({ migrations: committed.slice(0, -1) }));
    expect(pgliteTemplateFor(fresh, root)).toBe(path.join(root, 'pgdata'));

    // A template holding a migration that is not committed (another branch, an edited file): ignored.
    fs.writeFileSync(
      manifestFile,
      JSON.stringify({ migrations: [...committed.slice(0, -1), 'f'.repeat(64)] }),
    );
    expect(pgliteTemplateFor(fresh, root)).toBeUndefined();
    fs.writeFileSync(manifestFile, JSON.stringify({ migrations: [...committed, 'f'.repeat(64)] }));
    expect(pgliteTemplateFor(fresh, root)).toBeUndefined();
    expect(copyPgliteTemplate(fresh, root)).toBe(false);
    expect(fs.existsSync(fresh)).toBe(false);

    fs.writeFileSync(manifestFile, JSON.stringify(manifest));
    expect(pgliteTemplateFor(fresh, root)).toBe(path.join(root, 'pgdata'));
  });
});
