import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildZip, sampleZipEntries } from '../../../tests/helpers/archives.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import { createLocalEventHub } from '../../events/event-hub.ts';
import { createLogger } from '../../logger.ts';
import { type ActivityService, createActivityService } from '../activity/activity.service.ts';
import { createMemoryTicketStore } from '../activity/ws-tickets.ts';
import { createWorkspacesService } from '../workspaces/workspaces.service.ts';
import { type CodegraphService, createCodegraphService, type IndexJobPayload } from './codegraph.service.ts';

/**
 * Background indexing as the job runs it, with the queue replaced by a list the test drains
 * in the order it chooses: superseded requests, failures, interrupted attempts, recovery.
 */

let db: TestDb;
let root: string;
let activity: ActivityService;

beforeAll(async () => {
  db = await createTestDb();
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'codegraph-service-')));
  activity = createActivityService(db.database.db, {
    hub: createLocalEventHub(),
    tickets: createMemoryTicketStore(),
  });
});
afterAll(async () => {
  await db.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** The service with background indexing only (`syncMaxBytes: 0`) and the jobs it enqueues. */
function wire(options: { sourcesRoot?: string; syncMaxBytes?: number } = {}) {
  const queued: IndexJobPayload[] = [];
  const codegraph = createCodegraphService({
    db: db.database.db,
    activity: { record: activity.record },
    enqueue: async (payload) => {
      queued.push(payload);
    },
    // One folder for every workspace here: the per-tenant subtree is wired in services.ts.
    ...('sourcesRoot' in options && options.sourcesRoot === undefined
      ? {}
      : { sourcesRootOf: async () => options.sourcesRoot ?? root }),
    syncMaxBytes: options.syncMaxBytes ?? 0,
    log: createLogger('silent'),
  });
  return { codegraph, queued };
}

let seq = 0;
async function newCaller() {
  seq += 1;
  const userId = `indexer-${seq}`;
  const workspace = await createWorkspacesService(db.database.db).createWorkspace(userId, {
    name: `ws ${seq}`,
  });
  return { userId, workspaceId: workspace.id };
}

function writeFolder(name: string, files: Record<string, string>): string {
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name, file)), { recursive: true });
    fs.writeFileSync(path.join(root, name, file), text);
  }
  return name;
}

const names = async (
  codegraph: CodegraphService,
  caller: { workspaceId: string },
  project: string,
  q: string,
) => (await codegraph.search(caller, project, { q, limit: 50 })).results.map((hit) => hit.qualified_name);

const run = (codegraph: CodegraphService, payload: IndexJobPayload) =>
  codegraph.runIndexJob(payload, new AbortController().signal);

