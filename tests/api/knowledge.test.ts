import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildSource, tenantFolder } from '../helpers/factories.ts';
import { pollUntil, settledDocument, settledSource, upload } from '../helpers/knowledge.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/** The upload limit of this file's app: small, so 413 costs little. */
const MAX_BYTES = 65_536;

let t: TestApp;
let alice: Actor;
let mallory: Actor;
/** SOURCES_ROOT of the app. */
let sourcesRoot: string;
/** Alice's tenant folder under it: the only one her directory sources may read. */
let root: string;
/** A folder beside the root that no source may reach. */
let outside: string;
let pages: http.Server;
let pagesUrl: string;

const guide = (topic: string) =>
  `# ${topic} guide\n\nAn introduction to ${topic}.\n\n## Install\n\nRun the installer for ${topic}.\n`;

function write(relative: string, content: string | Buffer) {
  const file = path.join(root, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

beforeAll(async () => {
  sourcesRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'knowledge-root-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'knowledge-outside-'));
  fs.writeFileSync(path.join(outside, 'secret.md'), '# Secret\n\nThe password is hunter2.\n');
  pages = http.createServer((request, response) => {
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
      response.writeHead(status, { 'content-type': type, ...headers });
      response.end(body);
    };
    switch (request.url) {
      case '/guide.html':
        return send(
          200,
          'text/html; charset=utf-8',
          '<html><head><title>Pages guide</title><script>alert("x")</script><style>p{}</style></head><body><h1>Pages guide</h1><p>Fetched through the guard.</p></body></html>',
        );
      case '/notes.md':
        return send(200, 'text/markdown', guide('notes'));
      case '/moved':
        return send(302, 'text/plain', '', { location: '/notes.md' });
      case '/away':
        return send(302, 'text/plain', '', { location: `http://localhost:${port()}/guide.html` });
      case '/big':
        return send(200, 'text/plain', 'x '.repeat(MAX_BYTES));
      default:
        return send(404, 'text/plain', 'not here');
    }
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pagesUrl = `http://127.0.0.1:${port()}`;
  t = await createTestApp({
    env: { SOURCES_ROOT: sourcesRoot, UPLOAD_MAX_BYTES: String(MAX_BYTES), VAULT_ALLOW_LOOPBACK: 'true' },
  });
  alice = await t.newWorkspace('alice');
  root = await tenantFolder(t, alice, sourcesRoot);
  mallory = await t.newWorkspace('mallory');
});
afterAll(async () => {
  await t.close();
  await new Promise((resolve) => pages.close(resolve));
  fs.rmSync(sourcesRoot, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

const port = () => (pages.address() as AddressInfo).port;

async function kinds(actor: Actor, subjectId: string): Promise<string[]> {
  const response = await t.call(actor, 'GET', `/api/activity?limit=200`);
  return (response.json().items as { kind: string; subject_id: string }[])
    .filter((event) => event.subject_id === subjectId)
    .map((event) => event.kind)
    .reverse();
}

describe('sources', () => {
  it('creates an upload source with the default chunking and embedding, and reads it back', async () => {
    const response = await t.call(alice, 'POST', '/api/sources', { name: 'Handbook', kind: 'upload' });
    expect(response.statusCode, response.body).toBe(201);
    const source = response.json();
    expect(response.headers.location).toBe(`/api/sources/${source.id}`);
    expect(source).toMatchObject({
      workspace_id: alice.workspaceId,
      name: 'Handbook',
      kind: 'upload',
      is_default: false,
      directory: null,
      url: null,
      chunking: { target_tokens: expect.any(Number), overlap_tokens: expect.any(Number) },
      embedding: { provider: 'none', model: 'none' },
      generation: 1,
      document_count: 0,
      indexing: { status: 'idle', documents_total: 0, documents_done: 0, documents_failed: 0, error: null },
      created_by: 'alice',
    });
    const read = await t.call(alice, 'GET', `/api/sources/${source.id}`);
    expect(read.json()).toEqual(source);
  });

  it('refuses a taken name with 409 and lists with filters', async () => {
    await buildSource(t, alice, { name: 'Listed one', chunking: { target_tokens: 300, overlap_tokens: 30 } });
    const taken = await t.call(alice, 'POST', '/api/sources', { name: 'Listed one', kind: 'upload' });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().code).toBe('duplicate_source');
    const listed = await t.call(alice, 'GET', '/api/sources?q=LISTED&kind=upload');
    expect(listed.json()).toMatchObject({ total: 1, limit: 50, offset: 0 });
    expect(listed.json().items[0]).toMatchObject({ name: 'Listed one', chunking: { target_tokens: 300 } });
    expect((await t.call(alice, 'GET', '/api/sources?kind=url')).json().total).toBe(0);
  });

  it('checks the settings of each kind, naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ kind: 'directory' }, 'body.directory'],
      [{ kind: 'upload', url: { urls: ['https://example.com/'] } }, 'body.url'],
      [{ kind: 'url', url: { urls: ['ftp://example.com/file'] } }, 'body.url.urls.0'],
      [{ kind: 'url', url: { urls: ['https://user:pw@example.com/'] } }, 'body.url.urls.0'],
      [
        {
          kind: 'url',
          url: { urls: ['https://example.com/', 'https://evil.test/'], allow_hosts: ['example.com'] },
        },
        'body.url.urls.1',
      ],
      [
        { kind: 'upload', chunking: { target_tokens: 100, overlap_tokens: 100 } },
        'body.chunking.overlap_tokens',
      ],
      [{ kind: 'upload', chunking: { target_tokens: 1 } }, 'body.chunking.target_tokens'],
      [{ kind: 'folder' }, 'body.kind'],
      [
        { kind: 'directory', directory: { path: '.', include: ['**/*.md', '{a,b}'.repeat(7)] } },
        'body.directory.include.1',
      ],
      [{ kind: 'directory', directory: { path: '.', exclude: ['[unclosed'] } }, 'body.directory.exclude.0'],
    ];
    for (const [body, field] of cases) {
      const response = await t.call(alice, 'POST', '/api/sources', { name: 'Checked', ...body });
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.json().errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  it('updates names and settings; new settings rebuild the index', async () => {
    const source = await buildSource(t, alice, { name: 'Renamed before' });
    await buildSource(t, alice, { name: 'Taken name' });
    const renamed = await t.call(alice, 'PUT', `/api/sources/${source.id}`, { name: 'Renamed after' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'Renamed after', indexing: { status: 'idle' } });
    const taken = await t.call(alice, 'PUT', `/api/sources/${source.id}`, { name: 'Taken name' });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().code).toBe('duplicate_source');
    const foreign = await t.call(alice, 'PUT', `/api/sources/${source.id}`, {
      url: { urls: ['https://x.test/'] },
    });
    expect(foreign.json().errors[0].field).toBe('body.url');

    const document = (
      await upload(t, alice, { name: 'u.md', content: guide('update') }, { source_id: source.id })
    ).json();
    await settledDocument(t, alice, document.id);
    const rechunk = await t.call(alice, 'PUT', `/api/sources/${source.id}`, {
      chunking: { target_tokens: 200, overlap_tokens: 20 },
    });
    expect(rechunk.statusCode, rechunk.body).toBe(200);
    expect(rechunk.json()).toMatchObject({
      chunking: { target_tokens: 200 },
      indexing: { scope: 'rechunk' },
    });
    expect(await settledSource(t, alice, source.id)).toMatchObject({
      generation: 2,
      indexing: { status: 'completed', documents_done: 1 },
    });
    expect((await t.call(mallory, 'PUT', `/api/sources/${source.id}`, { name: 'Mine' })).statusCode).toBe(
      404,
    );
  });

  it('a new folder syncs the source; a folder outside the root is refused', async () => {
    write('first/a.md', guide('first'));
    write('second/b.md', guide('second'));
    const source = await buildSource(t, alice, { kind: 'directory', directory: { path: 'first' } });
    await settledSource(t, alice, source.id);
    const escaping = await t.call(alice, 'PUT', `/api/sources/${source.id}`, {
      directory: { path: '../..' },
    });
    expect(escaping.json().errors[0].field).toBe('body.directory.path');
    const moved = await t.call(alice, 'PUT', `/api/sources/${source.id}`, { directory: { path: 'second' } });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json().indexing.scope).toBe('sync');
    await settledSource(t, alice, source.id);
    const documents = (await t.call(alice, 'GET', `/api/documents?source_id=${source.id}`)).json().items;
    expect(documents.map((d: { origin: string }) => d.origin)).toEqual(['b.md']);
  });

  it('refuses a directory outside SOURCES_ROOT: .., absolute, a link out, a missing folder', async () => {
    fs.mkdirSync(path.join(root, 'inside'), { recursive: true });
    fs.symlinkSync(outside, path.join(root, 'escape'));
    for (const requested of [
      '../',
      `../${path.basename(outside)}`,
      '/etc',
      outside,
      'escape',
      'inside/../..',
      'nowhere',
    ]) {
      const response = await t.call(alice, 'POST', '/api/sources', {
        name: 'Escaping',
        kind: 'directory',
        directory: { path: requested },
      });
      expect(response.statusCode, requested).toBe(400);
      expect(response.json().errors[0].field).toBe('body.directory.path');
      expect(response.body).not.toContain(sourcesRoot);
    }
  });
});

describe('uploads', () => {
  it('accepts a Markdown file into the default upload source and processes it in the background', async () => {
    const response = await upload(
      t,
      alice,
      { name: 'guide.md', content: guide('widgets'), type: 'text/markdown' },
      { tags: ['howto', 'setup, widgets'], metadata: '{"team":"docs","version":2}' },
    );
    expect(response.statusCode, response.body).toBe(201);
    const document = response.json();
    expect(response.headers.location).toBe(`/api/documents/${document.id}`);
    expect(document).toMatchObject({
      title: 'widgets guide',
      filename: 'guide.md',
      format: 'markdown',
      media_type: 'text/markdown',
      status: 'processing',
      tags: ['howto', 'setup', 'widgets'],
      metadata: { team: 'docs', version: 2 },
      size_bytes: Buffer.byteLength(guide('widgets')),
      content_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      created_by: 'alice',
    });
    const processed = await settledDocument(t, alice, document.id);
    expect(processed).toMatchObject({ status: 'processed', failure_reason: null });
    expect(processed.chunk_count).toBeGreaterThan(0);
    expect(processed.indexed_at).not.toBeNull();
    expect(await kinds(alice, document.id)).toEqual(['document.uploaded', 'document.processed']);

    const sources = (await t.call(alice, 'GET', '/api/sources?q=uploads')).json().items;
    const defaults = sources.filter((source: { is_default: boolean }) => source.is_default);
    expect(defaults).toHaveLength(1);
    expect(defaults[0]).toMatchObject({
      id: document.source_id,
      kind: 'upload',
      name: 'Uploads',
      document_count: 1,
    });
  });

  it('takes a real PDF, HTML page and CSV, and refuses a PDF without text', async () => {
    const fixture = (name: string) =>
      fs.readFileSync(path.join(import.meta.dirname, '../fixtures/knowledge', name));
    for (const [name, format] of [
      ['guide.pdf', 'pdf'],
      ['page.html', 'html'],
      ['people.csv', 'csv'],
      ['sample.ts', 'code'],
    ] as const) {
      const response = await upload(t, alice, { name, content: fixture(name) });
      expect(response.statusCode, `${name}: ${response.body}`).toBe(201);
      const processed = await settledDocument(t, alice, response.json().id);
      expect(processed, name).toMatchObject({ status: 'processed', format });
      expect(processed.chunk_count, name).toBeGreaterThan(0);
    }
    const scanned = await upload(t, alice, { name: 'scanned.pdf', content: fixture('scanned.pdf') });
    expect(scanned.statusCode).toBe(422);
    expect(scanned.json()).toMatchObject({ code: 'document_without_text', errors: [{ field: 'body.file' }] });
  });

  it('answers the same bytes in the same source with the existing document (200), and a new document elsewhere', async () => {
    const content = guide('duplicates');
    const first = await upload(t, alice, { name: 'a.md', content });
    expect(first.statusCode).toBe(201);
    const again = await upload(t, alice, { name: 'renamed.md', content });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ id: first.json().id, filename: 'a.md' });
    const other = await buildSource(t, alice);
    const elsewhere = await upload(t, alice, { name: 'a.md', content }, { source_id: other.id });
    expect(elsewhere.statusCode).toBe(201);
    expect(elsewhere.json().id).not.toBe(first.json().id);
    const listed = await t.call(alice, 'GET', `/api/documents?q=A.MD&source_id=${other.id}`);
    expect(listed.json().items.map((d: { id: string }) => d.id)).toEqual([elsewhere.json().id]);
  });

  it('refuses hostile files with 413, 415 or 422 and stores nothing', async () => {
    const source = await buildSource(t, alice);
    const zip = Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(200, 7)]);
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      Buffer.alloc(100, 0),
    ]);
    const cases: [string, { name: string; content: string | Buffer; type?: string }, number, string[]][] = [
      ['empty', { name: 'empty.md', content: '' }, 422, ['empty_document']],
      ['whitespace', { name: 'blank.txt', content: ' \n\t\n ' }, 422, ['empty_document']],
      [
        'a zip',
        { name: 'archive.zip', content: zip, type: 'application/zip' },
        415,
        ['unsupported_document_type'],
      ],
      [
        'a zip named like Markdown',
        { name: 'notes.md', content: zip },
        415,
        ['unsupported_document_type', 'document_type_mismatch'],
      ],
      [
        'a PNG lying about its type',
        { name: 'notes.md', content: png, type: 'text/markdown' },
        415,
        ['document_type_mismatch', 'unsupported_document_type'],
      ],
      ['text named .pdf', { name: 'report.pdf', content: 'just text' }, 415, ['document_type_mismatch']],
      [
        'a corrupt PDF',
        { name: 'broken.pdf', content: '%PDF-1.7\n1 0 obj <</Type /Catalog' },
        422,
        ['corrupt_document'],
      ],
      ['too large', { name: 'big.txt', content: 'x'.repeat(MAX_BYTES + 1) }, 413, ['payload_too_large']],
    ];
    for (const [what, file, status, codes] of cases) {
      const response = await upload(t, alice, file, { source_id: source.id });
      expect(response.statusCode, `${what}: ${response.body}`).toBe(status);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(codes, what).toContain(response.json().code);
      expect(response.json().errors[0].field, what).toBe('body.file');
    }
    const stored = await t.call(alice, 'GET', `/api/documents?source_id=${source.id}`);
    expect(stored.json().total).toBe(0);
  });

  it('refuses malformed forms naming the field, never a 500', async () => {
    const source = await buildSource(t, alice);
    const file = { name: 'ok.md', content: guide('forms') };
    const cases: [string, () => ReturnType<typeof upload>, number, string, string][] = [
      ['no file', () => upload(t, alice, undefined, { tags: 'x' }), 400, 'validation_failed', 'body.file'],
      [
        'bad metadata',
        () => upload(t, alice, file, { metadata: '{nope' }),
        400,
        'validation_failed',
        'body.metadata',
      ],
      [
        'array metadata',
        () => upload(t, alice, file, { metadata: '[1]' }),
        400,
        'validation_failed',
        'body.metadata',
      ],
      [
        'metadata with NUL',
        () => upload(t, alice, file, { metadata: '{"a\\u0000":1}' }),
        400,
        'validation_failed',
        'body.metadata.a\\u0000',
      ],
      [
        'bad source_id',
        () => upload(t, alice, file, { source_id: 'nope' }),
        400,
        'validation_failed',
        'body.source_id',
      ],
      [
        'long tag',
        () => upload(t, alice, file, { tags: 'x'.repeat(65) }),
        400,
        'validation_failed',
        'body.tags.0',
      ],
      [
        'unknown field',
        () => upload(t, alice, file, { colour: 'red' }),
        400,
        'validation_failed',
        'body.colour',
      ],
      [
        'a directory source',
        async () => {
          fs.mkdirSync(path.join(root, 'forms'), { recursive: true });
          const folder = await buildSource(t, alice, { kind: 'directory', directory: { path: 'forms' } });
          return upload(t, alice, file, { source_id: folder.id });
        },
        400,
        'validation_failed',
        'body.source_id',
      ],
      [
        'JSON instead of a form',
        () => t.call(alice, 'POST', '/api/documents/upload', { file: 'x' }),
        415,
        'unsupported_media_type',
        'headers.content-type',
      ],
      [
        'text instead of a form',
        () =>
          t.call(alice, 'POST', '/api/documents/upload', 'hello', {
            headers: { 'content-type': 'text/plain' },
          }),
        415,
        'unsupported_media_type',
        'headers.content-type',
      ],
      [
        'a broken form',
        () =>
          t.call(
            alice,
            'POST',
            '/api/documents/upload',
            '--x\r\nContent-Disposition: form-data; name="file"',
            {
              headers: { 'content-type': 'multipart/form-data; boundary=x' },
            },
          ),
        400,
        'invalid_multipart',
        'body',
      ],
    ];
    for (const [what, send, status, code, field] of cases) {
      const response = await send();
      expect(response.statusCode, `${what}: ${response.body}`).toBe(status);
      expect(response.json(), what).toMatchObject({ code });
      expect(
        response.json().errors.map((e: { field: string }) => e.field),
        what,
      ).toContain(field);
    }
    expect((await t.call(alice, 'GET', `/api/documents?source_id=${source.id}`)).json().total).toBe(0);
  });

  it('keeps only the name of a file name with folders or control characters', async () => {
    const response = await upload(t, alice, { name: '../../etc/pass\u0001wd.md', content: guide('names') });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().filename).toBe('passwd.md');
  });
});

