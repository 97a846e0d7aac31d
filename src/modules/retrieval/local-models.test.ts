import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTinyEmbeddingModel } from '../../../tests/helpers/tiny-embedding-model.ts';
import { createLocalModels } from './local-models.ts';

/** Model folders run in the worker: vectors, the pipeline cache, and failures that name no server path. */
const root = mkdtempSync(path.join(tmpdir(), 'local-models-'));
const models = createLocalModels(root);

beforeAll(async () => {
  await writeTinyEmbeddingModel(path.join(root, 'tiny'));
  await writeTinyEmbeddingModel(path.join(root, 'broken'));
  writeFileSync(path.join(root, 'broken', 'onnx', 'model.onnx'), 'not an onnx graph');
  mkdirSync(path.join(root, 'quantized', 'onnx'), { recursive: true });
});
afterAll(async () => {
  await models.close();
  rmSync(root, { recursive: true, force: true });
});

describe('createLocalModels', () => {
  it('embeds texts into normalised vectors, one per text, in order', async () => {
    const vectors = await models.embed('tiny', ['the car engine', 'bread in the oven', 'car']);
    expect(vectors).toHaveLength(3);
    for (const vector of vectors) {
      expect(vector).toHaveLength(8);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
    }
    const dot = (a: number[], b: number[]) => a.reduce((sum, value, i) => sum + value * (b[i] ?? 0), 0);
    const [engine, bread, car] = vectors as [number[], number[], number[]];
    expect(dot(engine, car)).toBeGreaterThan(0.9);
    expect(dot(bread, car)).toBeLessThan(0.1);
    expect(await models.embed('tiny', [])).toEqual([]);
  });

  it('fails a folder whose weights do not load with provider_error, naming no server path', async () => {
    const failure = await models.embed('broken', ['car']).catch((error: unknown) => error);
    expect(failure).toMatchObject({ status: 502, code: 'provider_error' });
    expect(String((failure as Error).message)).toContain('local/broken');
    expect(String((failure as Error).message)).not.toContain(root);
    // The worker survives a failed folder.
    expect(await models.embed('tiny', ['car'])).toHaveLength(1);
  });

  it('says what is wrong with a folder name', async () => {
    expect(await models.problem('tiny')).toBeUndefined();
    expect(await models.problem('quantized')).toMatchObject({ field: 'model' });
    expect(await models.problem('../tiny')).toMatchObject({ field: 'model' });
    expect(await models.problem('.hidden')).toMatchObject({ field: 'model' });
    expect(await createLocalModels(undefined).problem('tiny')).toMatchObject({ field: 'provider' });
  });
});

describe('without the optional package that runs the models', () => {
  const absent = createLocalModels(root, { runtime: '@agent-platform/no-such-runtime' });

  it('refuses local settings and batches, saying what to install', async () => {
    expect(absent.configured).toBe(true);
    expect(absent.installed).toBe(false);
    const problem = await absent.problem('tiny');
    expect(problem).toMatchObject({ field: 'provider' });
    expect(problem?.message).toContain('@agent-platform/no-such-runtime');
    expect(problem?.message).toContain('npm ci without --omit=optional');
    const failure = await absent.embed('tiny', ['car']).catch((error: unknown) => error);
    expect(failure).toMatchObject({ status: 502, code: 'provider_error' });
    expect(String((failure as Error).message)).toContain('is not installed');
  });

  it('reports the row down in health, and not configured without EMBEDDING_MODELS_DIR', async () => {
    expect(await absent.component.health()).toMatchObject({
      name: 'Local Embedding Models',
      status: 'down',
      detail: expect.stringContaining('@agent-platform/no-such-runtime'),
    });
    expect(await models.component.health()).toMatchObject({ status: 'up' });
    expect(await createLocalModels(undefined).component.health()).toMatchObject({ status: 'not_configured' });
  });
});
