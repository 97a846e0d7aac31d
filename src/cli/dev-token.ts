/**
 * `npm run --silent dev-token [-- --user <id>] [-- --new-workspace] [-- --ttl <seconds>]`
 *
 * Prints one line of JSON `{"token","workspace_id","user_id"}` for development mode.
 * Works whether or not the service runs, and without starting it: a token is signed with
 * the key kept in DATA_DIR, and the workspace is the one the service remembers there
 * (`dev-identity.json`, written at every start in development mode). Only two cases touch
 * the database: a new workspace (`--new-workspace`: through the running service's API when
 * it holds the embedded database, else directly), and a DATA_DIR no service has started on
 * yet, which is set up as the service would (migrations, the default workspace).
 *
 * A token signed with another DATA_DIR's key is refused by the service, so before making one
 * for a DATA_DIR no service holds, the command asks the service on PORT for its development
 * keys and stops with a message when that service was started with another DATA_DIR.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { readLockHolder } from '../db/lock.ts';
import { prepareModuleLoading } from '../lib/module-loading.ts';
import { DEV_USER_ID, readDevIdentity } from '../modules/identity/dev-identity.ts';
import { loadDevSigningKey, mintDevToken, readDevSigningKeyId } from '../modules/identity/dev-issuer.ts';

const USAGE = `Usage: npm run --silent dev-token [-- options]

Prints {"token","workspace_id","user_id"} as one line of JSON: a development token for the
service that uses this DATA_DIR (development mode only: no OIDC_ISSUER, NODE_ENV not production).

Options:
  --user <id>        the token's user (default ${DEV_USER_ID}, the owner of the default workspace)
  --new-workspace    also create a tenant and workspace owned by the user and print its id
  --name <name>      the new workspace's name (default "<user>'s workspace")
  --ttl <seconds>    the token's lifetime, 60 to 2592000 (default 86400)
  -h, --help         print this help

Environment: DATA_DIR (default ./data) holds the signing key and the default workspace's id;
PORT (default 8080) is where a running service is looked for when no service holds DATA_DIR.
`;

async function main(): Promise<string> {
  const { values } = parseArgs({
    options: {
      user: { type: 'string' },
      'new-workspace': { type: 'boolean', default: false },
      name: { type: 'string' },
      ttl: { type: 'string', default: '86400' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return USAGE.trimEnd();
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

  const holder = config.database.kind === 'pglite' ? readLockHolder(config.dataDir) : undefined;
  if (!holder) await refuseOtherService(config.dataDir, config.port);
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
    if (holder) {
      if (typeof holder.url !== 'string')
        throw new Error('the service is still starting; try again in a moment');
      workspaceId = await createThroughService(holder.url, token, name);
    } else {
      workspaceId = await withServices(config, (services) =>
        services.workspaces.createWorkspace(userId, { name }).then((workspace) => workspace.id),
      );
    }
  } else {
    let identity = readDevIdentity(config.dataDir);
    if (!identity && holder) {
      // The service is starting on this directory and writes the identity as it boots.
      identity = await waitFor(
        () => readDevIdentity(config.dataDir),
        'the starting service to set up the workspace',
      );
    }
    if (!identity) {
      // No service has started on this DATA_DIR yet: set it up as a start would (boot() writes the identity).
      await withServices(config, async () => undefined);
      identity = readDevIdentity(config.dataDir);
    }
    if (!identity) throw new Error('could not set up the development workspace');
    workspaceId = identity.workspace_id;
  }
  return JSON.stringify({ token, workspace_id: workspaceId, user_id: userId });
}

/**
 * Opens the database with the service's own wiring, runs `work`, and closes it: the rare paths
 * that write to a database no service holds. Loaded on demand, so a plain token never pays
 * for loading the service (about a second of CPU).
 */
async function withServices<T>(
  config: ReturnType<typeof loadConfig>,
  work: (services: Awaited<ReturnType<typeof import('../boot.ts').boot>>['services']) => Promise<T>,
): Promise<T> {
  prepareModuleLoading();
  const { boot } = await import('../boot.ts');
  const { database, services } = await boot(config);
  try {
    return await work(services);
  } finally {
    await database.close();
  }
}

/**
 * Stops with a message when a service answers on `port` whose development keys do not
 * include this DATA_DIR's: it was started with another DATA_DIR and would refuse the token
 * (and setting this one up would make a second database nobody serves). Nothing answering,
 * or a service that is not in development mode, is no reason to stop.
 */
async function refuseOtherService(dataDir: string, port: number): Promise<void> {
  if (port === 0) return;
  const url = `http://127.0.0.1:${port}`;
  let keys: { kid?: unknown }[];
  try {
    const response = await fetch(`${url}/.well-known/jwks.json`, { signal: AbortSignal.timeout(2000) });
    if (response.status !== 200) return;
    const body = (await response.json()) as { keys?: unknown };
    if (!Array.isArray(body.keys)) return;
    keys = body.keys as { kid?: unknown }[];
  } catch {
    return;
  }
  const kid = readDevSigningKeyId(dataDir);
  if (kid !== undefined && keys.some((key) => key.kid === kid)) return;
  throw new Error(
    `the service at ${url} was started with another DATA_DIR than ${dataDir}: it would refuse a token signed with this directory's key, and nothing serves this directory. Run dev-token with the DATA_DIR the service was started with, or set PORT to the port of the service that uses ${dataDir}.`,
  );
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
