import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServiceWorkspace } from '../../../tests/helpers/service-factories.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import type { Db } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { createLocalEventHub } from '../../events/event-hub.ts';
import { createGuardedFetch } from '../../lib/net/guarded-fetch.ts';
import { createLogger } from '../../logger.ts';
import { createActivityService } from '../activity/activity.service.ts';
import { createMemoryTicketStore } from '../activity/ws-tickets.ts';
import { createRetrievalService, type RetrievalService } from '../retrieval/retrieval.service.ts';
import { createSettingsService } from '../settings/settings.service.ts';
import { createDocumentIndexer, type DocumentIndexer, MAX_DELIVERIES } from './document-indexer.ts';
import { createKnowledgeService, type KnowledgeService } from './knowledge.service.ts';

let t: TestDb;
let db: Db;
let root: string;
let retrieval: RetrievalService;
/** What the services handed the queue; nothing consumes it, so each test drives the indexer itself. */
const enqueued: { documents: string[]; runs: [string, string][] } = { documents: [], runs: [] };

const log = createLogger('silent');

function services(options: { sourcesRoot?: string; retrieval?: RetrievalService } = {}) {
  const activity = createActivityService(db, {
    hub: createLocalEventHub(),
    tickets: createMemoryTicketStore(),
  });
  const shared = {
    db,
    retrieval: options.retrieval ?? retrieval,
    activity: { record: activity.record },
    // One folder for every workspace here: the per-tenant subtree is wired in services.ts.
    ...('sourcesRoot' in options && options.sourcesRoot === undefined
      ? {}
      : { sourcesRootOf: async () => options.sourcesRoot ?? root }),
  };
  const knowledge: KnowledgeService = createKnowledgeService({
    ...shared,
    enqueueDocument: async (id) => {
      enqueued.documents.push(id);
    },
    enqueueRun: async (sourceId, runId) => {
      enqueued.runs.push([sourceId, runId]);
    },
    onEnqueueError: () => {},
  });
  const indexer: DocumentIndexer = createDocumentIndexer({
    ...shared,
    maxBytes: 1_000_000,
    fetchFor: () => createGuardedFetch(() => ({ refusePrivateNetworks: true })),
    log,
  });
  return { knowledge, indexer };
}

beforeAll(async () => {
  t = await createTestDb({ env: { DB_QUEUE_TIMEOUT_MS: '30000' } });
  db = t.database.db;
  retrieval = createRetrievalService({
    db,
    settings: createSettingsService(db),
    // Keyword-only sources never reach a provider or the vault.
    models: { embed: () => Promise.reject(new Error('no embedding provider in these tests')) },
    credentials: { get: () => Promise.reject(new Error('no vault in these tests')) },
  });
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'knowledge-service-'));
});
afterAll(async () => {
  await t.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const newCaller = () => buildServiceWorkspace(db, 'knower');

const markdown = (topic: string) => Buffer.from(`# ${topic}\n\nAll about ${topic}.\n`);
const never = new AbortController().signal;

/** The run the service last handed to the queue for `sourceId`. */
const lastRun = (sourceId: string) => {
  const run = enqueued.runs.findLast(([id]) => id === sourceId);
  if (!run) throw new Error(`no run was enqueued for ${sourceId}`);
  return run[1];
};

describe('sources', () => {
  it('refuses directory sources when SOURCES_ROOT is not set', async () => {
    const { knowledge } = services({ sourcesRoot: undefined });
    const caller = await newCaller();
    const error = await knowledge
      .createSource(caller, { name: 'Folder', kind: 'directory', directory: { path: '.' } })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, errors: [{ field: 'body.directory.path' }] });
    expect((error as Error).message).toContain('SOURCES_ROOT');
  });

  it('starts one run at a time: a second while one is queued is 409, and none of a batch starts', async () => {
    const { knowledge } = services();
    const caller = await newCaller();
    const first = await knowledge.createSource(caller, { name: 'One', kind: 'upload' });
    const second = await knowledge.createSource(caller, { name: 'Two', kind: 'upload' });
    const started = await knowledge.indexSource(caller, first.id);
    expect(started.index_status).toBe('queued');
    await expect(knowledge.indexSource(caller, first.id)).rejects.toMatchObject({
      status: 409,
      code: 'source_indexing',
    });
    // Every source of the workspace: the busy one refuses, so the other does not start either.
    await expect(knowledge.reindex(caller, {})).rejects.toMatchObject({ code: 'source_indexing' });
    expect((await knowledge.getSource(caller, second.id)).index_status).toBe('idle');
  });
});