describe('background indexing', () => {
  it('answers at once with the project indexing; the job makes it ready and records the activity', async () => {
    const { codegraph, queued } = wire();
    const caller = await newCaller();
    const outcome = await codegraph.index(caller, 'bg', {
      archive: buildZip(sampleZipEntries()),
      filename: 'a.zip',
    });
    expect(outcome.background).toBe(true);
    expect(outcome.project).toMatchObject({ status: 'indexing', active_generation: 0, last_generation: 1 });
    expect(await codegraph.search(caller, 'bg', { q: 'add', limit: 5 })).toMatchObject({
      project: { status: 'indexing' },
      results: [],
    });
    expect(queued).toEqual([
      {
        project_id: outcome.project.id,
        workspace_id: caller.workspaceId,
        generation: 1,
        requested_by: caller.userId,
      },
    ]);
    await run(codegraph, queued[0] as IndexJobPayload);
    expect(await codegraph.getProject(caller, 'bg')).toMatchObject({ status: 'ready', active_generation: 1 });
    expect(await names(codegraph, caller, 'bg', 'add')).toContain('add');
    const feed = await activity.list(caller, { kind: ['codegraph.indexed'], limit: 10 });
    expect(feed.items).toEqual([
      expect.objectContaining({ kind: 'codegraph.indexed', actor: caller.userId }),
    ]);
    // The stored upload is gone once indexed.
    const uploads = await db.rows(
      sql`select 1 from codegraph_uploads where project_id = ${outcome.project.id}`,
    );
    expect(uploads).toEqual([]);
  });

  it('a newer request wins, whichever job finishes last', async () => {
    const { codegraph, queued } = wire();
    const caller = await newCaller();
    const first = writeFolder('v1', { 'a.ts': 'export function first() {}\n' });
    const second = writeFolder('v2', { 'a.ts': 'export function second() {}\n' });
    await codegraph.index(caller, 'race', { directory: first });
    await codegraph.index(caller, 'race', { directory: second });
    const [older, newer] = queued as [IndexJobPayload, IndexJobPayload];
    // The project row says v2 now: the older job is superseded and does nothing.
    await run(codegraph, newer);
    await run(codegraph, older);
    expect(await codegraph.getProject(caller, 'race')).toMatchObject({
      status: 'ready',
      active_generation: 2,
    });
    expect(await names(codegraph, caller, 'race', 'second')).toEqual(['second']);
    expect(await names(codegraph, caller, 'race', 'first')).toEqual([]);
    // A delivery of the finished job again changes nothing either.
    await run(codegraph, newer);
    const generations = await db.rows<{ generation: number }>(
      sql`select distinct generation from codegraph_symbols where project_id = ${(await codegraph.getProject(caller, 'race')).id}`,
    );
    expect(generations).toEqual([{ generation: 2 }]);
  });

  it('a source gone by the time the job runs ends the project failed, with the reason in the feed', async () => {
    const { codegraph, queued } = wire();
    const caller = await newCaller();
    await codegraph.index(caller, 'vanishing', {
      directory: writeFolder('vanishing', { 'a.py': 'def a():\n  pass\n' }),
    });
    fs.rmSync(path.join(root, 'vanishing'), { recursive: true });
    await run(codegraph, queued[0] as IndexJobPayload);
    const project = await codegraph.getProject(caller, 'vanishing');
    expect(project).toMatchObject({ status: 'failed', active_generation: 0 });
    expect(project.error).toMatch(/no such file or directory/);
    const feed = await activity.list(caller, { kind: ['codegraph.failed'], limit: 10 });
    expect(feed.items).toEqual([
      expect.objectContaining({ kind: 'codegraph.failed', message: expect.stringContaining('vanishing') }),
    ]);
  });

  it('a failed re-index keeps the previous graph searchable', async () => {
    const { codegraph, queued } = wire();
    const caller = await newCaller();
    await codegraph.index(caller, 'kept', {
      directory: writeFolder('kept', { 'a.ts': 'export function kept() {}\n' }),
    });
    await run(codegraph, queued[0] as IndexJobPayload);
    await codegraph.index(caller, 'kept', {
      directory: writeFolder('kept-next', { 'a.ts': 'export function n() {}\n' }),
    });
    fs.rmSync(path.join(root, 'kept-next'), { recursive: true });
    await run(codegraph, queued[1] as IndexJobPayload);
    expect(await codegraph.getProject(caller, 'kept')).toMatchObject({
      status: 'failed',
      active_generation: 1,
    });
    expect(await names(codegraph, caller, 'kept', 'kept')).toEqual(['kept']);
  });

  it('an attempt interrupted half way is redone from the start, without duplicates', async () => {
    const { codegraph, queued } = wire();
    const caller = await newCaller();
    await codegraph.index(caller, 'redo', {
      directory: writeFolder('redo', { 'a.ts': 'export function redo() {}\n' }),
    });
    const payload = queued[0] as IndexJobPayload;
    const stopping = new AbortController();
    stopping.abort(new Error('the process is stopping'));
    await expect(codegraph.runIndexJob(payload, stopping.signal)).rejects.toThrow();
    expect(await codegraph.getProject(caller, 'redo')).toMatchObject({ status: 'indexing' });
    await run(codegraph, payload);
    expect(await names(codegraph, caller, 'redo', 'redo')).toEqual(['redo']);
  });

  it('recovery hands every unfinished index to the queue again', async () => {
    const { codegraph, queued } = wire();
    const caller = await newCaller();
    const outcome = await codegraph.index(caller, 'lost', {
      archive: buildZip(sampleZipEntries()),
      filename: null,
    });
    queued.length = 0;
    expect(await codegraph.recoverUnfinished()).toBeGreaterThanOrEqual(1);
    expect(queued).toContainEqual({
      project_id: outcome.project.id,
      workspace_id: caller.workspaceId,
      generation: 1,
    });
    await run(codegraph, queued.find((job) => job.project_id === outcome.project.id) as IndexJobPayload);
    expect(await codegraph.getProject(caller, 'lost')).toMatchObject({ status: 'ready' });
  });

  it('a timeout fails the index', async () => {
    const { codegraph, queued } = wire();
    const caller = await newCaller();
    await codegraph.index(caller, 'slow', { archive: buildZip(sampleZipEntries()), filename: null });
    await codegraph.failIndex(queued[0] as IndexJobPayload, 'indexing took longer than 30 minutes');
    expect(await codegraph.getProject(caller, 'slow')).toMatchObject({
      status: 'failed',
      error: 'indexing took longer than 30 minutes',
    });
  });
});

describe('directories', () => {
  it('without SOURCES_ROOT, a directory is refused with 409 and nothing is created', async () => {
    const { codegraph } = wire({ sourcesRoot: undefined });
    const caller = await newCaller();
    await expect(codegraph.index(caller, 'nowhere', { directory: 'src' })).rejects.toMatchObject({
      status: 409,
      code: 'sources_root_not_configured',
    });
    await expect(codegraph.getProject(caller, 'nowhere')).rejects.toMatchObject({ status: 404 });
  });
});
