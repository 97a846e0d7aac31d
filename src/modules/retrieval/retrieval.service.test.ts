import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertDocument, insertSource } from '../../../tests/helpers/knowledge-rows.ts';
import { buildServiceWorkspace } from '../../../tests/helpers/service-factories.ts';
import { onPostgres } from '../../../tests/helpers/test-app.ts';
import { createTestDb, type TestDb } from '../../../tests/helpers/test-db.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { createSettingsService } from '../settings/settings.service.ts';
import { bm25, type CorpusStats, weighTerms } from './ranking.ts';
import { createRetrievalRepository } from './retrieval.repository.ts';
import {
  createRetrievalService,
  type IndexedChunk,
  NO_EMBEDDING,
  type RetrievalService,
} from './retrieval.service.ts';

let t: TestDb;
let db: Db;
let retrieval: RetrievalService;

beforeAll(async () => {
  t = await createTestDb({ env: { DB_QUEUE_TIMEOUT_MS: '30000' } });
  db = t.database.db;
  retrieval = createRetrievalService({
    db,
    settings: createSettingsService(db),
    // Keyword-only sources never reach a provider or the vault.
    models: { embed: () => Promise.reject(new Error('no embedding provider in these tests')) },
    credentials: { get: () => Promise.reject(new Error('no vault in these tests')) },
    // Small, so that the tests' small corpora go through MaxScore's second pass too.
    firstPassPostings: 60,
  });
});
afterAll(() => t.close());

async function newWorkspace() {
  const workspace = await buildServiceWorkspace(db, 'searcher');
  const source = await insertSource(db, workspace.workspaceId);
  return { ...workspace, sourceId: source.id };
}

const KEYWORD_ONLY = { provider: NO_EMBEDDING, model: NO_EMBEDDING };

const chunk = (text: string, position = 0, headingPath: string[] = []): IndexedChunk => ({
  position,
  text,
  headingPath,
  tokenCount: text.split(/\s+/).length,
});

/** Indexes a new document of `texts` (one chunk each) into the source; returns the document id. */
async function indexDocument(
  scope: { workspaceId: string; sourceId: string },
  texts: string[],
  options: { generation?: number; documentId?: string; title?: string; tags?: string[] } = {},
) {
  const documentId =
    options.documentId ??
    (
      await insertDocument(db, scope.workspaceId, scope.sourceId, {
        ...(options.title ? { title: options.title } : {}),
        ...(options.tags ? { tags: options.tags } : {}),
      })
    ).id;
  const prepared = await retrieval.prepare(
    scope.workspaceId,
    KEYWORD_ONLY,
    texts.map((text, position) => chunk(text, position)),
  );
  await inTransaction(db, (tx) =>
    retrieval.indexDocument(tx, { ...scope, documentId, generation: options.generation ?? 1 }, prepared),
  );
  return documentId;
}

const search = (scope: { workspaceId: string; userId: string }, query: string, topK = 10) =>
  retrieval.search(scope, { query, top_k: topK, mode: 'keyword' });

