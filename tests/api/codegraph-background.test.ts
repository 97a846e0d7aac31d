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
      progress: { phase: 'parsing', files_done: 0, files_total: 3 },
      indexed_at: null,
    });
    const project = await settled('queued');
    expect(project).toMatchObject({ status: 'ready', stats: { files: 3, symbols: 4 }, progress: null });
    const search = await t.call(owner, 'GET', '/api/codegraph/search?project=queued&q=build');
    expect(search.json().results[0]).toMatchObject({ name: 'build', language: 'python', doc: 'Builds it.' });
    expect(search.json().results[0].callees).toEqual([expect.objectContaining({ qualified_name: 'run' })]);
    const feed = await t.call(owner, 'GET', '/api/activity?kind=codegraph.started&kind=codegraph.indexed');
    expect(feed.json().items).toEqual([
      expect.objectContaining({ kind: 'codegraph.indexed', subject_id: project.id, actor: owner.userId }),
      expect.objectContaining({
        kind: 'codegraph.started',
        subject_id: project.id,
        actor: owner.userId,
        data: { name: 'queued', files: 3 },
      }),
    ]);
  });

  it('shows files done of files found while a large project is indexed', async () => {
    const files = 3000;
    const entries = Array.from({ length: files }, (_, i) => ({
      name: `pkg/module_${i}.py`,
      data: `def step_${i}(x):\n    return step_${(i + 1) % files}(x) + ${i}\n`,
    }));
    const { payload, headers } = await formBody(
      { project: 'large' },
      { archive: { data: buildZip(entries), filename: 'large.zip' } },
    );
    const response = await t.call(owner, 'POST', '/api/codegraph/index', payload, { headers });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().progress).toEqual({ phase: 'parsing', files_done: 0, files_total: files });
    // Every state a client polling sees: files done never go back, and never past those found.
    const seen: Array<{ phase: string; files_done: number; files_total: number }> = [];
    await expect
      .poll(
        async () => {
          const project = (await t.call(owner, 'GET', '/api/codegraph/projects/large')).json();
          if (project.progress) seen.push(project.progress);
          return project.status;
        },
        { timeout: 60_000, interval: 100 },
      )
      .toBe('ready');
    const done = seen.map((progress) => progress.files_done);
    expect(done).toEqual([...done].sort((a, b) => a - b));
    for (const progress of seen) {
      expect(progress.files_total).toBe(files);
      expect(progress.files_done).toBeLessThanOrEqual(files);
    }
    const project = (await t.call(owner, 'GET', '/api/codegraph/projects/large')).json();
    expect(project).toMatchObject({ progress: null, stats: { files } });
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
