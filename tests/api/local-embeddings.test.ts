import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { settledDocument, settledSource, upload } from '../helpers/knowledge.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';
import { writeTinyEmbeddingModel } from '../helpers/tiny-embedding-model.ts';

/**
 * Embeddings from a model folder under EMBEDDING_MODELS_DIR (provider `local`), run with
 * transformers.js and onnxruntime-node in the retrieval worker thread: documents uploaded
 * through the API are embedded by the folder's model, and a paraphrased query that shares no
 * word with its document finds it in `vector` and `hybrid` mode where `keyword` cannot. The
 * folder is the tiny generated model of tests/helpers/tiny-embedding-model.ts (no npm package
 * ships a sentence-embedding model in the transformers.js layout; nothing can be downloaded).
 * Also: folder names are vetted (outside the root, missing, not a model), and changing a
 * source's embedding model rebuilds its index with the new model.
 */

let t: TestApp;
let alice: Actor;
let mallory: Actor;
const modelsDir = mkdtempSync(path.join(tmpdir(), 'embedding-models-'));
const outside = mkdtempSync(path.join(tmpdir(), 'outside-models-'));

const DOCUMENTS = [
  {
    name: 'garage.md',
    content: '# Garage\n\nThe automobile needs new tyres and its brakes fixing by a mechanic.\n',
  },
  {
    name: 'baking.md',
    content: '# Baking\n\nKnead the dough, let the yeast work, then bake the loaf in the oven.\n',
  },
  {
    name: 'forecast.md',
    content: '# Forecast\n\nThunder and storm tonight, take an umbrella against the rain.\n',
  },
];
/** Paraphrases: no word in common with the document they mean (nor with any other). */
const CAR_QUERY = 'car repair';

