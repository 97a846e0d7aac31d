import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { migrationsFolder } from './migrate.ts';

/**
 * A migrated PGlite cluster made once at install time (`npm ci` runs `npm run db:template`), so a
 * fresh DATA_DIR starts as a copy of it: ~40 MB of files copied (~0.5-1 s of CPU) instead of an
 * initdb-only cluster unpacked by PGlite (~2 s) and then every migration run (~3.5-5 s of CPU;
 * bench/RESULTS.md, "Start-up and memory, round 2"). It lives under node_modules, so it is
 * remade with the PGlite version that reads it. Layout: `<root>/pgdata` (the cluster, closed
 * cleanly) and `<root>/template.json` (the hashes of the migrations it holds, in order).
 */
export const templateRoot = fileURLToPath(
  new URL('../../node_modules/.cache/agent-platform/pglite-template', import.meta.url),
);

interface TemplateManifest {
  /** drizzle's hash of each migration applied to the template's cluster, oldest first. */
  migrations: string[];
}

const clusterOf = (root: string) => path.join(root, 'pgdata');
const manifestOf = (root: string) => path.join(root, 'template.json');

/**
 * Writes the template: a new cluster (initdb), every committed migration applied, closed.
 * Built beside `root` and renamed into place, so a start never copies a half-written one.
 */
export async function writePgliteTemplate(root = templateRoot): Promise<void> {
  // Loaded here: client.ts loads this module with the PGlite driver.
  const [{ openDatabase }, { migrateDatabase }] = await Promise.all([
    import('./client.ts'),
    import('./migrate.ts'),
  ]);
  fs.mkdirSync(path.dirname(root), { recursive: true });
  const building = `${root}.${process.pid}.tmp`;
  fs.rmSync(building, { recursive: true, force: true });
  try {
    const database = await openDatabase(
      { kind: 'pglite', dataDir: building, queueTimeoutMs: 60_000, queueMax: 1 },
      {},
      { template: false },
    );
    let hashes: string[];
    try {
      await migrateDatabase(database);
      if (!('pglite' in database.raw)) throw new Error('not PGlite');
      const { rows } = await database.raw.pglite.query<{ hash: string }>(
        'select hash from drizzle.__drizzle_migrations order by created_at, id',
      );
      hashes = rows.map((row) => row.hash);
    } finally {
      await database.close();
    }
    const manifest: TemplateManifest = { migrations: hashes };
    fs.writeFileSync(manifestOf(building), JSON.stringify(manifest));
    const old = `${root}.${process.pid}.old`;
    if (fs.existsSync(root)) fs.renameSync(root, old);
    fs.renameSync(building, root);
    fs.rmSync(old, { recursive: true, force: true });
    // The template of earlier versions: an initdb-only cluster as a tarball.
    fs.rmSync(path.join(path.dirname(root), 'pglite-template.tar.gz'), { force: true });
  } finally {
    fs.rmSync(building, { recursive: true, force: true });
  }
}

/**
 * The template's cluster when `directory` should start from it: the directory holds no cluster
 * yet, and the template's migrations are the first of the committed ones (the migrator then
 * applies the rest). Undefined otherwise, or when no template was made (`npm ci
 * --ignore-scripts`): PGlite then runs initdb and every migration runs.
 */
export function pgliteTemplateFor(directory: string, root = templateRoot): string | undefined {
  if (fs.existsSync(path.join(directory, 'PG_VERSION'))) return undefined;
  let manifest: TemplateManifest;
  try {
    manifest = JSON.parse(fs.readFileSync(manifestOf(root), 'utf8')) as TemplateManifest;
  } catch {
    return undefined;
  }
  const committed = readMigrationFiles({ migrationsFolder }).map((migration) => migration.hash);
  const isPrefix =
    Array.isArray(manifest.migrations) &&
    manifest.migrations.length <= committed.length &&
    manifest.migrations.every((hash, index) => hash === committed[index]);
  return isPrefix && fs.existsSync(path.join(clusterOf(root), 'PG_VERSION')) ? clusterOf(root) : undefined;
}

/**
 * Starts `directory` (absent or empty) as a copy of the template's cluster when
 * `pgliteTemplateFor` allows it; returns whether it did. The copy is made beside it and renamed,
 * so a start that dies half-way leaves no half cluster behind.
 */
export function copyPgliteTemplate(directory: string, root = templateRoot): boolean {
  const source = pgliteTemplateFor(directory, root);
  if (!source) return false;
  if (fs.existsSync(directory)) {
    if (fs.readdirSync(directory).length > 0) return false;
    fs.rmdirSync(directory);
  }
  const partial = `${directory}.${process.pid}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  try {
    fs.cpSync(source, partial, { recursive: true });
    fs.renameSync(partial, directory);
  } finally {
    fs.rmSync(partial, { recursive: true, force: true });
  }
  return true;
}
