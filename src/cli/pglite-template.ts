/**
 * `npm run db:template` (run by `npm ci` and `npm install` as `postinstall`): makes the empty
 * PGlite cluster that a fresh DATA_DIR starts from (src/db/pglite-template.ts).
 */
import { templateFile, writePgliteTemplate } from '../db/pglite-template.ts';

try {
  await writePgliteTemplate();
  process.stdout.write(`wrote ${templateFile}\n`);
} catch (error) {
  // Never fail an install for it: without a template, a fresh DATA_DIR is initialised by initdb.
  process.stderr.write(`no PGlite template (a fresh DATA_DIR will run initdb): ${String(error)}\n`);
}
