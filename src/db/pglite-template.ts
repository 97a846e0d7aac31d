import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';

/**
 * An empty PGlite cluster made once at install time (`npm ci` runs `npm run db:template`), so a
 * fresh DATA_DIR is unpacked (~1 s) instead of initialised by initdb in WebAssembly (~2.6 s).
 * It lives under node_modules, so it is remade with the PGlite version that reads it.
 */
export const templateFile = fileURLToPath(
  new URL('../../node_modules/.cache/agent-platform/pglite-template.tar.gz', import.meta.url),
);

/** Writes the template (an initdb-fresh cluster, nothing else in it). */
export async function writePgliteTemplate(file = templateFile): Promise<void> {
  const seed = await PGlite.create();
  try {
    const tarball = await seed.dumpDataDir('gzip');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const partial = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(partial, Buffer.from(await tarball.arrayBuffer()));
    fs.renameSync(partial, file);
  } finally {
    await seed.close();
  }
}

/**
 * The template to unpack into `directory`, or undefined when the directory already holds a
 * cluster or no template was made (`npm ci --ignore-scripts`): PGlite then runs initdb itself.
 */
export function pgliteTemplateFor(directory: string, file = templateFile): Blob | undefined {
  if (fs.existsSync(path.join(directory, 'PG_VERSION')) || !fs.existsSync(file)) return undefined;
  return new Blob([fs.readFileSync(file)], { type: 'application/x-gzip' });
}
