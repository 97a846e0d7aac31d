/**
 * The API process of `npm run bench:soak`: the real service (`boot`, `startServices`,
 * `buildApp`) on the PostgreSQL, Redis and RUN_MODE the environment names, listening on
 * SOAK_PORT so that the load generator finds it again after the soak kills and restarts it.
 *
 * The first start creates the workspace the load runs in, owned by a bench user; a restart
 * names it in SOAK_WORKSPACE_ID and reuses it. Prints one JSON line (url, token, workspace id)
 * once it listens, with one token more per SOAK_USERS (default 20) users the load is spread over
 * (`soak-user-<n>`, made members by the load generator), as the many people behind 200
 * connections are. The tokens are minted with the development key kept in DATA_DIR, so they
 * stay valid across restarts.
 */
import { buildApp } from '../src/app.ts';
import { boot, startServices } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import { mintDevToken } from '../src/modules/identity/dev-issuer.ts';

const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
const { database, services } = await boot(config);
const stopServices = await startServices(services);
const app = await buildApp(services);

const owner = 'soak-owner';
const workspaceId =
  process.env.SOAK_WORKSPACE_ID || (await services.workspaces.createWorkspace(owner, { name: 'soak' })).id;

if (config.auth.mode !== 'dev' || !services.devKey) throw new Error('the soak uses development auth');
const devKey = services.devKey;
const mint = (userId: string) =>
  mintDevToken(devKey, {
    userId,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
    ttlSeconds: 12 * 3600,
  });
const token = await mint(owner);
const users = await Promise.all(
  Array.from({ length: Number(process.env.SOAK_USERS ?? 20) }, async (_, n) => {
    const userId = `soak-user-${n}`;
    return { user_id: userId, token: await mint(userId) };
  }),
);
await app.listen({ host: '127.0.0.1', port: Number(process.env.SOAK_PORT ?? 0) });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.stdout.write(
  `${JSON.stringify({ url: `http://127.0.0.1:${port}`, token, workspace_id: workspaceId, users })}\n`,
);

process.once('SIGTERM', async () => {
  await app.close();
  await stopServices();
  await database.close();
  process.exit(0);
});
