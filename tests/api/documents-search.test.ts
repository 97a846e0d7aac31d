import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.ts';
import type { EmbeddingSettings, IndexedChunk } from '../../src/modules/retrieval/retrieval.service.ts';
import type { Actor } from '../helpers/api-client.ts';
import { buildMember } from '../helpers/factories.ts';
import { insertDocument, insertSource } from '../helpers/knowledge-rows.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * POST /api/documents/search: validation, the three modes, filters, min_score, workspace
 * isolation, the reindex swap as searches see it, embeddings through a provider of the
 * workspace's settings (a loopback OpenAI-compatible server), and the hit-rate.
 *
 * Documents are indexed through the retrieval service as the knowledge module calls it, on
 * stand-in `sources`/`documents` rows until that module's tables exist.
 */

let t: TestApp;
let embeddingServer: LlmServer;
const KEYWORD_ONLY: EmbeddingSettings = { provider: 'none', model: 'none' };

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  embeddingServer = await startOpenAiServer();
});
afterAll(async () => {
  await embeddingServer.close();
  await t.close();
});

interface Doc {
  title?: string;
  tags?: string[];
  /** Sections: a heading path and the text under it, one chunk each. */
  chunks: Array<{ heading?: string[]; text: string }>;
}

/** Indexes documents into a new source of the actor's workspace; returns the source and document ids. */
async function indexSource(
  actor: Actor,
  documents: Doc[],
  options: { embedding?: EmbeddingSettings; generation?: number; sourceId?: string; name?: string } = {},
) {
  const db = t.database.db;
  const sourceId = options.sourceId ?? (await insertSource(db, actor.workspaceId, options.name)).id;
  const ids: string[] = [];
  for (const document of documents) {
    const { id } = await insertDocument(db, actor.workspaceId, sourceId, {
      ...(document.title ? { title: document.title } : {}),
      ...(document.tags ? { tags: document.tags } : {}),
    });
    const chunks: IndexedChunk[] = document.chunks.map((chunk, position) => ({
      position,
      text: chunk.text,
      headingPath: chunk.heading ?? [],
      tokenCount: chunk.text.split(/\s+/).length,
    }));
    const prepared = await t.services.retrieval.prepare(
      actor.workspaceId,
      options.embedding ?? KEYWORD_ONLY,
      chunks,
    );
    await inTransaction(db, (tx) =>
      t.services.retrieval.indexDocument(
        tx,
        { workspaceId: actor.workspaceId, sourceId, documentId: id, generation: options.generation ?? 1 },
        prepared,
      ),
    );
    ids.push(id);
  }
  return { sourceId, ids };
}

const search = (actor: Actor, body: Record<string, unknown>) =>
  t.call(actor, 'POST', '/api/documents/search', body);

const GARDENING: Doc[] = [
  {
    title: 'Tomatoes',
    tags: ['garden', 'vegetables'],
    chunks: [
      {
        heading: ['Tomatoes', 'Planting'],
        text: 'Plant tomato seedlings after the last frost in rich soil.',
      },
      {
        heading: ['Tomatoes', 'Watering'],
        text: 'Water tomatoes deeply twice a week; tomato leaves dislike wet evenings.',
      },
    ],
  },
  {
    title: 'Roses',
    tags: ['garden', 'flowers'],
    chunks: [{ heading: ['Roses'], text: 'Prune roses in late winter and feed them in spring.' }],
  },
  {
    title: 'Compost',
    chunks: [{ text: 'Compost turns kitchen scraps into soil for vegetables and flowers.' }],
  },
];

