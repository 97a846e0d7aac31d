import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildTar, buildZip, formBody, sampleZipEntries } from '../helpers/archives.ts';
import { buildMember, tenantFolder } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * The code graph through the HTTP contract: indexing a directory under SOURCES_ROOT (this
 * repository's own src/ among them) and uploaded archives, hostile archives and paths,
 * atomic re-indexing, search ranking with callers and callees, workspace isolation.
 */

const REPOSITORY = path.resolve(import.meta.dirname, '../..');
const FIXTURES = path.join(REPOSITORY, 'tests/fixtures/codegraph');
const UPLOAD_MAX_BYTES = 512 * 1024;

let t: TestApp;
let owner: Actor;
/** SOURCES_ROOT of the app. */
let sourcesRoot: string;
/** The owner's tenant folder under it: the only one the owner's projects may read. */
let root: string;
let outside: string;

/** Writes `files` (path -> text) under SOURCES_ROOT/`folder`. */
function writeProject(folder: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(root, folder, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  }
}

const indexDirectory = (actor: Actor, project: string, directory: string) =>
  t.call(actor, 'POST', '/api/codegraph/index', { project, source: { directory } });

async function indexArchive(actor: Actor, project: string, archive: Buffer, filename = 'sources.zip') {
  const { payload, headers } = await formBody({ project }, { archive: { data: archive, filename } });
  return t.call(actor, 'POST', '/api/codegraph/index', payload, { headers });
}

async function search(actor: Actor, project: string, q: string, extra: Record<string, string> = {}) {
  const query = new URLSearchParams({ project, q, ...extra });
  const response = await t.call(actor, 'GET', `/api/codegraph/search?${query}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as {
    project: { name: string; status: string };
    results: Array<Record<string, any>>;
    took_ms: number;
  };
}

beforeAll(async () => {
  sourcesRoot = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'codegraph-root-')));
  outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'codegraph-outside-')));
  // This repository's src/ is indexed within the request (200): the default 2 MiB threshold
  // is too close to its size, which grows with every change.
  t = await createTestApp({
    env: {
      SOURCES_ROOT: sourcesRoot,
      UPLOAD_MAX_BYTES: String(UPLOAD_MAX_BYTES),
      CODEGRAPH_SYNC_MAX_BYTES: String(16 * 1024 * 1024),
    },
  });
  owner = await t.newWorkspace();
  root = await tenantFolder(t, owner, sourcesRoot);
  fs.cpSync(path.join(REPOSITORY, 'src'), path.join(root, 'platform/src'), { recursive: true });
  for (const language of ['typescript', 'python', 'go', 'java']) {
    fs.cpSync(path.join(FIXTURES, language), path.join(root, 'fixtures', language), { recursive: true });
  }
  fs.writeFileSync(path.join(outside, 'secret.ts'), 'export function secret() {}\n');
  fs.symlinkSync(outside, path.join(root, 'escape'));
});

afterAll(async () => {
  await t?.close();
  fs.rmSync(sourcesRoot, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

describe("this repository's own src/", () => {
  let indexed: Record<string, any>;

  beforeAll(async () => {
    const response = await indexDirectory(owner, 'platform', 'platform/src');
    expect(response.statusCode, response.body).toBe(200);
    indexed = response.json();
  });

  it('is indexed within the request, with its figures', () => {
    expect(indexed).toMatchObject({
      name: 'platform',
      status: 'ready',
      error: null,
      source: { kind: 'directory', directory: 'platform/src' },
    });
    expect(indexed.stats.files).toBeGreaterThan(150);
    expect(indexed.stats.languages).toEqual({ typescript: indexed.stats.files });
    expect(indexed.stats.symbols).toBeGreaterThan(1000);
    expect(indexed.stats.calls.resolved).toBeGreaterThan(2000);
    expect(indexed.stats.edges.defines).toBe(indexed.stats.symbols);
    expect(indexed.stats.files_with_errors).toBe(0);
  });

  it('finds createRunEngine with its signature, doc, caller and callees', async () => {
    const { results } = await search(owner, 'platform', 'createRunEngine');
    const [hit] = results;
    expect(hit).toMatchObject({
      kind: 'function',
      name: 'createRunEngine',
      qualified_name: 'createRunEngine',
      file: 'modules/runs/run-engine.ts',
      language: 'typescript',
      match: 'exact',
      score: 1,
    });
    expect(hit?.signature).toMatch(/^function createRunEngine\(deps: RunEngineDependencies\)/);
    expect(hit?.doc).toEqual(expect.any(String));
    const source = fs.readFileSync(path.join(REPOSITORY, 'src', hit?.file), 'utf8').split('\n');
    expect(source[hit?.start_line - 1]).toContain('export function createRunEngine(');
    // The run engine module's entrypoint builds the engine: the one production caller.
    expect(hit?.callers).toContainEqual(
      expect.objectContaining({
        qualified_name: 'createRunEngineModule',
        kind: 'function',
        file: 'modules/runs/run-engine.module.ts',
      }),
    );
    expect(hit?.callees).toContainEqual(
      expect.objectContaining({
        qualified_name: 'createRunStatements',
        file: 'modules/runs/runs.statements.ts',
      }),
    );
  });

  it('follows calls through imports, this and method names', async () => {
    const [transaction] = (await search(owner, 'platform', 'inTransaction')).results;
    expect(transaction).toMatchObject({ file: 'db/transaction.ts', kind: 'function' });
    expect(transaction?.caller_count).toBeGreaterThan(10);
    expect(transaction?.callers.length).toBeLessThanOrEqual(20);
    const callerFiles = transaction?.callers.map((caller: { file: string }) => caller.file);
    expect(callerFiles).toContain('modules/agents/agents.service.ts');

    const [gate] = (await search(owner, 'platform', 'ConnectionGate.run')).results;
    expect(gate).toMatchObject({ kind: 'method', qualified_name: 'ConnectionGate.run', match: 'exact' });

    const [resolve] = (await search(owner, 'platform', 'resolveWithinRoot')).results;
    expect(resolve?.callees).toContainEqual(expect.objectContaining({ qualified_name: 'isInside' }));
    expect(resolve?.unresolved_callees).toEqual(expect.arrayContaining(['realpath', 'resolve']));
  });

  it('ranks exact, then prefix, then fuzzy, then text matches', async () => {
    const prefix = await search(owner, 'platform', 'createRun', { limit: '20' });
    // Names starting so come before members whose qualified name does (createRunLog.event).
    expect(prefix.results.slice(0, 9).map((hit) => hit.name)).toEqual(
      expect.arrayContaining([
        'createRunEngine',
        'createRunEngineModule',
        'createRunsModule',
        'createRunStatements',
        'createRunLog',
        'createRunWriter',
        'createRunsService',
        'createRunsRepository',
      ]),
    );
    for (const hit of prefix.results) expect(hit.match).toBe('prefix');
    // The type RunEngine is the exact match; createRunEngine contains the name.
    const fuzzy = await search(owner, 'platform', 'RunEngine', { limit: '20' });
    expect(fuzzy.results[0]).toMatchObject({ name: 'RunEngine', kind: 'type', match: 'exact' });
    expect(fuzzy.results.find((hit) => hit.name === 'createRunEngine')?.match).toBe('fuzzy');
    // A typo still finds it, by trigram similarity.
    const typo = await search(owner, 'platform', 'createRunEngne');
    expect(typo.results[0]).toMatchObject({ name: 'createRunEngine', match: 'fuzzy' });
    // Words of a doc comment: resolveWithinRoot's says it follows every link.
    const text = await search(owner, 'platform', 'link planted inside the root');
    expect(text.results[0]).toMatchObject({ name: 'resolveWithinRoot', match: 'text' });
    const ranks = { exact: 0, prefix: 1, fuzzy: 2, text: 3 } as Record<string, number>;
    for (const result of [prefix, fuzzy, typo, text]) {
      const order = result.results.map((hit) => ranks[hit.match] as number);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
  });

  it('filters by kind and bounds the results by limit', async () => {
    const classes = await search(owner, 'platform', 'Error', { kind: 'class', limit: '5' });
    expect(classes.results.length).toBeGreaterThan(0);
    expect(classes.results.length).toBeLessThanOrEqual(5);
    for (const hit of classes.results) expect(hit.kind).toBe('class');
  });
});

describe('the four languages', () => {
  it('indexes TypeScript, Python, Go and Java projects and finds callers across files', async () => {
    for (const language of ['typescript', 'python', 'go', 'java']) {
      const response = await indexDirectory(owner, `fixture-${language}`, `fixtures/${language}`);
      expect(response.statusCode, response.body).toBe(200);
      expect(Object.keys(response.json().stats.languages)).toEqual([language]);
    }
    const [square] = (await search(owner, 'fixture-typescript', 'square')).results;
    expect(square?.callers.map((caller: { qualified_name: string }) => caller.qualified_name)).toEqual([
      'Square.area',
      'report',
    ]);
    const [total] = (await search(owner, 'fixture-python', 'Cart.total')).results;
    expect(total).toMatchObject({
      kind: 'method',
      doc: 'Sum of the prices,\ntax included.',
      file: 'shop/cart.py',
    });
    expect(total?.callers).toEqual([expect.objectContaining({ qualified_name: 'Cart.check', calls: 1 })]);
    const [normalize] = (await search(owner, 'fixture-go', 'normalize')).results;
    expect(normalize?.callers).toEqual([
      expect.objectContaining({ qualified_name: 'Store.Get', file: 'store/store.go' }),
    ]);
    const [geometry] = (await search(owner, 'fixture-java', 'Geometry.square')).results;
    expect(geometry?.callers.map((caller: { qualified_name: string }) => caller.qualified_name)).toEqual([
      'App.main',
      'Circle.area',
    ]);
  });
});

describe('uploaded archives', () => {
  it('indexes a .zip and a .tar.gz', async () => {
    for (const [archive, filename] of [
      [buildZip(sampleZipEntries()), 'sample.zip'],
      [await buildTar(sampleZipEntries()), 'sample.tar.gz'],
    ] as const) {
      const response = await indexArchive(owner, 'sample', archive, filename);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({
        status: 'ready',
        source: { kind: 'archive', filename, bytes: archive.length },
        stats: { files: 3, languages: { typescript: 2, python: 1 } },
      });
      const [add] = (await search(owner, 'sample', 'add')).results;
      expect(add).toMatchObject({ file: 'src/math.ts', doc: 'Adds two numbers.' });
      expect(add?.callers).toEqual([
        expect.objectContaining({ qualified_name: 'main', file: 'src/main.ts' }),
      ]);
    }
  });

  it.each([
    ['a path that climbs out', () => buildZip([{ name: '../../evil.ts', data: 'x' }]), 422, 'archive_unsafe'],
    ['an absolute path', () => buildZip([{ name: '/etc/cron.d/evil.py', data: 'x' }]), 422, 'archive_unsafe'],
    [
      'a symbolic link (zip)',
      () => buildZip([{ name: 'link.ts', data: '/etc/passwd', mode: 0o120777 }]),
      422,
      'archive_unsafe',
    ],
    [
      'a symbolic link (tar)',
      () => buildTar([{ name: 'link.ts', type: 'symlink', linkname: '/etc/passwd' }]),
      422,
      'archive_unsafe',
    ],
    [
      'a zip bomb',
      () => buildZip([{ name: 'zeros.ts', data: Buffer.alloc(32 * 1024 * 1024) }]),
      422,
      'archive_too_large',
    ],
    [
      'a gzip bomb',
      () => buildTar([{ name: 'zeros.ts', data: Buffer.alloc(32 * 1024 * 1024) }]),
      422,
      'archive_too_large',
    ],
    ['a corrupt zip', () => buildZip(sampleZipEntries()).subarray(0, 200), 422, 'archive_invalid'],
    ['not an archive', () => Buffer.from('%PDF-1.7 not an archive'), 415, 'unsupported_media_type'],
    [
      'an archive without source files',
      () => buildZip([{ name: 'README.md', data: '# x' }]),
      422,
      'no_source_files',
    ],
  ])('refuses %s, creating nothing', async (_label, make, status, code) => {
    const project = `hostile-${code}-${status}`;
    const response = await indexArchive(owner, project, await make());
    expect(response.statusCode, response.body).toBe(status);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.json().code).toBe(code);
    expect((await t.call(owner, 'GET', `/api/codegraph/projects/${project}`)).statusCode).toBe(404);
  });

  it('refuses an upload over UPLOAD_MAX_BYTES with 413', async () => {
    const big = buildZip([{ name: 'big.bin', data: randomBytes(UPLOAD_MAX_BYTES + 1024), stored: true }]);
    expect(big.length).toBeGreaterThan(UPLOAD_MAX_BYTES);
    const response = await indexArchive(owner, 'too-big', big);
    expect(response.statusCode, response.body).toBe(413);
    expect(response.json()).toMatchObject({
      code: 'payload_too_large',
      errors: [{ field: 'body.archive', message: `must be at most ${UPLOAD_MAX_BYTES} bytes` }],
    });
  });

  it('names the form fields at fault', async () => {
    const missing = await formBody({ project: 'x' });
    const noArchive = await t.call(owner, 'POST', '/api/codegraph/index', missing.payload, {
      headers: missing.headers,
    });
    expect(noArchive.statusCode).toBe(400);
    expect(noArchive.json().errors).toEqual([
      { field: 'body.archive', message: expect.stringMatching(/required/) },
    ]);
    const badName = await indexArchive(owner, '../etc', buildZip(sampleZipEntries()));
    expect(badName.statusCode).toBe(400);
    expect(badName.json().errors).toEqual([{ field: 'body.project', message: expect.any(String) }]);
    const broken = await t.call(
      owner,
      'POST',
      '/api/codegraph/index',
      '--x\r\nContent-Disposition: form-data; name="project"\r\n\r\nab',
      { headers: { 'content-type': 'multipart/form-data; boundary=x' } },
    );
    expect(broken.statusCode).toBe(400);
    expect(broken.headers['content-type']).toContain('application/problem+json');
  });
});

describe('directories', () => {
  it.each([
    ['.. out of the root', '../'],
    ['an absolute path', '/etc'],
    ['a missing directory', 'no/such/folder'],
    ['a link that leads out of the root', 'escape'],
    ['a file', 'fixtures/go/store/store.go'],
  ])('refuses %s, naming the field', async (_label, directory) => {
    const response = await indexDirectory(owner, 'refused', directory);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().errors).toEqual([{ field: 'body.source.directory', message: expect.any(String) }]);
    expect(response.body).not.toContain(sourcesRoot);
  });

  it('refuses a directory without source files', async () => {
    writeProject('docs-only', { 'README.md': '# docs' });
    const response = await indexDirectory(owner, 'docs-only', 'docs-only');
    expect(response.statusCode).toBe(422);
    expect(response.json().code).toBe('no_source_files');
  });
});

describe('re-indexing', () => {
  /** A version of a project: `shared` calls its version's helper, plus `count` functions part_<n>. */
  const version = (tag: string, count: number) => ({
    'main.ts': [
      `export function helper_${tag}(): number {\n  return 1;\n}\n`,
      `export function shared(version: '${tag}'): number {\n  return helper_${tag}();\n}\n`,
      ...Array.from(
        { length: count },
        (_, n) => `export function part_${n}(): number {\n  return ${n};\n}\n`,
      ),
    ].join('\n'),
  });

  it('replaces the graph: the old symbols are gone, only one generation is stored', async () => {
    writeProject('versions/one', version('one', 3));
    writeProject('versions/two', version('two', 5));
    expect((await indexDirectory(owner, 'versioned', 'versions/one')).statusCode).toBe(200);
    expect((await search(owner, 'versioned', 'helper_one')).results).toHaveLength(1);
    expect((await indexDirectory(owner, 'versioned', 'versions/two')).statusCode).toBe(200);
    expect((await search(owner, 'versioned', 'helper_one')).results.map((hit) => hit.name)).not.toContain(
      'helper_one',
    );
    expect((await search(owner, 'versioned', 'part_', { limit: '100' })).results).toHaveLength(5);
    const generations = await t.rows<{ generation: number }>(
      sql`select distinct s.generation from codegraph_symbols s join codegraph_projects p on p.id = s.project_id
          where p.name = 'versioned' and p.workspace_id = ${owner.workspaceId}`,
    );
    expect(generations).toHaveLength(1);
  });

  it('is atomic: searches during a re-index see the old graph or the new one, never a mixture', async () => {
    writeProject('atomic/a', version('a', 30));
    writeProject('atomic/b', version('b', 50));
    expect((await indexDirectory(owner, 'atomic', 'atomic/a')).statusCode).toBe(200);
    const seen = new Set<string>();
    let indexing = true;
    const reindex = (async () => {
      try {
        for (const folder of ['atomic/b', 'atomic/a', 'atomic/b']) {
          expect((await indexDirectory(owner, 'atomic', folder)).statusCode).toBe(200);
        }
      } finally {
        indexing = false;
      }
    })();
    const reader = (async () => {
      while (indexing) {
        // A turn of the event loop between searches, as requests arriving on sockets have:
        // injected requests alone would chain microtasks and starve the index's file reads.
        await new Promise((resolve) => setImmediate(resolve));
        const parts = (await search(owner, 'atomic', 'part_', { limit: '100' })).results;
        const [shared] = (await search(owner, 'atomic', 'shared')).results;
        const tag = /'(a|b)'/.exec(shared?.signature ?? '')?.[1];
        // The callee belongs to the same version as the function calling it.
        expect(shared?.callees.map((callee: { qualified_name: string }) => callee.qualified_name)).toEqual([
          `helper_${tag}`,
        ]);
        expect([30, 50]).toContain(parts.length);
        seen.add(`${parts.length}`);
      }
    })();
    await Promise.all([reindex, reader]);
    expect(seen.size).toBeGreaterThan(0);
  });
});

describe('projects', () => {
  it('lists, reads and deletes projects; the feed records each index', async () => {
    writeProject('listed', { 'a.py': 'def a():\n    return 1\n' });
    expect((await indexDirectory(owner, 'listed', 'listed')).statusCode).toBe(200);
    const list = await t.call(owner, 'GET', '/api/codegraph/projects?limit=200');
    expect(list.statusCode).toBe(200);
    expect(list.json().items.map((item: { name: string }) => item.name)).toContain('listed');
    const one = await t.call(owner, 'GET', '/api/codegraph/projects/listed');
    expect(one.json()).toMatchObject({ name: 'listed', status: 'ready', stats: { files: 1, symbols: 1 } });
    const feed = await t.call(owner, 'GET', '/api/activity?kind=codegraph.indexed&limit=200');
    expect(feed.json().items).toContainEqual(
      expect.objectContaining({
        kind: 'codegraph.indexed',
        subject_id: one.json().id,
        message: 'Code project “listed” indexed: 1 files, 1 symbols',
      }),
    );
    expect((await t.call(owner, 'DELETE', '/api/codegraph/projects/listed')).statusCode).toBe(204);
    expect((await t.call(owner, 'GET', '/api/codegraph/projects/listed')).statusCode).toBe(404);
    const gone = await t.call(owner, 'GET', '/api/codegraph/search?project=listed&q=a');
    expect(gone.json().code).toBe('codegraph_project_not_found');
  });

  it('a viewer searches but does not index', async () => {
    const viewer = await buildMember(t, owner, { role: 'viewer' });
    expect((await search(viewer, 'sample', 'add')).results.length).toBeGreaterThan(0);
    const refused = await indexArchive(viewer, 'by-viewer', buildZip(sampleZipEntries()));
    expect(refused.statusCode).toBe(403);
  });

  it('validates the search query', async () => {
    for (const query of [
      'project=sample',
      'project=sample&q=%20',
      'project=sample&q=a&limit=0',
      'q=a',
      'project=../x&q=a',
    ]) {
      const response = await t.call(owner, 'GET', `/api/codegraph/search?${query}`);
      expect(response.statusCode, query).toBe(400);
    }
  });
});

describe('workspace isolation', () => {
  it('another workspace never sees a project, a symbol or a search hit', async () => {
    const stranger = await t.newWorkspace();
    const project = (await t.call(owner, 'GET', '/api/codegraph/projects/sample')).json();
    expect(project.name).toBe('sample');
    expect((await t.call(stranger, 'GET', '/api/codegraph/projects/sample')).statusCode).toBe(404);
    expect((await t.call(stranger, 'GET', '/api/codegraph/search?project=sample&q=add')).statusCode).toBe(
      404,
    );
    expect((await t.call(stranger, 'DELETE', '/api/codegraph/projects/sample')).statusCode).toBe(404);
    expect((await t.call(stranger, 'GET', '/api/codegraph/projects')).json()).toMatchObject({
      items: [],
      total: 0,
    });
    // The same name is free in the other workspace, and its graph is its own.
    const own = await indexArchive(
      stranger,
      'sample',
      buildZip(sampleZipEntries({ 'b.ts': 'export function only() {}\n' })),
    );
    expect(own.statusCode, own.body).toBe(200);
    expect((await search(stranger, 'sample', 'add')).results).toEqual([]);
    expect((await search(owner, 'sample', 'only')).results.map((hit) => hit.name)).not.toContain('only');
    expect((await t.call(owner, 'GET', '/api/codegraph/projects/sample')).json().id).toBe(project.id);
  });
});

describe('the code_search tool', () => {
  /** `code_search` bound as a model turn binds it: for one user of one workspace. */
  const codeSearch = (actor: Actor, config: Record<string, unknown> = {}) => {
    const [tool] = t.services.tools.bind([{ name: 'code_search', config }], {
      workspaceId: actor.workspaceId,
      userId: actor.userId,
    });
    if (!tool) throw new Error('code_search is not in the registry');
    return (input: Record<string, unknown>) => tool.execute(input, new AbortController().signal);
  };

  it('is listed by the registry with its schemas', async () => {
    const listed = (await t.call(owner, 'GET', '/api/tools')).json();
    const items = Array.isArray(listed) ? listed : listed.items;
    expect(items.map((tool: { name: string }) => tool.name)).toContain('code_search');
  });

  it('answers symbols with their location, callers and callees, in the run’s workspace', async () => {
    const found = (await codeSearch(owner)({
      query: 'createRunEngine',
      project: 'platform',
      limit: 1,
    })) as any;
    expect(found).toMatchObject({ project: 'platform', status: 'ready' });
    expect(found.results).toEqual([
      expect.objectContaining({
        kind: 'function',
        name: 'createRunEngine',
        location: expect.stringMatching(/^modules\/runs\/run-engine\.ts:\d+-\d+$/),
        match: 'exact',
      }),
    ]);
    expect(found.results[0].callers).toContainEqual(
      expect.stringMatching(/^createRunEngineModule at modules\/runs\/run-engine\.module\.ts:\d+$/),
    );
    expect(found.results[0].callees).toContainEqual(expect.stringMatching(/^createRunStatements at /));
  });

  it('keeps to the projects an agent may search, and asks for a project when there are several', async () => {
    const limited = codeSearch(owner, { projects: ['sample'] });
    expect(((await limited({ query: 'add' })) as any).project).toBe('sample');
    await expect(limited({ query: 'add', project: 'platform' })).rejects.toThrow(/not among this agent's/);
    await expect(codeSearch(owner)({ query: 'add' })).rejects.toThrow(/name the project to search, one of: /);
  });

  it('never reaches another workspace', async () => {
    const stranger = await t.newWorkspace();
    await expect(codeSearch(stranger)({ query: 'add', project: 'platform' })).rejects.toThrow(
      'there is no code project named platform in this workspace',
    );
    await expect(codeSearch(stranger)({ query: 'add' })).rejects.toThrow('no code project is indexed');
  });

  it('checks its configuration when an agent is saved', async () => {
    const response = await t.call(owner, 'POST', '/api/agents', {
      name: 'coder',
      tools: [{ name: 'code_search', config: { projects: ['../x'] } }],
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0].field).toMatch(/^body\.tools\.0\.config\.projects/);
  });
});

it('refuses an index request without a body, naming it', async () => {
  const response = await t.call(owner, 'POST', '/api/codegraph/index');
  expect(response.statusCode).toBe(400);
  expect(response.json().errors).toEqual([{ field: 'body', message: expect.stringMatching(/is required/) }]);
});
