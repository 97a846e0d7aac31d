/**
 * Runs `src/main.ts`'s steps one by one in this process and prints, as JSON, the wall time,
 * CPU time and resident memory after each (bench/startup.bench.ts spawns it with `npm start`'s
 * flags; DATA_DIR chooses cold or warm). Then the same figures after IDLE_MS of idleness.
 */
import { prepareModuleLoading } from '../src/lib/module-loading.ts';

interface Phase {
  phase: string;
  ms: number;
  cpuMs: number;
  rssMb: number;
  heapMb: number;
  externalMb: number;
}
const phases: Phase[] = [];
let wall = performance.now();
let cpu = process.cpuUsage();
const mark = (phase: string) => {
  const nowCpu = process.cpuUsage(cpu);
  phases.push({
    phase,
    ms: performance.now() - wall,
    cpuMs: (nowCpu.user + nowCpu.system) / 1000,
    rssMb: process.memoryUsage().rss / 2 ** 20,
    heapMb: process.memoryUsage().heapUsed / 2 ** 20,
    externalMb: process.memoryUsage().external / 2 ** 20,
  });
  wall = performance.now();
  cpu = process.cpuUsage();
};

prepareModuleLoading();
const { loadConfig } = await import('../src/config.ts');
const { openDatabase } = await import('../src/db/client.ts');
const { migrateDatabase } = await import('../src/db/migrate.ts');
mark('import config and the database modules');
const config = loadConfig();
const database = await openDatabase(config.database);
mark('open the database');
await migrateDatabase(database);
mark('migrations');
const { createServices } = await import('../src/services.ts');
const { buildApp } = await import('../src/app.ts');
const { startServices } = await import('../src/boot.ts');
const { DEV_USER_ID, writeDevIdentity } = await import('../src/modules/identity/dev-identity.ts');
mark('import services and app');
const services = await createServices(config, database);
const workspace = await services.workspaces.ensureDefaultWorkspace(DEV_USER_ID);
writeDevIdentity(config.dataDir, { user_id: DEV_USER_ID, workspace_id: workspace.id });
mark('create services, default workspace');
const app = await buildApp(services);
mark('buildApp');
const stop = await startServices(services);
await app.listen({ host: '127.0.0.1', port: 0 });
mark('ready (routes compiled), components started, listening');
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
const response = await fetch(`http://127.0.0.1:${port}/api/health`);
await response.arrayBuffer();
mark(`first GET /api/health (${response.status})`);
await new Promise((resolve) => setTimeout(resolve, Number(process.env.IDLE_MS ?? 5000)));
mark('idle');
await app.close();
await stop();
await database.close();
process.stdout.write(JSON.stringify(phases));