describe('POST /api/documents/search', () => {
  it('refuses bad input with a problem naming the field', async () => {
    const actor = await t.newWorkspace();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'body.query'],
      [{ query: '' }, 'body.query'],
      [{ query: 'x', top_k: 0 }, 'body.top_k'],
      [{ query: 'x', top_k: 101 }, 'body.top_k'],
      [{ query: 'x', mode: 'fuzzy' }, 'body.mode'],
      [{ query: 'x', source_ids: ['not-a-uuid'] }, 'body.source_ids.0'],
      [{ query: 'x', tags: [] }, 'body.tags'],
      [{ query: 'x', min_score: 'high' }, 'body.min_score'],
      [{ query: 'x', weights: { keyword: -1 } }, 'body.weights.keyword'],
      [{ query: 'x', surprise: true }, 'body.surprise'],
    ];
    for (const [body, field] of cases) {
      const response = await search(actor, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      const fields = (response.json().errors ?? []).map((error: { field: string }) => error.field);
      expect(fields, JSON.stringify(body)).toContain(field);
    }
  });

  it('needs a caller; viewers may search', async () => {
    const owner = await t.newWorkspace();
    expect((await search(undefined as unknown as Actor, { query: 'x' })).statusCode).toBe(401);
    const viewer = await buildMember(t, owner, { role: 'viewer' });
    expect((await search(viewer, { query: 'tomato' })).statusCode).toBe(200);
  });

  it('finds the passage with its heading path, document, source and highlights (keyword by default)', async () => {
    const actor = await t.newWorkspace();
    const { sourceId, ids } = await indexSource(actor, GARDENING, { name: 'Garden notes' });
    const response = await search(actor, { query: 'how often should I water tomatoes?' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.mode).toBe('keyword');
    expect(typeof body.took_ms).toBe('number');
    const [first] = body.results;
    expect(first.document).toEqual({
      id: ids[0],
      title: 'Tomatoes',
      filename: 'Tomatoes.md',
      tags: ['garden', 'vegetables'],
      source: { id: sourceId, name: 'Garden notes' },
    });
    expect(first.chunk.heading_path).toEqual(['Tomatoes', 'Watering']);
    expect(first.chunk.position).toBe(1);
    expect(first.chunk.text).toContain('Water tomatoes deeply');
    // The other chunk of the document matches "tomato" too: it is a highlight, not a result.
    expect(first.highlights).toHaveLength(1);
    expect(first.highlights[0].heading_path).toEqual(['Tomatoes', 'Planting']);
    expect(first.highlights[0].score).toBeLessThan(first.score);
    // Keyword mode: the BM25 part is the score; no vector arm ran.
    expect(first.scores).toEqual({ keyword: first.score, vector: null });
    expect(first.scores.keyword).toBeGreaterThan(0);
    expect(body.results.map((r: { document: { id: string } }) => r.document.id)).toEqual([ids[0]]);
  });

  it('filters by source, by tags and by min_score', async () => {
    const actor = await t.newWorkspace();
    const garden = await indexSource(actor, GARDENING);
    const other = await indexSource(actor, [
      { title: 'Soil', tags: ['lab'], chunks: [{ text: 'Soil samples were analysed for nitrogen.' }] },
    ]);
    const ids = async (body: Record<string, unknown>) =>
      (await search(actor, { query: 'soil', ...body }))
        .json()
        .results.map((r: { document: { id: string } }) => r.document.id);

    expect((await ids({})).sort()).toEqual([garden.ids[0], garden.ids[2], other.ids[0]].sort());
    expect(await ids({ source_ids: [other.sourceId] })).toEqual([other.ids[0]]);
    expect((await ids({ tags: ['vegetables', 'lab'] })).sort()).toEqual([garden.ids[0], other.ids[0]].sort());
    expect(await ids({ tags: ['nothing-has-this'] })).toEqual([]);
    const all = (await search(actor, { query: 'soil' })).json().results;
    const cut = (all[0].score + all[all.length - 1].score) / 2;
    const above = await ids({ min_score: cut });
    expect(above.length).toBeGreaterThan(0);
    expect(above.length).toBeLessThan(all.length);
    expect(await ids({ top_k: 1 })).toHaveLength(1);
  });

  it('never shows another workspace’s chunks, whatever the filters name', async () => {
    const mine = await t.newWorkspace();
    const theirs = await t.newWorkspace();
    const secret = await indexSource(theirs, [
      { title: 'Payroll', chunks: [{ text: 'The zyzzyva payroll ledger of the other workspace.' }] },
    ]);
    await indexSource(mine, [{ title: 'Mine', chunks: [{ text: 'Nothing about that here.' }] }]);
    for (const body of [{ query: 'zyzzyva payroll' }, { query: 'zyzzyva', source_ids: [secret.sourceId] }]) {
      const response = await search(mine, body);
      expect(response.statusCode).toBe(200);
      expect(response.json().results).toEqual([]);
    }
    // The statistics are per workspace too: the other workspace's words are unknown here.
    expect((await search(theirs, { query: 'zyzzyva' })).json().results).toHaveLength(1);
  });

  it('keeps answering from the active generation until the new one is activated', async () => {
    const actor = await t.newWorkspace();
    const { sourceId, ids } = await indexSource(actor, [
      { title: 'Policy', chunks: [{ text: 'Refunds are granted within fourteen days.' }] },
    ]);
    const documentId = ids[0] as string;
    const prepared = await t.services.retrieval.prepare(actor.workspaceId, KEYWORD_ONLY, [
      { position: 0, text: 'Refunds are granted within thirty days.', headingPath: [], tokenCount: 6 },
    ]);
    await inTransaction(t.database.db, (tx) =>
      t.services.retrieval.indexDocument(
        tx,
        { workspaceId: actor.workspaceId, sourceId, documentId, generation: 2 },
        prepared,
      ),
    );
    const text = async () =>
      (await search(actor, { query: 'refunds' }))
        .json()
        .results.map((r: { chunk: { text: string } }) => r.chunk.text);
    expect(await text()).toEqual(['Refunds are granted within fourteen days.']);
    expect((await search(actor, { query: 'thirty' })).json().results).toEqual([]);

    await inTransaction(t.database.db, (tx) =>
      t.services.retrieval.activateGeneration(tx, actor.workspaceId, sourceId, 2),
    );
    expect(await text()).toEqual(['Refunds are granted within thirty days.']);
    // The old generation is gone, statistics included: one chunk, one document frequency.
    const stats = await t.rows<{ chunks: number }>(
      sql`select coalesce(sum(chunks), 0)::int as chunks from index_stats where workspace_id = ${actor.workspaceId}`,
    );
    expect(stats[0]?.chunks).toBe(1);
    // Writing into a generation older than the active one is refused.
    await expect(
      inTransaction(t.database.db, (tx) =>
        t.services.retrieval.indexDocument(
          tx,
          { workspaceId: actor.workspaceId, sourceId, documentId, generation: 1 },
          prepared,
        ),
      ),
    ).rejects.toMatchObject({ status: 409, code: 'index_generation_stale' });
  });

  it('forgets removed documents and sources, statistics included', async () => {
    const actor = await t.newWorkspace();
    const first = await indexSource(actor, [
      { chunks: [{ text: 'alpha beta' }] },
      { chunks: [{ text: 'alpha gamma' }] },
    ]);
    const second = await indexSource(actor, [{ chunks: [{ text: 'alpha delta' }] }]);
    await inTransaction(t.database.db, (tx) =>
      t.services.retrieval.removeDocument(tx, actor.workspaceId, first.ids[0] as string),
    );
    expect((await search(actor, { query: 'beta' })).json().results).toEqual([]);
    expect((await search(actor, { query: 'alpha' })).json().results).toHaveLength(2);
    await inTransaction(t.database.db, (tx) =>
      t.services.retrieval.removeSource(tx, actor.workspaceId, second.sourceId),
    );
    expect((await search(actor, { query: 'alpha' })).json().results).toHaveLength(1);
    const df = await t.rows<{ df: number }>(sql`select coalesce(sum(chunks), 0)::int as df from term_stats
      where workspace_id = ${actor.workspaceId} and lexeme = 'alpha'`);
    expect(df[0]?.df).toBe(1);
  });

  it('counts every search for the hit-rate', async () => {
    const actor = await t.newWorkspace();
    await indexSource(actor, GARDENING);
    await search(actor, { query: 'roses' });
    await search(actor, { query: 'roses', min_score: 1_000 });
    await search(actor, { query: 'submarine' });
    expect(await t.services.retrieval.hitRate(actor.workspaceId)).toEqual({
      searches: 3,
      hits: 1,
      rate: 1 / 3,
    });
  });

  describe('with embeddings from a provider of the workspace', () => {
    let actor: Actor;
    const EMBEDDING: EmbeddingSettings = { provider: 'loop', model: 'embed-small' };

    beforeAll(async () => {
      actor = await t.newWorkspace();
      const saved = await t.call(actor, 'PUT', '/api/settings/providers', {
        providers: [
          { id: 'loop', kind: 'openai_compatible', base_url: embeddingServer.url, credential_id: null },
        ],
        default_model: { provider: 'loop', name: 'chat' },
      });
      expect(saved.statusCode).toBe(200);
    });

    it('validates embedding settings: known provider, one with an embeddings endpoint', async () => {
      await expect(
        t.services.retrieval.validateEmbedding(actor.workspaceId, EMBEDDING),
      ).resolves.toBeUndefined();
      await expect(
        t.services.retrieval.validateEmbedding(actor.workspaceId, KEYWORD_ONLY),
      ).resolves.toBeUndefined();
      await expect(
        t.services.retrieval.validateEmbedding(actor.workspaceId, { provider: 'nope', model: 'x' }),
      ).rejects.toMatchObject({ status: 400, errors: [{ field: 'body.embedding.provider' }] });
    });

    it('searches by vector and fuses both arms in hybrid, the default once embeddings exist', async () => {
      const { ids } = await indexSource(
        actor,
        [
          { title: 'Cats', chunks: [{ text: 'cats purr and sleep in the sun' }] },
          { title: 'Dogs', chunks: [{ text: 'dogs bark and fetch sticks in the park' }] },
          { title: 'Birds', chunks: [{ text: 'birds sing at dawn' }] },
        ],
        { embedding: EMBEDDING },
      );
      const calls = embeddingServer.embeddingRequests().length;
      expect(calls).toBeGreaterThan(0);
      expect(embeddingServer.embeddingRequests()[0]?.body.model).toBe('embed-small');

      const vector = (await search(actor, { query: 'dogs fetch sticks', mode: 'vector' })).json();
      expect(vector.mode).toBe('vector');
      expect(vector.results[0].document.id).toBe(ids[1]);
      expect(vector.results[0].score).toBeGreaterThan(0.5);
      expect(vector.results[0].score).toBeLessThanOrEqual(1.000001);
      // Vector mode: the cosine part is the score of every hit; no keyword arm ran.
      for (const hit of vector.results) expect(hit.scores).toEqual({ keyword: null, vector: hit.score });
      const keyword = (await search(actor, { query: 'dogs fetch sticks', mode: 'keyword' })).json();
      expect(keyword.results.map((r: { document: { id: string } }) => r.document.id)).toEqual([ids[1]]);
      expect(keyword.results[0].scores).toEqual({ keyword: keyword.results[0].score, vector: null });

      const hybrid = (await search(actor, { query: 'dogs fetch sticks' })).json();
      expect(hybrid.mode).toBe('hybrid');
      expect(hybrid.results[0].document.id).toBe(ids[1]);
      // First in both arms: the fused score's top, 1.
      expect(hybrid.results[0].score).toBeCloseTo(1, 6);
      // Found by both arms: each part as that arm scored it on its own, before the fusion.
      const dogs = hybrid.results[0].scores;
      expect(typeof dogs.keyword).toBe('number');
      expect(typeof dogs.vector).toBe('number');
      expect(dogs.keyword).toBeCloseTo(keyword.results[0].score, 9);
      expect(dogs.vector).toBeCloseTo(vector.results[0].score, 9);
      // Found by the vector arm only: no keyword part.
      const others = hybrid.results.slice(1);
      expect(others.length).toBeGreaterThan(0);
      for (const hit of others) {
        expect(hit.scores.keyword).toBeNull();
        expect(typeof hit.scores.vector).toBe('number');
        expect(hit.scores.vector).toBeGreaterThanOrEqual(-1);
        expect(hit.scores.vector).toBeLessThanOrEqual(1.000001);
      }
      // Only the vector arm found the others: weight it out and they score 0.
      const keywordOnly = (
        await search(actor, { query: 'dogs fetch sticks', weights: { vector: 0 } })
      ).json();
      expect(keywordOnly.results.map((r: { document: { id: string } }) => r.document.id)).toEqual([ids[1]]);
      // An arm weighted 0 is not run: its part is null.
      expect(keywordOnly.results[0].scores).toEqual({ keyword: dogs.keyword, vector: null });
      // The query's embedding is cached: the same query again calls no provider.
      const before = embeddingServer.embeddingRequests().length;
      await search(actor, { query: 'dogs fetch sticks', mode: 'vector' });
      expect(embeddingServer.embeddingRequests().length).toBe(before);
    });

    it('searches sizes with an HNSW index through it (384 dimensions, cosine)', async () => {
      const workspace = await t.newWorkspace();
      const saved = await t.call(workspace, 'PUT', '/api/settings/providers', {
        providers: [
          { id: 'loop', kind: 'openai_compatible', base_url: embeddingServer.url, credential_id: null },
        ],
        default_model: { provider: 'loop', name: 'chat' },
      });
      expect(saved.statusCode).toBe(200);
      embeddingServer.embeddingDimensions = 384;
      try {
        const { ids } = await indexSource(
          workspace,
          [
            { title: 'Ships', chunks: [{ text: 'ships sail across the ocean' }] },
            { title: 'Trains', chunks: [{ text: 'trains run on rails between cities' }] },
          ],
          { embedding: { provider: 'loop', model: 'embed-384' } },
        );
        const found = (await search(workspace, { query: 'trains between cities', mode: 'vector' })).json();
        expect(found.results.map((r: { document: { id: string } }) => r.document.id)).toEqual([
          ids[1],
          ids[0],
        ]);
        const stored = await t.rows<{ dimensions: number }>(
          sql`select dimensions from chunk_embeddings where workspace_id = ${workspace.workspaceId}`,
        );
        expect(stored.map((row) => row.dimensions)).toEqual([384, 384]);
      } finally {
        embeddingServer.embeddingDimensions = 64;
      }
    });

    it('answers 502 when the provider fails, and 400 for vector search over keyword-only sources', async () => {
      const keywordOnly = await t.newWorkspace();
      await indexSource(keywordOnly, GARDENING);
      const refused = await search(keywordOnly, { query: 'roses', mode: 'vector' });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().errors[0].field).toBe('body.mode');

      embeddingServer.embeddingError = 500;
      try {
        const failed = await search(actor, { query: 'an uncached query about parrots', mode: 'vector' });
        expect(failed.statusCode).toBe(502);
        expect(failed.json().code).toBe('provider_error');
      } finally {
        embeddingServer.embeddingError = undefined;
      }
    });
  });
});

