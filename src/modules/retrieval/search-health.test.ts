import { describe, expect, it } from 'vitest';
import { createSearchHealth } from './search-health.ts';

describe('the Vector Search health row', () => {
  it('is up, says keyword search works everywhere and which models vector search can use', async () => {
    const local = await createSearchHealth({
      vectorExtensionVersion: async () => '0.8.7',
      localModelsConfigured: true,
    }).health();
    expect(local).toMatchObject({ name: 'Vector Search', status: 'up' });
    expect(local.detail).toContain('keyword search (BM25) on every source');
    expect(local.detail).toContain('pgvector 0.8.7');
    expect(local.detail).toContain('a model folder under EMBEDDING_MODELS_DIR');

    const remote = await createSearchHealth({
      vectorExtensionVersion: async () => '0.8.7',
      localModelsConfigured: false,
    }).health();
    expect(remote.detail).toContain('EMBEDDING_MODELS_DIR is not set');
  });

  it('reads the extension once, and is down while it is missing', async () => {
    let reads = 0;
    let installed: string | null = null;
    const component = createSearchHealth({
      vectorExtensionVersion: async () => {
        reads++;
        return installed;
      },
      localModelsConfigured: false,
    });
    expect(await component.health()).toMatchObject({
      status: 'down',
      detail: expect.stringContaining('pgvector'),
    });
    installed = '0.8.7';
    expect((await component.health()).status).toBe('up');
    await component.health();
    expect(reads).toBe(2);
  });
});