describe('documents', () => {
  it('lists with source_id, q, tag and status filters, newest first, and deletes', async () => {
    const source = await buildSource(t, alice);
    const ids: string[] = [];
    for (const [name, tags] of [
      ['alpha.md', 'red'],
      ['beta.md', 'blue'],
      ['gamma.txt', 'red'],
    ] as const) {
      const response = await upload(t, alice, { name, content: guide(name) }, { source_id: source.id, tags });
      ids.push(response.json().id);
      await settledDocument(t, alice, response.json().id);
    }
    const list = (query: string) => t.call(alice, 'GET', `/api/documents?source_id=${source.id}&${query}`);
    expect((await list('')).json().items.map((d: { id: string }) => d.id)).toEqual([...ids].reverse());
    expect((await list('tag=red')).json().total).toBe(2);
    expect((await list('q=BETA')).json().items[0].id).toBe(ids[1]);
    expect((await list('status=processed')).json().total).toBe(3);
    expect((await list('status=failed')).json().total).toBe(0);
    expect((await list('limit=1&offset=1')).json()).toMatchObject({ total: 3, limit: 1, offset: 1 });

    expect((await t.call(alice, 'DELETE', `/api/documents/${ids[0]}`)).statusCode).toBe(204);
    expect((await t.call(alice, 'GET', `/api/documents/${ids[0]}`)).json().code).toBe('document_not_found');
    expect((await t.call(alice, 'DELETE', `/api/documents/${ids[0]}`)).statusCode).toBe(404);
    expect((await list('')).json().total).toBe(2);
  });

  it('counts documents by state for the system metrics', async () => {
    const workspace = await t.newWorkspace('counter');
    const done = await upload(t, workspace, { name: 'one.md', content: guide('counts') });
    await settledDocument(t, workspace, done.json().id);
    expect(await t.services.knowledge.documentCounts(workspace.workspaceId)).toEqual({
      processed: 1,
      processing: 0,
      failed: 0,
    });
  });

  it('deleting a source deletes its documents and their stored text', async () => {
    const source = await buildSource(t, alice);
    const document = (
      await upload(t, alice, { name: 'gone.md', content: guide('gone') }, { source_id: source.id })
    ).json();
    await settledDocument(t, alice, document.id);
    expect((await t.call(alice, 'DELETE', `/api/sources/${source.id}`)).statusCode).toBe(204);
    expect((await t.call(alice, 'GET', `/api/sources/${source.id}`)).json().code).toBe('source_not_found');
    expect((await t.call(alice, 'GET', `/api/documents/${document.id}`)).statusCode).toBe(404);
    const left = await t.rows<{ n: number }>(
      sql`select count(*)::int as n from document_contents where document_id = ${document.id}`,
    );
    expect(left[0]?.n).toBe(0);
  });
});