/** The words of `indexZipfCorpus`, rarest last. */
const ZIPF_WORDS = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}x`);

/** A Zipf-like corpus in `ws`: a few words in most chunks, many rare ones (600 chunks, 5 per document). */
async function indexZipfCorpus(ws: { workspaceId: string; sourceId: string }) {
  const words = ZIPF_WORDS;
  let state = 7;
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  const pick = () =>
    words[Math.min(words.length - 1, Math.floor(Math.exp(random() * Math.log(words.length))) - 1)];
  const texts = Array.from({ length: 600 }, () =>
    Array.from({ length: 5 + Math.floor(random() * 40) }, pick).join(' '),
  );
  for (let i = 0; i < texts.length; i += 5) {
    const documentId = (await insertDocument(db, ws.workspaceId, ws.sourceId)).id;
    const prepared = await retrieval.prepare(
      ws.workspaceId,
      KEYWORD_ONLY,
      texts.slice(i, i + 5).map((text, position) => chunk(text, position)),
    );
    await inTransaction(db, (tx) =>
      retrieval.indexDocument(tx, { ...ws, documentId, generation: 1 }, prepared),
    );
  }
}

describe('BM25', () => {
  it('scores a tiny corpus exactly as computed by hand', async () => {
    const ws = await newWorkspace();
    // Lexemes: appl banana | appl appl cherri | banana cherri date elderberri. N = 3,
    // lengths 2, 3, 4 (average 3); df(appl) = 2, so idf = ln(1 + 1.5 / 2.5) = 0.470004.
    // k1 = 0.9, b = 0.4:
    //   d1: tf 1, len 2: 0.470004 * 1 * 1.9 / (1 + 0.9 * (0.6 + 0.4 * 2/3)) = 0.501689
    //   d2: tf 2, len 3: 0.470004 * 2 * 1.9 / (2 + 0.9 * (0.6 + 0.4 * 3/3)) = 0.615867
    const d1 = await indexDocument(ws, ['apple banana']);
    const d2 = await indexDocument(ws, ['apple apple cherry']);
    await indexDocument(ws, ['banana cherry date elderberry']);

    const found = await search(ws, 'apple');
    expect(found.mode).toBe('keyword');
    expect(found.results.map((r) => r.document.id)).toEqual([d2, d1]);
    expect(found.results[0]?.score).toBeCloseTo(0.615867, 5);
    expect(found.results[1]?.score).toBeCloseTo(0.501689, 5);
  });

  it('ranks a chunk with a rare query term above one with only common terms', async () => {
    const ws = await newWorkspace();
    for (let i = 0; i < 8; i++) await indexDocument(ws, [`the protein binds the receptor in cell ${i}`]);
    const common = await indexDocument(ws, ['protein protein protein receptor receptor cell']);
    const rare = await indexDocument(ws, ['a kinase near the protein']);

    const found = await search(ws, 'kinase protein receptor');
    expect(found.results[0]?.document.id).toBe(rare);
    expect(found.results.map((r) => r.document.id)).toContain(common);
  });

  it('normalises by length: the same match in a shorter chunk scores higher', async () => {
    const ws = await newWorkspace();
    const long = await indexDocument(ws, [
      'telomerase activity was measured in samples from many different tissues and several cohorts of donors',
    ]);
    const short = await indexDocument(ws, ['telomerase activity measured']);
    const found = await search(ws, 'telomerase');
    expect(found.results.map((r) => r.document.id)).toEqual([short, long]);
    expect(found.results[0]?.score).toBeGreaterThan(found.results[1]?.score ?? Infinity);
  });

  it('reads term frequencies exactly from the tsvector, for every count a tsvector holds', async () => {
    const rows = await t.rows<{ n: number; tf: number; truth: number }>(sql`
      select n, bm25_term_frequency(to_tsvector('english', repeat('apple pear ', n)), 'appl'::tsquery) as tf,
        (select cardinality(u.positions) from unnest(to_tsvector('english', repeat('apple pear ', n))) u
          where u.lexeme = 'appl') as truth,
        bm25_term_frequency(to_tsvector('english', repeat('apple pear ', n)), 'kiwi'::tsquery) as absent
      from generate_series(1, 300) n`);
    expect(rows.filter((row) => row.tf !== row.truth)).toEqual([]);
    expect(rows.every((row) => (row as unknown as { absent: number }).absent === 0)).toBe(true);
  });

  it('returns the exact BM25 top results with MaxScore pruning (checked against brute force)', async () => {
    const ws = await newWorkspace();
    const words = ZIPF_WORDS;
    await indexZipfCorpus(ws);
    // Every chunk's term frequencies and length, straight from PostgreSQL.
    const rows = await t.rows<{ id: number; len: number; tfs: Record<string, number> }>(sql`
      select c.id, c.term_count as len,
        (select jsonb_object_agg(u.lexeme, cardinality(u.positions)) from unnest(c.search) u) as tfs
      from chunks c where c.workspace_id = ${ws.workspaceId}`);
    const stats: CorpusStats = { chunks: rows.length, terms: rows.reduce((sum, row) => sum + row.len, 0) };
    const repository = createRetrievalRepository(db);
    for (const query of [
      `${words[0]} ${words[1]} ${words[200]}`,
      `${words[2]} ${words[3]} ${words[4]} ${words[5]}`,
      `${words[1]} ${words[390]}`,
      `${words[0]} ${words[0]} ${words[50]} ${words[120]} ${words[300]}`,
      `${words[5]} ${words[6]} ${words[60]}`,
      `${words[10]} ${words[0]} ${words[1]} ${words[2]}`,
      `${words[30]} ${words[31]} ${words[1]} ${words[0]}`,
      `${words[8]} ${words[9]} ${words[3]}`,
    ]) {
      const terms = weighTerms(
        await repository.queryTerms({ workspaceId: ws.workspaceId }, query as string),
        stats,
      );
      const brute = rows
        .map((row) => ({
          id: Number(row.id),
          score: bm25(terms, new Map(Object.entries(row.tfs)), row.len, stats),
        }))
        .filter((row) => row.score > 0)
        .sort((a, b) => b.score - a.score || a.id - b.id);
      const ranked = await retrieval.search(ws, { query: query as string, top_k: 10, mode: 'keyword' });
      // Each result is a document; their best chunks are the brute-force ranking's first ones per document.
      const bestPerDocument = ranked.results.map((result) => [result.chunk.id, result.score]);
      const expected: Array<[number, number]> = [];
      const seen = new Set<string>();
      const documentOf = new Map(
        (
          await t.rows<{ id: number; document_id: string }>(
            sql`select id, document_id from chunks where workspace_id = ${ws.workspaceId}`,
          )
        ).map((row) => [Number(row.id), row.document_id]),
      );
      for (const row of brute) {
        const documentId = documentOf.get(row.id) as string;
        if (!seen.has(documentId)) {
          seen.add(documentId);
          expected.push([row.id, row.score]);
        }
      }
      expect(bestPerDocument.length).toBe(10);
      expect(bestPerDocument.map(([id]) => id)).toEqual(
        expected.slice(0, bestPerDocument.length).map(([id]) => id),
      );
      for (const [index, [, score]] of bestPerDocument.entries()) {
        expect(score).toBeCloseTo(expected[index]?.[1] as number, 9);
      }
    }
  });
});

describe('the keyword candidate budget', () => {
  it('with exact: false, ranks only the rarest terms’ chunks past the budget and says so; exact by default', async () => {
    const ws = await newWorkspace();
    await indexZipfCorpus(ws);
    const budgeted = createRetrievalService({
      db,
      settings: createSettingsService(db),
      models: { embed: () => Promise.reject(new Error('no embedding provider in these tests')) },
      credentials: { get: () => Promise.reject(new Error('no vault in these tests')) },
      firstPassPostings: 60,
      candidateBudget: 80,
    });
    const words = ZIPF_WORDS;
    // Common words only: MaxScore cannot rule them out, and together they hold hundreds of postings.
    const query = words.slice(4, 13).join(' ');
    const full = await retrieval.search(ws, { query, top_k: 10, mode: 'keyword' });
    expect(full.exact).toBe(true);
    const capped = await budgeted.search(ws, { query, top_k: 10, mode: 'keyword', exact: false });
    expect(capped.exact).toBe(false);
    expect(capped.results.length).toBe(10);
    // Scores stay each chunk's true BM25, best first; only which chunks were ranked differs.
    const trueScore = new Map(full.results.map((result) => [result.chunk.id, result.score]));
    for (const result of capped.results) {
      if (trueScore.has(result.chunk.id))
        expect(result.score).toBeCloseTo(trueScore.get(result.chunk.id) as number, 9);
    }
    const scores = capped.results.map((result) => result.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(capped.results.map((r) => r.chunk.id)).not.toEqual(full.results.map((r) => r.chunk.id));

    const asked = await budgeted.search(ws, { query, top_k: 10, mode: 'keyword' });
    expect(asked.exact).toBe(true);
    expect(asked.results.map((r) => [r.chunk.id, r.score])).toEqual(
      full.results.map((r) => [r.chunk.id, r.score]),
    );

    // A query whose candidates fit the budget is exact even when allowed not to be.
    const rare = await budgeted.search(ws, {
      query: `${words[300]} ${words[350]}`,
      top_k: 10,
      mode: 'keyword',
      exact: false,
    });
    expect(rare.exact).toBe(true);
  });
});

describe('in-memory postings', () => {
  /** A second search service over the same database whose postings cover partitions of `minChunks` and more. */
  const withPostings = (minChunks: number) =>
    createRetrievalService({
      db,
      settings: createSettingsService(db),
      models: { embed: () => Promise.reject(new Error('no embedding provider in these tests')) },
      credentials: { get: () => Promise.reject(new Error('no vault in these tests')) },
      postings: { minChunks, rebuildSpacing: 0, minRebuildIntervalMs: 0 },
    });

  /** Every result's document, chunk, score and highlights: what must not depend on the path. */
  const shape = (found: Awaited<ReturnType<RetrievalService['search']>>) =>
    found.results.map((result) => ({
      document: result.document.id,
      chunk: result.chunk.id,
      score: result.score.toFixed(10),
      highlights: result.highlights.map((chunk) => [chunk.chunk_id, chunk.score.toFixed(10)]),
    }));

  it('reads tsvectors as PostgreSQL writes them, quotes and backslashes included', async () => {
    const ws = await newWorkspace();
    const quirky = await insertDocument(db, ws.workspaceId, ws.sourceId);
    await indexDocument(ws, ['plain words here'], { documentId: quirky.id });
    // Lexemes no English text yields, written straight into the chunk's tsvector.
    await t.rows(sql`update chunks set search = search || $$'it''s':3 'back\\\\slash':4,5 'a b':6$$::tsvector
      where document_id = ${quirky.id}`);
    const [row] = await t.rows<{ text: string; truth: Record<string, number> }>(sql`
      select search::text as text,
        (select jsonb_object_agg(u.lexeme, cardinality(u.positions)) from unnest(search) u) as truth
      from chunks where document_id = ${quirky.id}`);
    const { forEachLexeme } = await import('./postings.ts');
    const parsed: Record<string, number> = {};
    forEachLexeme(row?.text as string, (lexeme, frequency) => {
      parsed[lexeme] = frequency;
    });
    expect(parsed).toEqual(row?.truth);
    expect(parsed).toMatchObject({ "it's": 1, 'a b': 1 });
    expect(Object.entries(parsed).find(([lexeme]) => lexeme.includes('\\'))).toEqual(['back\\slash', 2]);
  });

  it('rank exactly as the SQL path does, once built, and keep answering while a write makes them stale', async () => {
    const ws = await newWorkspace();
    await indexZipfCorpus(ws);
    const memory = withPostings(1);
    const words = ZIPF_WORDS;
    const queries = [
      `${words[0]} ${words[1]} ${words[200]}`,
      `${words[2]} ${words[3]} ${words[4]} ${words[5]}`,
      `${words[0]} ${words[0]} ${words[50]} ${words[120]} ${words[300]}`,
      words.slice(4, 13).join(' '),
    ];
    // The first search finds no postings: it is answered in SQL and starts the build.
    const before = await memory.search(ws, { query: queries[0] as string, mode: 'keyword' });
    expect(memory.postings.usage().served).toBe(0);
    await memory.postings.settled();
    expect(memory.postings.usage()).toMatchObject({ partitions: 1, building: 0 });
    expect(shape(await memory.search(ws, { query: queries[0] as string, mode: 'keyword' }))).toEqual(
      shape(before),
    );
    for (const query of queries) {
      const inSql = await search(ws, query, 20);
      const inMemory = await memory.search(ws, { query, top_k: 20, mode: 'keyword' });
      expect(inMemory.results.length).toBeGreaterThan(0);
      expect(shape(inMemory)).toEqual(shape(inSql));
      expect(inMemory.exact).toBe(true);
    }
    expect(memory.postings.usage().served).toBe(1 + queries.length);

    // A new document changes the partition's version: the next search reads SQL and sees it
    // at once; the rebuilt postings see it too.
    const rare = `${words[0]} zanzibarite`;
    const added = await indexDocument(ws, [rare]);
    const served = memory.postings.usage().served;
    const fresh = await memory.search(ws, { query: 'zanzibarite', mode: 'keyword' });
    expect(fresh.results.map((result) => result.document.id)).toEqual([added]);
    expect(memory.postings.usage().served).toBe(served);
    await memory.postings.settled();
    const rebuilt = await memory.search(ws, { query: 'zanzibarite', mode: 'keyword' });
    expect(memory.postings.usage().served).toBe(served + 1);
    expect(shape(rebuilt)).toEqual(shape(fresh));

    // A removed document is gone from the very next search, whichever path answers it.
    await inTransaction(db, (tx) => retrieval.removeDocument(tx, ws.workspaceId, added));
    expect((await memory.search(ws, { query: 'zanzibarite', mode: 'keyword' })).results).toEqual([]);
    await memory.postings.settled();
    expect((await memory.search(ws, { query: 'zanzibarite', mode: 'keyword' })).results).toEqual([]);
    for (const query of queries) {
      expect(shape(await memory.search(ws, { query, top_k: 20, mode: 'keyword' }))).toEqual(
        shape(await search(ws, query, 20)),
      );
    }
  });

  it('merge sources held in memory with sources searched in SQL, and apply tag filters', async () => {
    const ws = await newWorkspace();
    await indexZipfCorpus(ws);
    const small = await insertSource(db, ws.workspaceId);
    const words = ZIPF_WORDS;
    const tagged: string[] = [];
    for (let i = 0; i < 6; i++) {
      tagged.push(
        await indexDocument(
          { workspaceId: ws.workspaceId, sourceId: small.id },
          [`${words[i]} ${words[i + 1]} ${words[250]}`],
          {
            tags: i % 2 === 0 ? ['even'] : ['odd'],
          },
        ),
      );
    }
    // Tag some of the large source's documents too.
    await t.rows(sql`update documents set tags = '{even}'
      where source_id = ${ws.sourceId} and id in (select id from documents where source_id = ${ws.sourceId} order by id limit 40)`);
    const memory = withPostings(100);
    const query = `${words[0]} ${words[1]} ${words[2]} ${words[250]}`;
    await memory.search(ws, { query, mode: 'keyword' });
    await memory.postings.settled();
    expect(memory.postings.usage().partitions).toBe(1);
    for (const input of [
      { query, top_k: 30 },
      { query, top_k: 30, tags: ['even'] },
      { query, top_k: 30, tags: ['odd'] },
      { query, top_k: 30, source_ids: [ws.sourceId] },
      { query, top_k: 30, source_ids: [small.id], tags: ['even'] },
    ]) {
      const served = memory.postings.usage().served;
      const inMemory = await memory.search(ws, { ...input, mode: 'keyword' });
      expect(shape(inMemory)).toEqual(shape(await retrieval.search(ws, { ...input, mode: 'keyword' })));
      expect(inMemory.results.length).toBeGreaterThan(0);
      if (!input.source_ids?.includes(small.id)) expect(memory.postings.usage().served).toBe(served + 1);
    }
    const odd = await memory.search(ws, { query, top_k: 30, mode: 'keyword', tags: ['odd'] });
    expect(odd.results.every((result) => result.document.tags.includes('odd'))).toBe(true);
  });

  it('stay out of the way when off or when a partition is below the size', async () => {
    const ws = await newWorkspace();
    await indexDocument(ws, ['one small document']);
    const off = createRetrievalService({
      db,
      settings: createSettingsService(db),
      models: { embed: () => Promise.reject(new Error('no embedding provider in these tests')) },
      credentials: { get: () => Promise.reject(new Error('no vault in these tests')) },
      postings: { maxBytes: 0, minChunks: 1 },
    });
    const large = withPostings(2);
    for (const service of [off, large]) {
      expect((await service.search(ws, { query: 'small', mode: 'keyword' })).results.length).toBe(1);
      await service.postings.settled();
      expect(service.postings.usage()).toEqual({ partitions: 0, bytes: 0, building: 0, served: 0 });
    }
  });
});

describe('statistics under concurrent writers', () => {
  it('stay exact when many transactions index one workspace at once', async () => {
    const ws = await newWorkspace();
    const texts = Array.from({ length: 12 }, (_, i) => [`shared lexeme number${i}`, `shared again ${i}`]);
    await Promise.all(texts.map((chunks) => indexDocument(ws, chunks)));
    const [totals] = await t.rows<{ chunks: number; terms: number }>(sql`
      select sum(chunks)::int as chunks, sum(terms)::int as terms from index_stats where workspace_id = ${ws.workspaceId}`);
    const [truth] = await t.rows<{ chunks: number; terms: number }>(sql`
      select count(*)::int as chunks, sum(term_count)::int as terms from chunks where workspace_id = ${ws.workspaceId}`);
    expect(totals).toEqual(truth);
    const [shared] = await t.rows<{ df: number }>(sql`
      select sum(chunks)::int as df from term_stats where workspace_id = ${ws.workspaceId} and lexeme = 'share'`);
    expect(shared?.df).toBe(24);
  });

  it.runIf(onPostgres)('never makes one indexer wait for another one’s commit', async () => {
    const ws = await newWorkspace();
    // The source's first index write creates its active generation; concurrent first writers
    // of one source meet on that row once. Afterwards writers share nothing.
    await indexDocument(ws, ['an earlier document']);
    const first = await insertDocument(db, ws.workspaceId, ws.sourceId);
    const second = await insertDocument(db, ws.workspaceId, ws.sourceId);
    const prepared = await retrieval.prepare(ws.workspaceId, KEYWORD_ONLY, [
      chunk('common words everywhere'),
    ]);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let indexed = () => {};
    const firstIndexed = new Promise<void>((resolve) => {
      indexed = resolve;
    });
    // The first transaction indexes, then stays open holding its slot and its rows.
    const open = inTransaction(db, async (tx) => {
      await retrieval.indexDocument(tx, { ...ws, documentId: first.id, generation: 1 }, prepared);
      indexed();
      await held;
    });
    await firstIndexed;
    const started = performance.now();
    await inTransaction(db, (tx) =>
      retrieval.indexDocument(tx, { ...ws, documentId: second.id, generation: 1 }, prepared),
    );
    const waited = performance.now() - started;
    release();
    await open;
    expect(waited).toBeLessThan(2_000);
    const slots = await t.rows<{ slot: number }>(
      sql`select distinct slot from index_stats where workspace_id = ${ws.workspaceId}`,
    );
    expect(slots.length).toBe(2);
    const [totals] = await t.rows<{ chunks: number }>(
      sql`select sum(chunks)::int as chunks from index_stats where workspace_id = ${ws.workspaceId}`,
    );
    expect(totals?.chunks).toBe(3);
  });
});
