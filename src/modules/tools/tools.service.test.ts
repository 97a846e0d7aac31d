import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codegraphOf } from '../../../tests/helpers/codegraph.ts';
import { insertDocument, insertSource } from '../../../tests/helpers/knowledge-rows.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import { inTransaction } from '../../db/transaction.ts';
import { cidrRange } from '../../lib/net/address-guard.ts';
import { createCredentialsService } from '../credentials/credentials.service.ts';
import { createVaultKeys, loadKeyring } from '../credentials/vault-keys.ts';
import { createModelGateway } from '../providers/ai-gateway.ts';
import { createRetrievalService, type RetrievalService } from '../retrieval/retrieval.service.ts';
import { createSettingsService } from '../settings/settings.service.ts';
import { createWorkspacesService } from '../workspaces/workspaces.service.ts';
import { loadToolDefinitions } from './tool-registry.ts';
import { MAX_RESPONSE_BYTES } from './tools/http-request.tool.ts';
import { createToolsService, ToolError } from './tools.service.ts';

/**
 * The tool registry and `http_request` on a real database and vault, against a loopback API:
 * how an agent's tools are checked, what the tool sends (the credential as its type
 * authenticates), what it hands the model back (capped, secrets redacted in every form), and
 * what it refuses.
 */

let db: TestDb;
let credentials: ReturnType<typeof createCredentialsService>;
let tools: ReturnType<typeof createToolsService>;
let retrieval: RetrievalService;
let server: http.Server;
let base: string;
const seen: http.IncomingHttpHeaders[] = [];
let owner: { userId: string; workspaceId: string };

const SECRET = 'Tool-Secret-6c2e1f';

