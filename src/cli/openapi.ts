/**
 * `npm run openapi`: writes the OpenAPI document of the routes to `openapi.json` at the
 * repository root. The app is built against a throwaway embedded database in development
 * mode (the document does not depend on data), so the command needs nothing configured;
 * a test fails when the committed file drifts from the routes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp } from '../app.ts';
import { boot } from '../boot.ts';
import { loadConfig } from '../config.ts';
import { renderOpenApi } from '../http/openapi.ts';

const OUTPUT = path.resolve(import.meta.dirname, '../../openapi.json');

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-platform-openapi-'));
  try {
    const config = loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
    const { database, services } = await boot(config);
    try {
      const app = await buildApp(services);
      await app.ready();
      fs.writeFileSync(OUTPUT, renderOpenApi(app));
      await app.close();
    } finally {
      await database.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  process.stdout.write(`wrote ${path.relative(process.cwd(), OUTPUT) || OUTPUT}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`openapi: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
