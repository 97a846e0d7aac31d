import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Actor } from './api-client.ts';
import type { TestApp } from './test-app.ts';

/**
 * Factories for every resource, all through the HTTP API as a client would create them:
 * `buildX(t, actor, overrides)` sends a valid body (any field can be overridden) and fails the
 * test with the answer when the API refuses it. Names are unique per process, so tests that
 * share a workspace do not collide on unique names.
 */

let counter = 0;
const next = () => {
  counter += 1;
  return counter;
};

/** A JSON object answered by the API, with the fields a test usually reads typed. */
type Created<T> = T & { [key: string]: unknown };

/** Calls the API and returns the JSON body, or throws naming the factory and the answer. */
async function create<T>(
  t: TestApp,
  actor: Actor | undefined,
  factory: string,
  url: string,
  payload: unknown,
  options: Parameters<TestApp['call']>[4] = {},
): Promise<Created<T>> {
  const response = await t.call(actor, 'POST', url, payload, options);
  if (response.statusCode !== 201) throw new Error(`${factory}: ${response.statusCode} ${response.body}`);
  return response.json() as Created<T>;
}

/** Creates an agent through the API; any field can be overridden. */
export function buildAgent(t: TestApp, actor: Actor, overrides: Record<string, unknown> = {}) {
  return create<{ id: string; name: string }>(t, actor, 'buildAgent', '/api/agents', {
    name: `Agent ${next()}`,
    model: { provider: 'openai', name: 'gpt-4o-mini' },
    ...overrides,
  });
}

/** Creates a workflow through the API; any field can be overridden. */
export function buildWorkflow(t: TestApp, actor: Actor, overrides: Record<string, unknown> = {}) {
  return create<{ id: string; name: string; agents: string[] }>(t, actor, 'buildWorkflow', '/api/workflows', {
    name: `Workflow ${next()}`,
    ...overrides,
  });
}

/**
 * Creates a tenant and workspace through the API (`POST /api/workspaces`, a bearer token and
 * no workspace header), owned by `userId` (a new user unless given), and returns its owner
 * ready to act in it, with the workspace as the API answered it.
 */
export async function buildWorkspace(
  t: TestApp,
  overrides: { userId?: string; name?: string; tenant_name?: string } = {},
): Promise<
  Actor & { workspace: Created<{ id: string; name: string; tenant: { id: string; name: string } }> }
> {
  const { userId = `user-${randomBytes(4).toString('hex')}`, ...body } = overrides;
  const token = await t.token(userId);
  const workspace = await create<{ id: string; name: string; tenant: { id: string; name: string } }>(
    t,
    undefined,
    'buildWorkspace',
    '/api/workspaces',
    { name: `${userId} workspace`, ...body },
    { headers: { authorization: `Bearer ${token}` } },
  );
  return { ...(await t.actor(userId, workspace.id)), workspace };
}

/**
 * Adds a member to `admin`'s workspace through the API (role `member` unless overridden) and
 * returns them as an actor of that workspace.
 */
export async function buildMember(
  t: TestApp,
  admin: Actor,
  overrides: { user_id?: string; role?: 'owner' | 'admin' | 'member' | 'viewer' } = {},
): Promise<Actor & { role: string }> {
  const body = {
    user_id: `member-${next()}-${randomBytes(3).toString('hex')}`,
    role: 'member',
    ...overrides,
  };
  const member = await create<{ user_id: string; role: string }>(
    t,
    admin,
    'buildMember',
    '/api/workspaces/members',
    body,
  );
  return { ...(await t.actor(member.user_id, admin.workspaceId)), role: member.role };
}

/** Creates an API key of `admin`'s workspace through the API; `key` is the secret, shown once. */
export function buildApiKey(t: TestApp, admin: Actor, overrides: Record<string, unknown> = {}) {
  return create<{ id: string; key: string; prefix: string }>(
    t,
    admin,
    'buildApiKey',
    '/api/workspaces/api-keys',
    { name: `key ${next()}`, ...overrides },
  );
}

/**
 * Creates a credential type of `admin`'s workspace through the API: one password field
 * `token` and an HTTP test endpoint that sends it, unless overridden.
 */
export function buildCredentialType(t: TestApp, admin: Actor, overrides: Record<string, unknown> = {}) {
  const n = next();
  return create<{ id: number; name: string }>(t, admin, 'buildCredentialType', '/api/credentials/types', {
    name: `custom_${n}_credentials`,
    display_name: `Custom ${n}`,
    category: 'api',
    schema_definition: [{ name: 'token', label: 'Token', type: 'password', required: true }],
    test_endpoint: {
      kind: 'http',
      url: 'https://api.example.test/me',
      headers: { Authorization: 'Bearer {{token}}' },
    },
    ...overrides,
  });
}

