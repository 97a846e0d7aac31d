import { boot, startServices } from './boot.ts';
import { ConfigError, loadConfig } from './config.ts';
import { MissingExtensionError } from './db/migrate.ts';

/**
 * A worker process (`src/worker.ts` loads it): config -> database -> migrations -> services
 * -> components -> job consumers, no HTTP. It always runs as RUN_MODE=worker, so it needs
 * REDIS_URL and PostgreSQL (the configuration says why when they are missing). SIGTERM or
 * SIGINT stop it gracefully: no new job is taken, running ones get WORKER_STOP_GRACE_MS,
 * then their signal aborts and they are handed back to the queue for another worker.
 */
async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, RUN_MODE: 'worker' });
  const { database, services } = await boot(config);
  const { log } = services;
  let stopServices: (() => Promise<void>) | undefined;
  try {
    stopServices = await startServices(services);
  } catch (error) {
    await database.close();
    throw error;
  }
  log.info(
    { jobs: services.jobs.map((job) => job.name), concurrency: config.queue.concurrency, pid: process.pid },
    'worker started: consuming jobs',
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'worker stopping: no new jobs, finishing running ones');
    const limitMs = config.queue.stopGraceMs + 10_000;
    const force = setTimeout(() => {
      log.error(`worker shutdown took longer than ${limitMs / 1000} s; exiting`);
      process.exit(1);
    }, limitMs);
    force.unref();
    try {
      await stopServices?.();
      await database.close();
      log.info('worker stopped');
    } catch (error) {
      log.error({ err: error }, 'error during worker shutdown');
      process.exitCode = 1;
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(
    error instanceof ConfigError || error instanceof MissingExtensionError
      ? `${error.message}\n`
      : `worker failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
