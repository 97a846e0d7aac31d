/**
 * The service under benchmark, in its own process so the load generator does not share
 * its event loop. Boots on the database named by the environment, seeds a workspace with
 * 200 agents and 20 credentials, adds a bare route to the same Fastify instance, and
 * prints one JSON line.
 */
import { buildApp } from '../src/app.ts';
import { boot } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import { mintDevToken } from '../src/modules/identity/dev-issuer.ts';

const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' });
const { database, services } = await boot(config);
const app = await buildApp(services);
app.get('/bare', { config: { public: true } }, async () => ({ items: [], total: 0 }));

const owner = 'bench-owner';
const workspace = await services.workspaces.createWorkspace(owner, { name: 'bench' });
const actor = { userId: owner, workspaceId: workspace.id, tenantId: workspace.tenant.id };
for (let i = 0; i < 200; i++) {
  await services.agents.create(actor, {
    name: `Agent ${i}`,
    description: 'seeded for the benchmark',
    model: { provider: 'openai', name: 'gpt-4o-mini' },
    tools: [{ name: 'http_request', config: { allowed_hosts: ['api.github.com'] } }],
    tags: ['bench', i % 2 ? 'odd' : 'even'],
  });
}
const types = await services.credentials.listTypes(actor, {});
const credentialTypeId = types.find((type) => type.name === 'postgres_credentials')?.id;
if (credentialTypeId === undefined) throw new Error('the postgres_credentials type is missing');
for (let i = 0; i < 20; i++) {
  await services.credentials.create(actor, {
    name: `seeded-${i}`,
    credential_type_id: credentialTypeId,
    data: { host: 'db.internal', port: 5432, database: 'app', username: 'app', password: `secret-${i}` },
  });
}
if (config.auth.mode !== 'dev' || !services.devKey) throw new Error('the benchmark uses development auth');
const token = await mintDevToken(services.devKey, {
  userId: owner,
  issuer: config.auth.issuer,
  audience: config.auth.audience,
});
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
process.stdout.write(
  `${JSON.stringify({
    url: `http://127.0.0.1:${port}`,
    token,
    workspace_id: workspace.id,
    credential_type_id: credentialTypeId,
  })}\n`,
);

process.once('SIGTERM', async () => {
  await app.close();
  await database.close();
  process.exit(0);
});