beforeAll(async () => {
  await writeTinyEmbeddingModel(path.join(modelsDir, 'tiny-minilm'));
  await writeTinyEmbeddingModel(path.join(modelsDir, 'team', 'tiny-v2'));
  await writeTinyEmbeddingModel(path.join(outside, 'elsewhere'));
  symlinkSync(path.join(outside, 'elsewhere'), path.join(modelsDir, 'escape'));
  mkdirSync(path.join(modelsDir, 'empty'));
  mkdirSync(path.join(modelsDir, 'no-weights'));
  writeFileSync(path.join(modelsDir, 'no-weights', 'config.json'), '{}');
  writeFileSync(path.join(modelsDir, 'no-weights', 'tokenizer.json'), '{}');
  t = await createTestApp({ env: { EMBEDDING_MODELS_DIR: modelsDir } });
  alice = await t.newWorkspace('alice');
  mallory = await t.newWorkspace('mallory');
});
afterAll(async () => {
  await t.close();
  rmSync(modelsDir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

async function uploadAll(actor: Actor, sourceId: string): Promise<string[]> {
  const ids: string[] = [];
  for (const file of DOCUMENTS) {
    const response = await upload(t, actor, file, { source_id: sourceId });
    expect(response.statusCode, response.body).toBe(201);
    ids.push(response.json().id);
  }
  for (const id of ids) expect((await settledDocument(t, actor, id)).status).toBe('processed');
  return ids;
}

const search = (actor: Actor, body: Record<string, unknown>) =>
  t.call(actor, 'POST', '/api/documents/search', { top_k: 3, ...body });

describe('local model folders (EMBEDDING_MODELS_DIR)', () => {
  it('embeds uploads with the folder’s model and finds a paraphrase in vector and hybrid mode', async () => {
    const created = await t.call(alice, 'POST', '/api/sources', {
      name: 'Local model',
      kind: 'upload',
      embedding: { provider: 'local', model: 'tiny-minilm' },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().embedding).toEqual({ provider: 'local', model: 'tiny-minilm' });
    const ids = await uploadAll(alice, created.json().id);

    const stored = await t.rows<{ model: string; dimensions: number }>(
      sql`select distinct model, dimensions from chunk_embeddings where workspace_id = ${alice.workspaceId}`,
    );
    expect(stored).toEqual([{ model: 'local/tiny-minilm', dimensions: 8 }]);

    const keyword = (await search(alice, { query: CAR_QUERY, mode: 'keyword' })).json();
    expect(keyword.results).toEqual([]);

    const vector = (await search(alice, { query: CAR_QUERY, mode: 'vector' })).json();
    expect(vector.mode).toBe('vector');
    expect(vector.results[0].document.id).toBe(ids[0]);
    expect(vector.results[0].score).toBeGreaterThan(0.9);
    expect(vector.results[1]?.score ?? 0).toBeLessThan(0.5);

    const hybrid = (await search(alice, { query: 'storm coming, will it rain' })).json();
    expect(hybrid.mode).toBe('hybrid');
    expect(hybrid.results[0].document.id).toBe(ids[2]);
    const baking = (await search(alice, { query: 'bread recipe', mode: 'hybrid' })).json();
    expect(baking.results[0].document.id).toBe(ids[1]);

    // Another workspace sees none of it.
    expect((await search(mallory, { query: CAR_QUERY, mode: 'keyword' })).json().results).toEqual([]);
    expect((await t.call(mallory, 'GET', `/api/documents/${ids[0]}`)).statusCode).toBe(404);
  });

  it('reports the local models up in the system health, the other rows unchanged', async () => {
    const health = await t.call(alice, 'GET', '/api/system/health');
    expect(health.statusCode, health.body).toBe(200);
    const components = health.json().components as { name: string; status: string }[];
    expect(components).toContainEqual({ name: 'Local Embedding Models', status: 'up' });
    expect(components.slice(0, 2).map((component) => component.name)).toEqual(['API', 'Database']);
  });

  it('accepts a nested folder name', async () => {
    const created = await t.call(alice, 'POST', '/api/sources', {
      name: 'Nested model',
      kind: 'upload',
      embedding: { provider: 'local', model: 'team/tiny-v2' },
    });
    expect(created.statusCode, created.body).toBe(201);
  });

  it('refuses folders outside the root, missing ones and folders that hold no model', async () => {
    const cases: Array<[string, string]> = [
      ['../outside', 'body.embedding.model'],
      ['/etc', 'body.embedding.model'],
      ['escape', 'body.embedding.model'],
      ['missing', 'body.embedding.model'],
      ['empty', 'body.embedding.model'],
      ['no-weights', 'body.embedding.model'],
      ['', 'body.embedding.model'],
    ];
    for (const [model, field] of cases) {
      const response = await t.call(alice, 'POST', '/api/sources', {
        name: `Bad ${model}`,
        kind: 'upload',
        embedding: { provider: 'local', model },
      });
      expect(response.statusCode, `${model}: ${response.body}`).toBe(400);
      expect(response.json().errors[0].field).toBe(field);
      expect(response.body).not.toContain(modelsDir);
      expect(response.body).not.toContain(outside);
    }
    const listed = await t.call(alice, 'POST', '/api/sources', {
      name: 'Bad missing',
      kind: 'upload',
      embedding: { provider: 'local', model: 'missing' },
    });
    expect(listed.json().errors[0].message).toContain('tiny-minilm');
  });

  it('changing a source’s embedding model rebuilds its index with the new model', async () => {
    const created = await t.call(alice, 'POST', '/api/sources', { name: 'Switched', kind: 'upload' });
    expect(created.json().embedding).toEqual({ provider: 'none', model: 'none' });
    const source = created.json();
    const ids = await uploadAll(alice, source.id);
    const scoped = { source_ids: [source.id] };
    expect((await search(alice, { query: CAR_QUERY, mode: 'vector', ...scoped })).statusCode).toBe(400);

    const switched = await t.call(alice, 'PUT', `/api/sources/${source.id}`, {
      embedding: { provider: 'local', model: 'tiny-minilm' },
    });
    expect(switched.statusCode, switched.body).toBe(200);
    expect(switched.json().indexing.status).toMatch(/queued|running/);
    expect(await settledSource(t, alice, source.id)).toMatchObject({
      generation: 2,
      embedding: { provider: 'local', model: 'tiny-minilm' },
      indexing: { status: 'completed', documents_done: 3 },
    });
    const vector = (await search(alice, { query: CAR_QUERY, mode: 'vector', ...scoped })).json();
    expect(vector.results[0].document.id).toBe(ids[0]);

    const bad = await t.call(alice, 'PUT', `/api/sources/${source.id}`, {
      embedding: { provider: 'local', model: '../x' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].field).toBe('body.embedding.model');
    expect(
      (
        await t.call(mallory, 'PUT', `/api/sources/${source.id}`, {
          embedding: { provider: 'local', model: 'team/tiny-v2' },
        })
      ).statusCode,
    ).toBe(404);
  });
});

describe('without EMBEDDING_MODELS_DIR', () => {
  it('refuses the local provider, naming the field', async () => {
    const bare = await createTestApp();
    try {
      const actor = await bare.newWorkspace('carol');
      const response = await bare.call(actor, 'POST', '/api/sources', {
        name: 'Local',
        kind: 'upload',
        embedding: { provider: 'local', model: 'tiny-minilm' },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json().errors[0]).toMatchObject({
        field: 'body.embedding.provider',
        message: expect.stringContaining('EMBEDDING_MODELS_DIR'),
      });
      const health = await bare.call(actor, 'GET', '/api/system/health');
      const names = (health.json().components as { name: string }[]).map((component) => component.name);
      expect(names).not.toContain('Local Embedding Models');
    } finally {
      await bare.close();
    }
  });
});