describe('the indexer', () => {
  it('processes an upload once however often its job is delivered', async () => {
    const { knowledge, indexer } = services();
    const caller = await newCaller();
    const { document } = await knowledge.upload(caller, {
      filename: 'once.md',
      bytes: markdown('once'),
      tags: [],
      metadata: {},
    });
    expect(enqueued.documents).toContain(document.id);
    await Promise.all([
      indexer.processDocument(document.id, never),
      indexer.processDocument(document.id, never),
    ]);
    await indexer.processDocument(document.id, never);
    const processed = await knowledge.getDocument(caller, document.id);
    expect(processed).toMatchObject({ status: 'processed', indexed_generation: 1 });
    const events = await t.rows<{ kind: string }>(
      sql`select kind from activity_events where subject_id = ${document.id} order by id`,
    );
    expect(events.map((event) => event.kind)).toEqual(['document.uploaded', 'document.processed']);
  });

  it('keeps a document processing while its embeddings fail, then gives up with the last error', async () => {
    // The embedding provider (the true edge) refuses every call.
    const refusing: RetrievalService = {
      ...retrieval,
      prepare: async () => {
        throw new AppError(502, 'provider_error', 'the embedding provider answered 503');
      },
    };
    const { knowledge, indexer } = services({ retrieval: refusing });
    const caller = await newCaller();
    const { document } = await knowledge.upload(caller, {
      filename: 'refused.md',
      bytes: markdown('refused'),
      tags: [],
      metadata: {},
    });
    for (let delivery = 1; delivery <= MAX_DELIVERIES; delivery++) {
      await expect(indexer.processDocument(document.id, never)).rejects.toThrow('503');
    }
    expect(await knowledge.getDocument(caller, document.id)).toMatchObject({
      status: 'processing',
      failure_reason: 'the embedding provider answered 503',
    });
    await indexer.processDocument(document.id, never);
    expect(await knowledge.getDocument(caller, document.id)).toMatchObject({
      status: 'failed',
      failure_reason: `processing gave up after ${MAX_DELIVERIES} attempts: the embedding provider answered 503`,
    });
  });

  it('continues a run after a delivery that stopped half-way, counting each file once', async () => {
    fs.mkdirSync(path.join(root, 'resume'));
    for (const name of ['a', 'b', 'c', 'd'])
      fs.writeFileSync(path.join(root, 'resume', `${name}.md`), markdown(name));
    // The real search index, with the worker "dying" after its second document.
    const dying = new AbortController();
    let prepared = 0;
    const interrupted: RetrievalService = {
      ...retrieval,
      prepare: async (...args) => {
        prepared += 1;
        if (prepared === 3) dying.abort(new Error('the worker died'));
        dying.signal.throwIfAborted();
        return retrieval.prepare(...args);
      },
    };
    const caller = await newCaller();
    const first = services({ retrieval: interrupted });
    const source = await first.knowledge.createSource(caller, {
      name: 'Resumable',
      kind: 'directory',
      directory: { path: 'resume' },
    });
    const runId = lastRun(source.id);
    await expect(first.indexer.runSource(source.id, runId, dying.signal)).rejects.toThrow();
    const half = await first.knowledge.getSource(caller, source.id);
    expect(half).toMatchObject({ index_status: 'running', documents_total: 4, documents_done: 2 });

    const second = services();
    await second.indexer.runSource(source.id, runId, never);
    const done = await second.knowledge.getSource(caller, source.id);
    expect(done).toMatchObject({
      index_status: 'completed',
      index_attempts: 2,
      generation: 1,
      documents_total: 4,
      documents_done: 4,
      documents_failed: 0,
      document_count: 4,
    });
    // A late duplicate delivery of the finished run changes nothing.
    await second.indexer.runSource(source.id, runId, never);
    expect(await second.knowledge.getSource(caller, source.id)).toEqual(done);
  });

  it('an upload processed while its source is rebuilt ends up in the new generation', async () => {
    const caller = await newCaller();
    const { knowledge, indexer } = services();
    const source = await knowledge.createSource(caller, { name: 'Rebuilt', kind: 'upload' });
    const upload = (name: string) =>
      knowledge.upload(caller, {
        sourceId: source.id,
        filename: `${name}.md`,
        bytes: markdown(name),
        tags: [],
        metadata: {},
      });
    const { document: old } = await upload('old');
    await indexer.processDocument(old.id, never);
    await knowledge.indexSource(caller, source.id);
    const { document: late } = await upload('late');
    // The late upload is processed (into the current generation) while the run works.
    let once = false;
    const meanwhile: RetrievalService = {
      ...retrieval,
      prepare: async (...args) => {
        if (!once) {
          once = true;
          await indexer.processDocument(late.id, never);
        }
        return retrieval.prepare(...args);
      },
    };
    const rebuilding = services({ retrieval: meanwhile });
    await rebuilding.indexer.runSource(source.id, lastRun(source.id), never);
    expect(await knowledge.getSource(caller, source.id)).toMatchObject({
      generation: 2,
      index_status: 'completed',
    });
    for (const id of [old.id, late.id]) {
      expect(await knowledge.getDocument(caller, id)).toMatchObject({
        status: 'processed',
        indexed_generation: 2,
      });
    }
  });

  it('searches answer from the old generation until a rebuild completes, then from the new one', async () => {
    const caller = await newCaller();
    const { knowledge, indexer } = services();
    const source = await knowledge.createSource(caller, { name: 'Swapped', kind: 'upload' });
    for (const topic of ['swapfern one', 'swapfern two']) {
      const { document } = await knowledge.upload(caller, {
        sourceId: source.id,
        filename: `${topic}.md`,
        bytes: Buffer.from(`# ${topic}\n\n${`The ${topic} grows in shade. `.repeat(40)}\n`),
        tags: [],
        metadata: {},
      });
      await indexer.processDocument(document.id, never);
    }
    const hits = async () =>
      (await retrieval.search(caller, { query: 'swapfern shade', top_k: 10 })).results
        .map((result) => `${result.document.id}/${result.chunk.id}`)
        .sort();
    const before = await hits();
    expect(before).toHaveLength(2);

    await knowledge.updateSource(caller, source.id, { chunking: { target_tokens: 64, overlap_tokens: 0 } });
    // The second document is prepared once the first one's new chunks are written: search then.
    let during: string[] = [];
    let prepared = 0;
    const watching: RetrievalService = {
      ...retrieval,
      prepare: async (...args) => {
        prepared += 1;
        if (prepared === 2) during = await hits();
        return retrieval.prepare(...args);
      },
    };
    await services({ retrieval: watching }).indexer.runSource(source.id, lastRun(source.id), never);
    expect(during).toEqual(before);
    const after = await hits();
    expect(after.map((hit) => hit.split('/')[0])).toEqual(before.map((hit) => hit.split('/')[0]));
    expect(after).not.toEqual(before);
    const generations = await t.rows<{ generation: number }>(
      sql`select distinct generation from chunks where source_id = ${source.id}`,
    );
    expect(generations).toEqual([{ generation: 2 }]);
  });

  it('fails a run whose folder left the root, keeping the documents it had', async () => {
    fs.mkdirSync(path.join(root, 'leaving'));
    fs.writeFileSync(path.join(root, 'leaving', 'a.md'), markdown('leaving'));
    const caller = await newCaller();
    const { knowledge, indexer } = services();
    const source = await knowledge.createSource(caller, {
      name: 'Leaving',
      kind: 'directory',
      directory: { path: 'leaving' },
    });
    await indexer.runSource(source.id, lastRun(source.id), never);
    fs.rmSync(path.join(root, 'leaving'), { recursive: true });
    fs.symlinkSync(os.tmpdir(), path.join(root, 'leaving'));
    await knowledge.indexSource(caller, source.id);
    await indexer.runSource(source.id, lastRun(source.id), never);
    expect(await knowledge.getSource(caller, source.id)).toMatchObject({
      index_status: 'failed',
      index_error: expect.stringContaining('outside'),
      generation: 1,
      document_count: 1,
    });
  });
});

describe('recovery', () => {
  it('hands the queue every processing document and unfinished run', async () => {
    const { knowledge } = services();
    const caller = await newCaller();
    const { document } = await knowledge.upload(caller, {
      filename: 'stranded.md',
      bytes: markdown('stranded'),
      tags: [],
      metadata: {},
    });
    const source = await knowledge.createSource(caller, { name: 'Stranded', kind: 'upload' });
    await knowledge.indexSource(caller, source.id);
    enqueued.documents.length = 0;
    enqueued.runs.length = 0;
    expect(await knowledge.recoverStranded(60_000)).toBe(0);
    await knowledge.recoverStranded(0);
    expect(enqueued.documents).toContain(document.id);
    expect(enqueued.runs.map(([id]) => id)).toContain(source.id);
  });
});
