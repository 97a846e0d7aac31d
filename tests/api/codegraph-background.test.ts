import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { buildZip, formBody, sampleZipEntries } from '../helpers/archives.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Background indexing end to end, with CODEGRAPH_SYNC_MAX_BYTES=0 (every index goes to the
 * job queue: in-process, or BullMQ when REDIS_URL is set) and no SOURCES_ROOT.
 */

let t: TestApp;
let owner: Actor;

beforeAll(async () => {
  t = await createTestApp({ env: { CODEGRAPH_SYNC_MAX_BYTES: '0', SOURCES_ROOT: '' } });
  owner = await t.newWorkspace();
});
afterAll(() => t?.close());

/** The project once its status is no longer `indexing` (polling, as a client would). */
async function settled(name: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const project = (await t.call(owner, 'GET', `/api/codegraph/projects/${name}`)).json();
    if (project.status !== 'indexing' || Date.now() > deadline) return project;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('background indexing', () => {
  it('answers 202 with the project indexing; the job makes it ready and searchable', async () => {
    const { payload, headers } = await formBody(
      { project: 'queued' },
      { archive: { data: buildZip(sampleZipEntries()), filename: 'queued.zip' } },
    );
    const response = await t.call(owner, 'POST', '/api/codegraph/index', payload, { headers });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json()).toMatchObject({
      name: 'queued',
      status: 'indexing',
      stats: null,
      indexed_at: null,
    });
    const project = await settled('queued');
    expect(project).toMatchObject({ status: 'ready', stats: { files: 3, symbols: 4 } });
    const search = await t.call(owner, 'GET', '/api/codegraph/search?project=queued&q=build');
    expect(search.json().results[0]).toMatchObject({ name: 'build', language: 'python', doc: 'Builds it.' });
    expect(search.json().results[0].callees).toEqual([expect.objectContaining({ qualified_name: 'run' })]);
    const feed = await t.call(owner, 'GET', '/api/activity?kind=codegraph.indexed');
    expect(feed.json().items).toEqual([
      expect.objectContaining({ kind: 'codegraph.indexed', subject_id: project.id, actor: owner.userId }),
    ]);
  });

  it('refuses a server-side directory when SOURCES_ROOT is not set', async () => {
    const response = await t.call(owner, 'POST', '/api/codegraph/index', {
      project: 'local',
      source: { directory: 'src' },
    });
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({ code: 'sources_root_not_configured' });
  });
});
