import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildMember, buildSource, tenantFolder } from '../helpers/factories.ts';
import { settledSource } from '../helpers/knowledge.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * One tenant's files are not another's (issue 23, point 1.5). Each tenant reads only its own
 * subtree of SOURCES_ROOT, `<SOURCES_ROOT>/<tenant id>`: tenant B names tenant A's folder every
 * way a path can name it, as a knowledge source and as a code graph project, and is refused
 * each time with a 400 naming the field; nothing of A's reaches B's index.
 */

let t: TestApp;
let sourcesRoot: string;
let alice: Actor;
let bob: Actor;
let aliceFolder: string;
let bobFolder: string;
let aliceTenant: string;
const SECRET = 'alice_private_marker';

beforeAll(async () => {
  sourcesRoot = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'sources-per-tenant-')));
  t = await createTestApp({ env: { SOURCES_ROOT: sourcesRoot } });
  alice = await t.newWorkspace('tenant-a-owner');
  bob = await t.newWorkspace('tenant-b-owner');
  aliceFolder = await tenantFolder(t, alice, sourcesRoot);
  bobFolder = await tenantFolder(t, bob, sourcesRoot);
  aliceTenant = path.basename(aliceFolder);
  fs.mkdirSync(path.join(aliceFolder, 'handbook'), { recursive: true });
  fs.writeFileSync(path.join(aliceFolder, 'handbook', 'secret.md'), `# Secret\n\n${SECRET}\n`);
  fs.writeFileSync(path.join(aliceFolder, 'handbook', 'secret.ts'), `export function ${SECRET}() {}\n`);
  // Links in B's own folder that lead into A's: followed to their real path, they are outside.
  fs.symlinkSync(aliceFolder, path.join(bobFolder, 'to-alice'));
  fs.symlinkSync(path.join(aliceFolder, 'handbook'), path.join(bobFolder, 'to-handbook'));
  fs.symlinkSync(sourcesRoot, path.join(bobFolder, 'to-root'));
  fs.mkdirSync(path.join(bobFolder, 'own'), { recursive: true });
  fs.writeFileSync(path.join(bobFolder, 'own', 'notes.md'), '# Notes\n\nBob’s own notes.\n');
  fs.writeFileSync(path.join(bobFolder, 'own', 'notes.ts'), 'export function bobsOwn() {}\n');
});
afterAll(async () => {
  await t.close();
  fs.rmSync(sourcesRoot, { recursive: true, force: true });
});

/** Tenant A's folder as tenant B might name it. */
function hostile(): string[] {
  return [
    // A's subtree named relative to the shared root, as the single-folder layout allowed.
    `${aliceTenant}/handbook`,
    aliceTenant,
    // Climbing out of B's subtree.
    `../${aliceTenant}/handbook`,
    `../${aliceTenant}`,
    '..',
    'own/../../',
    `own/../../${aliceTenant}/handbook`,
    // Absolute paths: A's folder, the root, the system.
    path.join(aliceFolder, 'handbook'),
    aliceFolder,
    sourcesRoot,
    '/etc',
    // Links planted in B's folder that lead into A's (or the root).
    'to-alice',
    'to-alice/handbook',
    'to-handbook',
    'to-root',
    `to-root/${aliceTenant}/handbook`,
    // URL-encoded and otherwise disguised forms (paths are taken literally, never decoded).
    `..%2F${aliceTenant}%2Fhandbook`,
    `%2e%2e/${aliceTenant}/handbook`,
    `..\\${aliceTenant}\\handbook`,
    `./../${aliceTenant}/handbook`,
    `own/./../../${aliceTenant}`,
  ];
}

describe('knowledge directory sources', () => {
  it('read the tenant’s own folder, relative to its subtree', async () => {
    const source = await buildSource(t, bob, { kind: 'directory', directory: { path: 'own' } });
    const settled = await settledSource(t, bob, source.id);
    expect(settled.indexing).toMatchObject({ status: 'completed', documents_done: 2 });
    const member = await buildMember(t, alice, { role: 'admin' });
    const shared = await t.call(member, 'POST', '/api/sources', {
      name: 'Handbook',
      kind: 'directory',
      directory: { path: 'handbook' },
    });
    expect(shared.statusCode, shared.body).toBe(201);
  });

  it('refuse every way tenant B names tenant A’s folder, with 400 naming the field', async () => {
    for (const requested of hostile()) {
      const response = await t.call(bob, 'POST', '/api/sources', {
        name: `Escape ${requested}`,
        kind: 'directory',
        directory: { path: requested },
      });
      expect(response.statusCode, requested).toBe(400);
      expect(response.json().errors, requested).toEqual([
        { field: 'body.directory.path', message: expect.any(String) },
      ]);
      expect(response.body).not.toContain(sourcesRoot);
    }
    // Moving an existing source of B's onto A's folder is refused the same way.
    const own = await buildSource(t, bob, { kind: 'directory', directory: { path: 'own' } });
    await settledSource(t, bob, own.id);
    for (const requested of hostile()) {
      const moved = await t.call(bob, 'PUT', `/api/sources/${own.id}`, { directory: { path: requested } });
      expect(moved.statusCode, requested).toBe(400);
      expect(moved.json().errors[0].field).toBe('body.directory.path');
    }
    const search = await t.call(bob, 'POST', '/api/documents/search', { query: SECRET });
    expect(search.json().results).toEqual([]);
  });

  it('answer 400 when the operator has not provisioned the tenant’s folder', async () => {
    const carol = await t.newWorkspace('tenant-c-owner');
    const response = await t.call(carol, 'POST', '/api/sources', {
      name: 'Nothing yet',
      kind: 'directory',
      directory: { path: '.' },
    });
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().errors).toEqual([
      {
        field: 'body.directory.path',
        message: expect.stringContaining('no server-side folder has been provisioned'),
      },
    ]);
    expect(response.body).not.toContain(sourcesRoot);
  });
});

describe('code graph directory projects', () => {
  it('index the tenant’s own folder, relative to its subtree', async () => {
    const response = await t.call(bob, 'POST', '/api/codegraph/index', {
      project: 'own',
      source: { directory: 'own' },
    });
    expect(response.statusCode, response.body).toBe(200);
  });

  it('refuse every way tenant B names tenant A’s folder, with 400 naming the field', async () => {
    for (const requested of hostile()) {
      const response = await t.call(bob, 'POST', '/api/codegraph/index', {
        project: 'stolen',
        source: { directory: requested },
      });
      expect(response.statusCode, requested).toBe(400);
      expect(response.json().errors, requested).toEqual([
        { field: 'body.source.directory', message: expect.any(String) },
      ]);
      expect(response.body).not.toContain(sourcesRoot);
    }
    expect((await t.call(bob, 'GET', '/api/codegraph/projects/stolen')).statusCode).toBe(404);
  });
});
