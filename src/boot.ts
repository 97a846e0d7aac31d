import type { Config } from './config.ts';
import { type Database, openDatabase } from './db/client.ts';
import { migrateDatabase } from './db/migrate.ts';
import { startComponents, stopComponents } from './lifecycle.ts';
import { DEV_USER_ID, writeDevIdentity } from './modules/identity/dev-identity.ts';
import { createServices, type ServiceOptions, type Services } from './services.ts';

/**
 * Opens and migrates the database and wires the services: what the server and the
 * commands share. In development mode it also makes sure the default owner has a
 * workspace and remembers it for `npm run dev-token`.
 */
export async function boot(
  config: Config,
  options: ServiceOptions = {},
): Promise<{ database: Database; services: Services }> {
  const database = await openDatabase(config.database);
  try {
    await migrateDatabase(database);
    const services = await createServices(config, database, options);
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

/**
 * Starts the long-lived parts (Redis, the event hub, the queue, ...) in order and, when this
 * process consumes jobs (RUN_MODE worker or all), the job consumers. The server, the worker
 * and the test app call it; commands such as `dev-token` do not. Returns the function that
 * stops everything in reverse: running jobs get the grace period, then are handed back.
 */
export async function startServices(services: Services): Promise<() => Promise<void>> {
  const { config, components, queue, jobs, log } = services;
  const stop = () =>
    stopComponents(components, (component, error) =>
      log.error({ err: error, component: component.name }, 'component failed to stop'),
    );
  await startComponents(components);
  try {
    if (config.runMode !== 'api') await queue.consume(jobs, { concurrency: config.queue.concurrency });
  } catch (error) {
    await stop();
    throw error;
  }
  return stop;
}