describe('directory sources', () => {
  it('indexes a folder recursively with globs, skipping links out and files over the limit', async () => {
    write('handbook/intro.md', guide('intro'));
    write('handbook/deep/nested/setup.md', guide('setup'));
    write('handbook/drafts/wip.md', guide('wip'));
    write('handbook/notes.txt', 'plain notes about the handbook');
    write('handbook/image.bin', Buffer.alloc(10, 1));
    write('handbook/huge.md', `# Huge\n\n${'word '.repeat(MAX_BYTES / 4)}`);
    write('handbook/.hidden.md', guide('hidden'));
    write('handbook/copy-of-intro.md', guide('intro'));
    fs.symlinkSync(path.join(outside, 'secret.md'), path.join(root, 'handbook/secret.md'));
    fs.symlinkSync(outside, path.join(root, 'handbook/outside-folder'));
    fs.symlinkSync(path.join(root, 'handbook/intro.md'), path.join(root, 'handbook/alias.txt'));

    const created = await t.call(alice, 'POST', '/api/sources', {
      name: 'Handbook folder',
      kind: 'directory',
      directory: { path: 'handbook', include: ['**/*.md', '**/*.txt'], exclude: ['drafts/**'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().directory).toEqual({
      path: 'handbook',
      include: ['**/*.md', '**/*.txt'],
      exclude: ['drafts/**'],
    });
    expect(['queued', 'running', 'completed']).toContain(created.json().indexing.status);
    const source = await settledSource(t, alice, created.json().id);
    expect(source.indexing).toMatchObject({ status: 'completed', scope: 'sync', error: null });
    expect(source.generation).toBe(1);

    const documents = (await t.call(alice, 'GET', `/api/documents?source_id=${source.id}&limit=200`)).json()
      .items;
    const byOrigin = Object.fromEntries(documents.map((d: { origin: string }) => [d.origin, d]));
    // alias.txt and copy-of-intro.md hold intro.md's bytes: one document for the three.
    expect(Object.keys(byOrigin).sort()).toEqual([
      'alias.txt',
      'deep/nested/setup.md',
      'huge.md',
      'notes.txt',
    ]);
    expect(byOrigin['deep/nested/setup.md']).toMatchObject({ status: 'processed', filename: 'setup.md' });
    expect(byOrigin['huge.md']).toMatchObject({
      status: 'failed',
      failure_reason: expect.stringContaining('limit'),
    });
    // Copies count as done: every file the run met is accounted for.
    expect(source.indexing).toMatchObject({ documents_total: 6, documents_done: 5, documents_failed: 1 });
    expect(JSON.stringify(documents)).not.toContain('hunter2');
    expect(await kinds(alice, source.id)).toEqual(['source.indexed']);
  });

  it('a second run picks up new, changed, moved and removed files', async () => {
    write('sync/a.md', guide('a'));
    write('sync/b.md', guide('b'));
    write('sync/c.md', guide('c'));
    const created = await buildSource(t, alice, { kind: 'directory', directory: { path: 'sync' } });
    await settledSource(t, alice, created.id);
    const before = (await t.call(alice, 'GET', `/api/documents?source_id=${created.id}`)).json().items;
    const idOf = (items: { origin: string; id: string }[], origin: string) =>
      items.find((d) => d.origin === origin)?.id;

    write('sync/a.md', guide('a, second edition'));
    fs.renameSync(path.join(root, 'sync/b.md'), path.join(root, 'sync/b2.md'));
    fs.rmSync(path.join(root, 'sync/c.md'));
    write('sync/d.md', guide('d'));
    const indexed = await t.call(alice, 'POST', `/api/sources/${created.id}/index`);
    expect(indexed.statusCode, indexed.body).toBe(202);
    const source = await settledSource(t, alice, created.id);
    expect(source.indexing).toMatchObject({ status: 'completed', documents_total: 3, documents_failed: 0 });
    expect(source.generation).toBe(2);
    const after = (await t.call(alice, 'GET', `/api/documents?source_id=${created.id}`)).json().items;
    expect(after.map((d: { origin: string }) => d.origin).sort()).toEqual(['a.md', 'b2.md', 'd.md']);
    expect(idOf(after, 'a.md')).toBe(idOf(before, 'a.md'));
    expect(after.find((d: { origin: string }) => d.origin === 'a.md').title).toBe('a, second edition guide');
    expect(idOf(after, 'b2.md')).toBe(idOf(before, 'b.md'));
  });

  it('fails the run with the reason when the folder is gone', async () => {
    write('vanishing/a.md', guide('vanishing'));
    const created = await buildSource(t, alice, { kind: 'directory', directory: { path: 'vanishing' } });
    await settledSource(t, alice, created.id);
    fs.rmSync(path.join(root, 'vanishing'), { recursive: true });
    await t.call(alice, 'POST', `/api/sources/${created.id}/index`);
    const source = await settledSource(t, alice, created.id);
    expect(source.indexing).toMatchObject({ status: 'failed', error: expect.stringContaining('no such') });
    expect(source.generation).toBe(1);
    expect(await kinds(alice, created.id)).toEqual(['source.indexed', 'source.index_failed']);
    // The documents of the last good run are still there.
    expect((await t.call(alice, 'GET', `/api/documents?source_id=${created.id}`)).json().total).toBe(1);
  });
});

describe('url sources', () => {
  it('fetches pages through the guard, follows allowed redirects only, and records failures', async () => {
    const created = await t.call(alice, 'POST', '/api/sources', {
      name: 'Pages',
      kind: 'url',
      url: {
        urls: [
          `${pagesUrl}/guide.html`,
          `${pagesUrl}/moved`,
          `${pagesUrl}/away`,
          `${pagesUrl}/missing`,
          `${pagesUrl}/big`,
        ],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().url.allow_hosts).toEqual(['127.0.0.1']);
    const source = await settledSource(t, alice, created.json().id);
    expect(source.indexing).toMatchObject({
      status: 'completed',
      documents_total: 5,
      documents_done: 2,
      documents_failed: 3,
    });
    const documents = (await t.call(alice, 'GET', `/api/documents?source_id=${source.id}`)).json().items;
    const byOrigin = Object.fromEntries(documents.map((d: { origin: string }) => [d.origin, d]));
    expect(byOrigin[`${pagesUrl}/guide.html`]).toMatchObject({
      status: 'processed',
      format: 'html',
      media_type: 'text/html',
      filename: 'guide.html',
    });
    expect(byOrigin[`${pagesUrl}/moved`]).toMatchObject({ status: 'processed', title: 'notes guide' });
    expect(byOrigin[`${pagesUrl}/away`]).toMatchObject({
      status: 'failed',
      failure_reason: expect.stringContaining('localhost is not among'),
    });
    expect(byOrigin[`${pagesUrl}/missing`].failure_reason).toContain('HTTP 404');
    expect(byOrigin[`${pagesUrl}/big`].failure_reason).toContain('larger than the limit');
  });

  it('refuses private addresses under the workspace policy unless loopback is allowed', async () => {
    const created = await buildSource(t, alice, {
      kind: 'url',
      url: { urls: ['http://10.255.255.1/page'] },
    });
    const source = await settledSource(t, alice, created.id);
    const [document] = (await t.call(alice, 'GET', `/api/documents?source_id=${source.id}`)).json().items;
    expect(document).toMatchObject({ status: 'failed' });
    expect(document.failure_reason).toMatch(/private|refused/i);
  });
});

describe('reindex', () => {
  it('rebuilds a source into a new generation and documents in place, with progress', async () => {
    const source = await buildSource(t, alice);
    const ids: string[] = [];
    for (const name of ['r1.md', 'r2.md']) {
      const response = await upload(t, alice, { name, content: guide(name) }, { source_id: source.id });
      ids.push(response.json().id);
      await settledDocument(t, alice, response.json().id);
    }
    const whole = await t.call(alice, 'POST', '/api/documents/reindex', { source_id: source.id });
    expect(whole.statusCode, whole.body).toBe(202);
    expect(whole.json().sources).toHaveLength(1);
    expect(whole.json().sources[0]).toMatchObject({
      id: source.id,
      indexing: { scope: 'rechunk', documents_total: 2 },
    });
    const rebuilt = await settledSource(t, alice, source.id);
    expect(rebuilt).toMatchObject({ generation: 2, indexing: { status: 'completed', documents_done: 2 } });

    const some = await t.call(alice, 'POST', '/api/documents/reindex', { document_ids: [ids[1]] });
    expect(some.statusCode, some.body).toBe(202);
    const inPlace = await settledSource(t, alice, source.id);
    expect(inPlace).toMatchObject({
      generation: 2,
      indexing: { status: 'completed', scope: 'documents', documents_total: 1, documents_done: 1 },
    });
    expect(await kinds(alice, source.id)).toEqual(['source.indexed', 'source.indexed']);
    const again = await t.call(alice, 'POST', `/api/sources/${source.id}/index`);
    expect(again.statusCode).toBe(202);
    expect((await settledSource(t, alice, source.id)).generation).toBe(3);
  });

  it('names document ids that are not the workspace’s (or the source’s) by position', async () => {
    const source = await buildSource(t, alice);
    const other = await buildSource(t, alice);
    const document = (
      await upload(t, alice, { name: 'x.md', content: guide('positions') }, { source_id: other.id })
    ).json();
    const foreign = await t.call(alice, 'POST', '/api/documents/reindex', {
      document_ids: [document.id, '00000000-0000-4000-8000-000000000000'],
    });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().errors).toEqual([{ field: 'body.document_ids.1', message: expect.any(String) }]);
    const wrongSource = await t.call(alice, 'POST', '/api/documents/reindex', {
      source_id: source.id,
      document_ids: [document.id],
    });
    expect(wrongSource.json().errors[0].field).toBe('body.document_ids.0');
  });
});

describe('search over knowledge', () => {
  const fixture = (name: string) =>
    fs.readFileSync(path.join(import.meta.dirname, '../fixtures/knowledge', name));
  const search = (actor: Actor, body: Record<string, unknown>) =>
    t.call(actor, 'POST', '/api/documents/search', body);
  const chunkCount = async (where: ReturnType<typeof sql>) =>
    (await t.rows<{ n: number }>(sql`select count(*)::int as n from chunks where ${where}`))[0]?.n;

  it('finds the right passages of an uploaded PDF and Markdown file, with their headings', async () => {
    const reader = await t.newWorkspace('reader');
    const source = await buildSource(t, reader, { name: 'Field notes' });
    const ids: Record<string, string> = {};
    for (const name of ['guide.pdf', 'guide.md']) {
      const response = await upload(t, reader, { name, content: fixture(name) }, { source_id: source.id });
      ids[name] = response.json().id;
      expect((await settledDocument(t, reader, response.json().id)).status).toBe('processed');
    }
    const compost = await search(reader, { query: 'what makes a compost heap smell of ammonia' });
    expect(compost.statusCode, compost.body).toBe(200);
    expect(compost.json().results[0]).toMatchObject({
      document: {
        id: ids['guide.pdf'],
        title: 'Composting at Home',
        source: { id: source.id, name: 'Field notes' },
      },
    });
    expect(compost.json().results[0].chunk.text).toContain('ammonia');
    const homebrew = await search(reader, { query: 'install with Homebrew on macOS' });
    const first = homebrew.json().results[0];
    expect(first.document.id).toBe(ids['guide.md']);
    expect(first.chunk.heading_path).toEqual(['Field Guide', 'Install', 'macOS']);
    // Another workspace finds nothing of it.
    expect((await search(mallory, { query: 'compost heap ammonia' })).json().results).toEqual([]);
  });

  it('deleting a document, or its source, takes its chunks with it', async () => {
    const source = await buildSource(t, alice);
    const names = ['zephyrine alpha', 'zephyrine beta'];
    const ids: string[] = [];
    for (const topic of names) {
      const response = await upload(
        t,
        alice,
        { name: `${topic}.md`, content: guide(topic) },
        { source_id: source.id },
      );
      ids.push(response.json().id);
      await settledDocument(t, alice, response.json().id);
    }
    const found = async () =>
      (await search(alice, { query: 'zephyrine', source_ids: [source.id] }))
        .json()
        .results.map((result: { document: { id: string } }) => result.document.id);
    expect((await found()).sort()).toEqual([...ids].sort());
    expect(await chunkCount(sql`document_id = ${ids[0]}`)).toBeGreaterThan(0);

    await t.call(alice, 'DELETE', `/api/documents/${ids[0]}`);
    expect(await chunkCount(sql`document_id = ${ids[0]}`)).toBe(0);
    expect(await found()).toEqual([ids[1]]);

    await t.call(alice, 'DELETE', `/api/sources/${source.id}`);
    expect(await chunkCount(sql`source_id = ${source.id}`)).toBe(0);
    expect((await search(alice, { query: 'zephyrine' })).json().results).toEqual([]);
  });

  it('a rebuild leaves one generation of chunks, searchable throughout', async () => {
    const source = await buildSource(t, alice, { chunking: { target_tokens: 400, overlap_tokens: 40 } });
    const document = (
      await upload(t, alice, { name: 'gen.md', content: guide('quillwort') }, { source_id: source.id })
    ).json();
    await settledDocument(t, alice, document.id);
    const before = (await search(alice, { query: 'quillwort installer', source_ids: [source.id] })).json()
      .results[0];
    expect(before.document.id).toBe(document.id);
    await t.call(alice, 'PUT', `/api/sources/${source.id}`, {
      chunking: { target_tokens: 100, overlap_tokens: 0 },
    });
    // Every search while the run works answers from one generation or the other, never none.
    for (;;) {
      const results = (await search(alice, { query: 'quillwort installer', source_ids: [source.id] })).json()
        .results;
      expect(results.map((r: { document: { id: string } }) => r.document.id)).toEqual([document.id]);
      const current = (await t.call(alice, 'GET', `/api/sources/${source.id}`)).json();
      if (current.indexing.status === 'completed') break;
    }
    const generations = await t.rows<{ generation: number }>(
      sql`select distinct generation from chunks where source_id = ${source.id}`,
    );
    expect(generations).toEqual([{ generation: 2 }]);
    const after = (await search(alice, { query: 'quillwort installer', source_ids: [source.id] })).json()
      .results[0];
    expect(after.chunk.id).not.toBe(before.chunk.id);
  });
});

describe('workspace isolation', () => {
  it('hides every source and document of another workspace: 404 by id, absent from lists', async () => {
    const source = await buildSource(t, alice);
    const document = (
      await upload(t, alice, { name: 'private.md', content: guide('private') }, { source_id: source.id })
    ).json();
    await settledDocument(t, alice, document.id);
    for (const [method, url] of [
      ['GET', `/api/sources/${source.id}`],
      ['POST', `/api/sources/${source.id}/index`],
      ['DELETE', `/api/sources/${source.id}`],
      ['GET', `/api/documents/${document.id}`],
      ['DELETE', `/api/documents/${document.id}`],
    ] as const) {
      expect((await t.call(mallory, method, url)).statusCode, `${method} ${url}`).toBe(404);
    }
    expect(
      (await t.call(mallory, 'GET', '/api/sources')).json().items.map((s: { id: string }) => s.id),
    ).not.toContain(source.id);
    expect((await t.call(mallory, 'GET', `/api/documents?source_id=${source.id}`)).json().total).toBe(0);
    const into = await upload(
      t,
      mallory,
      { name: 'in.md', content: guide('intrusion') },
      { source_id: source.id },
    );
    expect(into.statusCode).toBe(404);
    const reindex = await t.call(mallory, 'POST', '/api/documents/reindex', { document_ids: [document.id] });
    expect(reindex.statusCode).toBe(400);
    expect(
      (await t.call(mallory, 'POST', '/api/documents/reindex', { source_id: source.id })).statusCode,
    ).toBe(404);
    // Alice's document is untouched.
    expect((await t.call(alice, 'GET', `/api/documents/${document.id}`)).json().status).toBe('processed');
  });

  it('lets a viewer read but not write', async () => {
    const viewer = await t.actor('alice-viewer', alice.workspaceId);
    await t.call(alice, 'POST', '/api/workspaces/members', { user_id: 'alice-viewer', role: 'viewer' });
    expect((await t.call(viewer, 'GET', '/api/sources')).statusCode).toBe(200);
    expect((await t.call(viewer, 'POST', '/api/sources', { name: 'v', kind: 'upload' })).statusCode).toBe(
      403,
    );
    expect((await upload(t, viewer, { name: 'v.md', content: guide('viewer') })).statusCode).toBe(403);
  });
});

describe('processing', () => {
  it('picks up a document left processing (a lost job) when the sweep runs', async () => {
    const response = await upload(t, alice, { name: 'stranded.md', content: guide('stranded') });
    const id = response.json().id;
    await settledDocument(t, alice, id);
    await t.rows(sql`update documents set status = 'processing', processing_attempts = 0 where id = ${id}`);
    expect(await t.services.knowledge.recoverStranded(0)).toBeGreaterThanOrEqual(1);
    const done = await pollUntil(t, alice, `/api/documents/${id}`, (d) => d.status === 'processed');
    expect(done.chunk_count).toBeGreaterThan(0);
  });

  it('fails a document whose job keeps being delivered past the limit', async () => {
    const response = await upload(t, alice, { name: 'doomed.md', content: guide('doomed') });
    const id = response.json().id;
    await settledDocument(t, alice, id);
    await t.rows(sql`update documents set status = 'processing', processing_attempts = 5 where id = ${id}`);
    await t.services.knowledge.recoverStranded(0);
    const failed = await settledDocument(t, alice, id);
    expect(failed).toMatchObject({ status: 'failed', failure_reason: expect.stringContaining('gave up') });
    expect(await kinds(alice, id)).toContain('document.failed');
  });
});