describe('POST /api/documents/search over in-memory postings (SEARCH_POSTINGS_MIN_CHUNKS=1)', () => {
  let memory: TestApp;
  beforeAll(async () => {
    memory = await createTestApp({ env: { SEARCH_POSTINGS_MIN_CHUNKS: '1' } });
  });
  afterAll(() => memory.close());

  /** Indexes `documents` into a new source of `actor`'s workspace in the second app. */
  async function indexInto(actor: Actor, documents: Doc[]) {
    const db = memory.database.db;
    const sourceId = (await insertSource(db, actor.workspaceId)).id;
    const ids: string[] = [];
    for (const document of documents) {
      const { id } = await insertDocument(db, actor.workspaceId, sourceId, {
        ...(document.title ? { title: document.title } : {}),
        ...(document.tags ? { tags: document.tags } : {}),
      });
      const prepared = await memory.services.retrieval.prepare(
        actor.workspaceId,
        KEYWORD_ONLY,
        document.chunks.map((chunk, position) => ({
          position,
          text: chunk.text,
          headingPath: chunk.heading ?? [],
          tokenCount: chunk.text.split(/\s+/).length,
        })),
      );
      await inTransaction(db, (tx) =>
        memory.services.retrieval.indexDocument(
          tx,
          { workspaceId: actor.workspaceId, sourceId, documentId: id, generation: 1 },
          prepared,
        ),
      );
      ids.push(id);
    }
    return { sourceId, ids };
  }

  it('answers as the SQL path did, filters and isolation included, once the postings are built', async () => {
    const actor = await memory.newWorkspace();
    const other = await memory.newWorkspace();
    const garden = await indexInto(actor, GARDENING);
    const lab = await indexInto(actor, [
      { title: 'Soil', tags: ['lab'], chunks: [{ text: 'Soil samples were analysed for nitrogen.' }] },
    ]);
    await indexInto(other, [{ title: 'Theirs', chunks: [{ text: 'Their soil and their tomatoes.' }] }]);
    const bodies: Array<Record<string, unknown>> = [
      { query: 'how often should I water tomatoes?' },
      { query: 'soil', top_k: 5 },
      { query: 'soil', source_ids: [lab.sourceId] },
      { query: 'soil', tags: ['vegetables', 'lab'] },
      { query: 'soil tomato', min_score: 0.5 },
    ];
    const answers = async (who: Actor) =>
      Promise.all(
        bodies.map(async (body) => {
          const response = await memory.call(who, 'POST', '/api/documents/search', {
            ...body,
            mode: 'keyword',
          });
          expect(response.statusCode).toBe(200);
          const { took_ms: _took, ...rest } = response.json();
          return rest;
        }),
      );
    const inSql = await answers(actor);
    await memory.services.retrieval.postings.settled();
    const served = memory.services.retrieval.postings.usage().served;
    const inMemory = await answers(actor);
    expect(memory.services.retrieval.postings.usage().served).toBeGreaterThan(served);
    expect(inMemory).toEqual(inSql);
    expect(inMemory[0]?.results[0].document.id).toBe(garden.ids[0]);
    expect(inMemory[2]?.results.map((r: { document: { id: string } }) => r.document.id)).toEqual(lab.ids);
    // The other workspace's postings are its own: its words never reach this one.
    const theirs = await memory.call(other, 'POST', '/api/documents/search', { query: 'nitrogen' });
    expect(theirs.json().results).toEqual([]);
    const metrics = await memory.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
    expect(metrics.body).toMatch(/^search_postings_partitions [1-9]/m);
  });
});
