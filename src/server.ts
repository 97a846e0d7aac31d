import { buildApp } from './app.ts';
import { boot, startServices } from './boot.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DirectoryLockedError } from './db/lock.ts';
import { MissingExtensionError } from './db/migrate.ts';

/** Starts the service (`src/main.ts` loads it): config -> database -> migrations -> services -> HTTP; stops gracefully. */
async function main(): Promise<void> {
  const config = loadConfig();
  const { database, services } = await boot(config);
  const app = await buildApp(services);
  if (services.keySource !== 'environment') {
    app.log.warn(
      `ENCRYPTION_KEY is not set: credentials are encrypted with a development key ${services.keySource === 'generated' ? 'just generated' : 'kept'} in ${config.dataDir}/encryption.key. Set ENCRYPTION_KEY for real use; losing that file loses every credential.`,
    );
  }
  const unknownKeys = await services.vaultKeys.unknownKeyIds();
  if (unknownKeys.length > 0) {
    app.log.error(
      { key_ids: unknownKeys },
      `workspace keys are wrapped by master key(s) ${unknownKeys.join(', ')}, which are not configured: add them to ENCRYPTION_KEYS_PREVIOUS, or their workspaces' credentials cannot be decrypted`,
    );
  }
  if (config.auth.mode === 'dev') {
    app.log.warn(
      'development mode: the service issues its own tokens (npm run --silent dev-token); set OIDC_ISSUER for real use',
    );
  }

  let stopServices: (() => Promise<void>) | undefined;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    // Running jobs get the grace period, then a little time to hand themselves back.
    const limitMs = config.queue.stopGraceMs + 10_000;
    const force = setTimeout(() => {
      app.log.error(`shutdown took longer than ${limitMs / 1000} s; exiting`);
      process.exit(1);
    }, limitMs);
    force.unref();
    try {
      await app.close();
      await stopServices?.();
      await database.close();
      app.log.info('stopped');
    } catch (error) {
      app.log.error({ err: error }, 'error during shutdown');
      process.exitCode = 1;
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  try {
    stopServices = await startServices(services);
    const address = await app.listen({ host: config.host, port: config.port });
    const port = app.server.address();
    const reachable = typeof port === 'object' && port ? `http://127.0.0.1:${port.port}` : address;
    database.lock?.update({ url: reachable });
  } catch (error) {
    await stopServices?.();
    await database.close();
    throw error;
  }
}

main().catch((error: unknown) => {
  if (
    error instanceof ConfigError ||
    error instanceof DirectoryLockedError ||
    error instanceof MissingExtensionError
  ) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(
      `failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
