/**
 * `npm run --silent dev-token [-- --user <id>] [-- --new-workspace]`
 *
 * Prints one line of JSON `{"token","workspace_id","user_id"}` for development mode.
 * Works whether or not the service runs: tokens are signed with the key kept in
 * DATA_DIR; a new workspace is created through the running service's API when it holds
 * the embedded database, and directly in the database otherwise.
 */
import { parseArgs } from 'node:util';
import { boot } from '../boot.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { readLockHolder } from '../db/lock.ts';
import { DEV_USER_ID, readDevIdentity } from '../modules/identity/dev-identity.ts';
import { loadDevSigningKey, mintDevToken } from '../modules/identity/dev-issuer.ts';

async function main(): Promise<string> {
  const { values } = parseArgs({
    options: {
      user: { type: 'string' },
      'new-workspace': { type: 'boolean', default: false },
      name: { type: 'string' },
      ttl: { type: 'string', default: '86400' },
    },
  });
  const config = loadConfig();
  if (config.auth.mode !== 'dev') {
    throw new Error('dev-token works only in development mode (unset OIDC_ISSUER and NODE_ENV=production)');
  }
  const ttlSeconds = Number(values.ttl);
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 60 || ttlSeconds > 30 * 86400) {
    throw new Error('--ttl must be a number of seconds between 60 and 2592000');
  }
  const userId = values.user?.trim() || DEV_USER_ID;
  if (userId.length > 255) throw new Error('--user must be at most 255 characters');
  const key = await loadDevSigningKey(config.dataDir);
  const token = await mintDevToken(key, {
    userId,
    issuer: config.auth.issuer,
    audience: config.auth.audience,
    ttlSeconds,
  });

  let workspaceId: string;
  if (values['new-workspace']) {
    const name = values.name?.trim() || `${userId}'s workspace`;
    const holder = config.database.kind === 'pglite' ? readLockHolder(config.dataDir) : undefined;
    if (holder) {
      if (typeof holder.url !== 'string')
        throw new Error('the service is still starting; try again in a moment');
      workspaceId = await createThroughService(holder.url, token, name);
    } else {
      const { database, services } = await boot(config);
      try {
        workspaceId = (await services.workspaces.createWorkspace(userId, { name })).id;
      } finally {
        await database.close();
      }
    }
  } else {
    let identity = readDevIdentity(config.dataDir);
    if (!identity && config.database.kind === 'pglite' && readLockHolder(config.dataDir)) {
      // The service is starting on this directory and writes the identity as it boots.
      identity = await waitFor(
        () => readDevIdentity(config.dataDir),
        'the starting service to set up the workspace',
      );
    }
    if (!identity) {
      const { database } = await boot(config);
      await database.close();
      identity = readDevIdentity(config.dataDir);
    }
    if (!identity) throw new Error('could not set up the development workspace');
    workspaceId = identity.workspace_id;
  }
  return JSON.stringify({ token, workspace_id: workspaceId, user_id: userId });
}

async function waitFor<T>(probe: () => T | undefined, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function createThroughService(url: string, token: string, name: string): Promise<string> {
  const response = await fetch(`${url}/api/workspaces`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { id?: string; detail?: string };
  if (!response.ok || !body.id) {
    throw new Error(
      `the running service refused to create the workspace: HTTP ${response.status} ${body.detail ?? ''}`,
    );
  }
  return body.id;
}

main().then(
  (line) => process.stdout.write(`${line}\n`),
  (error: unknown) => {
    process.stderr.write(
      `dev-token: ${error instanceof ConfigError || error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  },
);
