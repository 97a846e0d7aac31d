/**
 * `npm run db:template` (run by `npm ci` and `npm install` as `postinstall`): makes the migrated
 * PGlite cluster that a fresh DATA_DIR starts from (src/db/pglite-template.ts).
 */
import { prepareModuleLoading } from '../lib/module-loading.ts';

prepareModuleLoading();
const { templateRoot, writePgliteTemplate } = await import('../db/pglite-template.ts');
try {
  await writePgliteTemplate();
  process.stdout.write(`wrote ${templateRoot}\n`);
} catch (error) {
  // Never fail an install for it: without a template, a fresh DATA_DIR runs initdb and every migration.
  process.stderr.write(
    `no PGlite template (a fresh DATA_DIR will run initdb and every migration): ${String(error)}\n`,
  );
}