beforeAll(async () => {
  db = await createTestDb();
  const { keyring } = loadKeyring({
    encryptionKey: randomBytes(32).toString('base64'),
    previousKeys: [],
    dataDir: os.tmpdir(),
  });
  const settings = createSettingsService(db.database.db);
  credentials = createCredentialsService({
    db: db.database.db,
    settings,
    keys: createVaultKeys(db.database.db, keyring),
    testConnection: async () => ({ passed: true, message: 'not used', duration_ms: 0 }),
  });
  const addressPolicy = async () => ({ refusePrivateNetworks: true, allowed: [cidrRange('127.0.0.0/8')] });
  const models = createModelGateway({ settings, credentials, addressPolicy });
  retrieval = createRetrievalService({ db: db.database.db, models, settings, credentials });
  tools = createToolsService({
    definitions: await loadToolDefinitions(),
    credentials,
    codegraph: codegraphOf(db),
    addressPolicy,
    knowledge: retrieval,
  });
  const workspace = await createWorkspacesService(db.database.db).createWorkspace('tool-user', {
    name: 'tools',
  });
  owner = { userId: 'tool-user', workspaceId: workspace.id };
  server = http.createServer((req, res) => {
    seen.push(req.headers);
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/big') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('x'.repeat(MAX_RESPONSE_BYTES * 3));
    } else if (url.pathname === '/hang') {
      res.writeHead(200);
    } else {
      // Echoes what it was sent, in the forms a careless API might: raw, URL-encoded, base64.
      const auth = req.headers.authorization ?? req.headers['x-api-key'] ?? '';
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo': String(auth) });
      res.end(
        JSON.stringify({
          raw: auth,
          encoded: encodeURIComponent(String(auth)),
          base64: Buffer.from(SECRET).toString('base64'),
        }),
      );
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await db.close();
});

async function credential(type: string, data: Record<string, unknown>) {
  const types = await credentials.listTypes(owner, {});
  const typeId = types.find((item) => item.name === type)?.id as number;
  return credentials.create(owner, {
    name: `${type}-${randomBytes(3).toString('hex')}`,
    credential_type_id: typeId,
    data,
  });
}

/** `http_request` bound as an agent configured with `config` would have it. */
const httpRequest = (config: Record<string, unknown> = {}) => {
  const [tool] = tools.bind([{ name: 'http_request', config }], owner);
  if (!tool) throw new Error('http_request is not in the registry');
  return (input: Record<string, unknown>, signal = new AbortController().signal) =>
    tool.execute(input, signal);
};

describe('the registry', () => {
  it('finds http_request and checks an agent’s tools against it', () => {
    expect(tools.list().map((tool) => tool.name)).toContain('http_request');
    expect(
      tools.checkRefs(
        [{ name: 'http_request', config: { allowed_hosts: ['api.example.com'] } }],
        'body.tools',
      ),
    ).toEqual([]);
    expect(
      tools.checkRefs(
        [
          { name: 'nope' },
          { name: 'http_request', config: { timeout_ms: 10, surprise: true } },
          { name: 'http_request' },
        ],
        'body.tools',
      ),
    ).toEqual([
      {
        field: 'body.tools.0.name',
        message: expect.stringMatching(/^is not a known tool \(known: .*http_request/),
      },
      { field: 'body.tools.1.config.surprise', message: 'is not a setting of this tool' },
      { field: 'body.tools.1.config.timeout_ms', message: 'must be >= 100' },
      { field: 'body.tools.2.name', message: 'repeats http_request: a tool is listed once' },
    ]);
  });

  it('refuses a tool file whose tool name does not match the file name', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tools-'));
    try {
      fs.writeFileSync(
        path.join(dir, 'web-search.tool.ts'),
        `export default { name: 'search_web', description: 'd', input: {}, config: {}, execute: async () => null };\n`,
      );
      await expect(loadToolDefinitions(dir)).rejects.toThrow(
        'web-search.tool.ts: the tool named search_web belongs in search-web.tool.ts',
      );
      fs.rmSync(path.join(dir, 'web-search.tool.ts'));
      fs.writeFileSync(path.join(dir, 'answer.tool.ts'), 'export default 42;\n');
      await expect(loadToolDefinitions(dir)).rejects.toThrow('the default export must be a tool definition');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('knowledge_search', () => {
  /** Indexes one keyword-only document into a new source of `workspaceId`. */
  async function indexed(workspaceId: string, title: string, text: string) {
    const source = await insertSource(db.database.db, workspaceId);
    const document = await insertDocument(db.database.db, workspaceId, source.id, { title });
    const prepared = await retrieval.prepare(workspaceId, { provider: 'none', model: 'none' }, [
      { position: 0, text, headingPath: [title, 'Summary'], tokenCount: 10 },
    ]);
    await inTransaction(db.database.db, (tx) =>
      retrieval.indexDocument(
        tx,
        { workspaceId, sourceId: source.id, documentId: document.id, generation: 1 },
        prepared,
      ),
    );
    return { sourceId: source.id, documentId: document.id };
  }

  it('hands the model the best passages of its own workspace, scoped by the agent’s config', async () => {
    const mine = await indexed(owner.workspaceId, 'Onboarding', 'New hires get a laptop on their first day.');
    const other = await createWorkspacesService(db.database.db).createWorkspace('other-user', {
      name: 'other',
    });
    await indexed(other.id, 'Secrets', 'The other workspace also hands out a laptop, secretly.');

    const [tool] = tools.bind([{ name: 'knowledge_search' }], owner);
    const found = (await tool?.execute({ query: 'laptop' }, new AbortController().signal)) as {
      results: Array<{ document_id: string; title: string; heading_path: string[]; passage: string }>;
    };
    expect(found.results).toEqual([
      expect.objectContaining({
        document_id: mine.documentId,
        title: 'Onboarding',
        heading_path: ['Onboarding', 'Summary'],
        passage: 'New hires get a laptop on their first day.',
      }),
    ]);
    const [scoped] = tools.bind(
      [{ name: 'knowledge_search', config: { source_ids: [crypto.randomUUID()] } }],
      owner,
    );
    expect(await scoped?.execute({ query: 'laptop' }, new AbortController().signal)).toMatchObject({
      results: [],
    });
    expect(tool?.check({ query: '' })).not.toEqual([]);
  });
});

describe('http_request', () => {
  it('sends an API-key credential as its type does and redacts every echo of it', async () => {
    // Its test URL's host is where the key may go (the default allowed host).
    const key = await credential('api_key_credentials', { api_key: SECRET, test_url: `${base}/echo` });
    const result = (await httpRequest({ credentials: [key.id] })({
      method: 'GET',
      url: `${base}/echo`,
      credential_id: key.id,
    })) as { status: number; headers: Record<string, string>; body: string };
    expect(seen.at(-1)?.['x-api-key']).toBe(SECRET);
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body)).toEqual({
      raw: '[redacted]',
      encoded: '[redacted]',
      base64: '[redacted]',
    });
    // Only a few harmless headers reach the model: not the echo of the key, not cookies.
    expect(result.headers).toEqual({ 'content-type': 'application/json' });
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it('sends basic auth from the derived hidden field', async () => {
    const basic = await credential('basic_auth_credentials', {
      username: 'ann',
      password: SECRET,
      test_url: `${base}/`,
    });
    await httpRequest({ credentials: [basic.id] })({
      method: 'GET',
      url: `${base}/echo`,
      credential_id: basic.id,
    });
    expect(seen.at(-1)?.authorization).toBe(`Basic ${Buffer.from(`ann:${SECRET}`).toString('base64')}`);
  });

  it('cuts the body handed to the model at MAX_RESPONSE_BYTES', async () => {
    const result = (await httpRequest()({ method: 'GET', url: `${base}/big` })) as {
      body: string;
      truncated: boolean;
    };
    expect(result.body).toHaveLength(MAX_RESPONSE_BYTES);
    expect(result.truncated).toBe(true);
  });

  it('refuses what the agent or the platform does not allow, with messages the model may read', async () => {
    const postgres = await credential('postgres_credentials', {
      host: 'db.example.com',
      database: 'x',
      username: 'u',
      password: SECRET,
    });
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [{}, { method: 'GET', url: 'ftp://example.com/x' }, 'only http and https URLs are allowed, not ftp'],
      [{}, { method: 'GET', url: 'not a url' }, 'url is not an absolute URL: not a url'],
      [
        {},
        { method: 'GET', url: `http://u:p@127.0.0.1/` },
        'credentials in the URL are not allowed; pass credential_id instead',
      ],
      [
        { allowed_hosts: ['*.example.com'] },
        { method: 'GET', url: `${base}/echo` },
        "host 127.0.0.1 is not among this agent's allowed hosts",
      ],
      [
        {},
        { method: 'GET', url: `${base}/echo`, headers: { Authorization: 'Bearer x' } },
        'header Authorization may not be set; authentication comes from credential_id',
      ],
      [
        {},
        { method: 'GET', url: `${base}/echo`, credential_id: postgres.id },
        `credential ${postgres.id} is not available to this agent's http_request tool`,
      ],
      [
        { credentials: [postgres.id] },
        { method: 'GET', url: `${base}/echo`, credential_id: postgres.id },
        `credential ${postgres.id} (postgres_credentials) does not authenticate HTTP requests`,
      ],
      [
        { credentials: [999_999] },
        { method: 'GET', url: `${base}/echo`, credential_id: 999_999 },
        'credential 999999: credential 999999 not found',
      ],
      [
        {},
        { method: 'GET', url: 'http://10.0.0.1/' },
        /^refused: 10\.0\.0\.1 is in the private range 10\.0\.0\.0\/8 and this workspace refuses private networks \(.*OUTBOUND_ALLOWED_CIDRS/,
      ],
      [{ timeout_ms: 200 }, { method: 'GET', url: `${base}/hang` }, /took longer than 200 ms|within 200 ms/],
      [{}, { method: 'TRACE', url: `${base}/echo` }, /^invalid arguments: \/method /],
    ] as never;
    for (const [config, input, message] of cases) {
      const error = await httpRequest(config)(input).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error, JSON.stringify(input)).toBeInstanceOf(ToolError);
      if (typeof message === 'string') expect((error as Error).message).toBe(message);
      else expect((error as Error).message).toMatch(message);
    }
  });

  it('passes an abort on as the abort, not as a tool failure', async () => {
    const controller = new AbortController();
    const running = httpRequest()({ method: 'GET', url: `${base}/hang` }, controller.signal);
    setTimeout(() => controller.abort(new Error('turn cancelled')), 50);
    await expect(running).rejects.toThrow('turn cancelled');
  });
});