/** The id of the credential type named `name` that `actor`'s workspace sees (system or its own). */
export async function credentialTypeId(t: TestApp, actor: Actor, name: string): Promise<number> {
  const response = await t.call(actor, 'GET', '/api/credentials/types');
  if (response.statusCode !== 200)
    throw new Error(`credentialTypeId: ${response.statusCode} ${response.body}`);
  const type = (response.json().items as { id: number; name: string }[]).find((item) => item.name === name);
  if (!type) throw new Error(`credentialTypeId: no credential type named ${name}`);
  return type.id;
}

/**
 * The password `postgresData()` stores: a canary that tests search for in responses, logs and
 * every database column, where it must never appear. The machine's PostgreSQL trusts local
 * connections, so connection tests pass whatever it is.
 */
export const CREDENTIAL_SECRET = 'canary-Secret-7f3a9c';

/** Connection data of a PostgreSQL credential pointing at the machine's own server. */
export const postgresData = (overrides: Record<string, unknown> = {}) => ({
  host: '127.0.0.1',
  port: 5432,
  database: 'postgres',
  username: 'postgres',
  password: CREDENTIAL_SECRET,
  ...overrides,
});

/**
 * Creates a credential through the API. By default a `postgres_credentials` one with
 * `postgresData()`; `credential_type` names another type (its id is looked up), or
 * `credential_type_id` gives the id directly. Other fields are the create body's.
 */
export async function buildCredential(
  t: TestApp,
  actor: Actor,
  overrides: Record<string, unknown> & { credential_type?: string } = {},
) {
  const { credential_type = 'postgres_credentials', ...body } = overrides;
  const typeId =
    body.credential_type_id === undefined ? await credentialTypeId(t, actor, credential_type) : undefined;
  return create<{ id: number; name: string }>(t, actor, 'buildCredential', '/api/credentials', {
    name: `credential-${next()}`,
    ...(typeId === undefined ? {} : { credential_type_id: typeId }),
    ...(credential_type === 'postgres_credentials' && body.data === undefined
      ? { data: postgresData() }
      : {}),
    ...body,
  });
}

/** Creates a knowledge source through the API (an upload source unless overridden). */
export function buildSource(t: TestApp, actor: Actor, overrides: Record<string, unknown> = {}) {
  return create<{ id: string; name: string; kind: string; indexing: { status: string } }>(
    t,
    actor,
    'buildSource',
    '/api/sources',
    { name: `Source ${next()}`, kind: 'upload', ...overrides },
  );
}

/**
 * The folder of `actor`'s tenant under the app's SOURCES_ROOT (`<sourcesRoot>/<tenant id>`),
 * created as an operator would provision it: the only server-side folder the actor's
 * directory sources and code graph directories may read.
 */
export async function tenantFolder(t: TestApp, actor: Actor, sourcesRoot: string): Promise<string> {
  const response = await t.call(actor, 'GET', '/api/workspaces/current');
  if (response.statusCode !== 200) throw new Error(`tenantFolder: ${response.statusCode} ${response.body}`);
  const folder = path.join(sourcesRoot, response.json().tenant.id);
  fs.mkdirSync(folder, { recursive: true });
  return folder;
}

/**
 * Makes a loopback OpenAI-compatible server (`tests/helpers/llm-servers.ts`) the workspace's
 * model provider `loop`, default model `chat-model`, priced 2 / 10 per million tokens, its key
 * in the vault. The app needs `VAULT_ALLOW_LOOPBACK=true`. `provider` overrides the provider's
 * fields (a `timeout_ms`, say).
 */
export async function configureLoopbackModel(
  t: TestApp,
  actor: Actor,
  baseUrl: string,
  provider: Record<string, unknown> = {},
): Promise<void> {
  const credential = await buildCredential(t, actor, {
    credential_type: 'openai_credentials',
    data: { api_key: 'sk-loopback-model' },
  });
  const response = await t.call(actor, 'PUT', '/api/settings/providers', {
    providers: [
      { id: 'loop', kind: 'openai_compatible', base_url: baseUrl, credential_id: credential.id, ...provider },
    ],
    default_model: { provider: 'loop', name: 'chat-model' },
    prices: [{ provider: 'loop', name: 'chat-model', input_per_million: 2, output_per_million: 10 }],
  });
  if (response.statusCode !== 200)
    throw new Error(`configureLoopbackModel: ${response.statusCode} ${response.body}`);
}
