import type { Config } from './config.ts';
import { type Database, openDatabase } from './db/client.ts';
import { migrateDatabase } from './db/migrate.ts';
import { DEV_USER_ID, writeDevIdentity } from './modules/identity/dev-identity.ts';
import { createServices, type Services } from './services.ts';

/**
 * Opens and migrates the database and wires the services: what the server and the
 * commands share. In development mode it also makes sure the default owner has a
 * workspace and remembers it for `npm run dev-token`.
 */
export async function boot(config: Config): Promise<{ database: Database; services: Services }> {
  const database = await openDatabase(config.database);
  try {
    await migrateDatabase(database);
    const services = await createServices(config, database);
    if (config.auth.mode === 'dev') {
      const workspace = await services.workspaces.ensureDefaultWorkspace(DEV_USER_ID);
      writeDevIdentity(config.dataDir, { user_id: DEV_USER_ID, workspace_id: workspace.id });
    }
    return { database, services };
  } catch (error) {
    await database.close();
    throw error;
  }
}
