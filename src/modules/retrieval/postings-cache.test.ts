import { describe, expect, it } from 'vitest';
import { PostingsBuilder, type PostingsIndex } from './postings.ts';
import { type BuiltPartition, createPostingsCache, type PostingsCacheOptions } from './postings-cache.ts';
import type { PartitionState } from './retrieval.repository.ts';

/** An index of `chunks` one-lexeme chunks. */
function indexOf(chunks: number): Promise<PostingsIndex> {
  const builder = new PostingsBuilder();
  for (let id = 1; id <= chunks; id++) builder.add(id, `doc-${id}`, 1, "'word':1");
  return builder.finish();
}

const partition = (overrides: Partial<PartitionState> = {}): PartitionState => ({
  workspaceId: 'ws',
  sourceId: 'source-a',
  generation: 1,
  chunks: 100,
  terms: 100,
  version: 'v1',
  ...overrides,
});

/** A cache whose loads answer what `answer` says, counting them; the clock is the test's. */
function cacheWith(
  answer: (wanted: PartitionState) => Promise<BuiltPartition> | undefined | Error,
  options: Partial<PostingsCacheOptions> = {},
) {
  let clock = 0;
  const loads: PartitionState[] = [];
  const errors: unknown[] = [];
  const cache = createPostingsCache({
    maxBytes: 1024 * 1024,
    minChunks: 10,
    load: async (wanted) => {
      loads.push(wanted);
      const answered = await answer(wanted);
      if (answered instanceof Error) throw answered;
      return answered;
    },
    onError: (error) => errors.push(error),
    now: () => clock,
    ...options,
  });
  return {
    cache,
    loads,
    errors,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

const built = async (wanted: PartitionState, chunks = 100): Promise<BuiltPartition> => ({
  generation: wanted.generation,
  version: wanted.version,
  index: await indexOf(chunks),
});

describe('the postings cache', () => {
  it('builds on the first lookup, then answers only lookups of the same generation and version', async () => {
    const { cache, loads } = cacheWith((wanted) => built(wanted));
    expect(cache.lookup(partition())).toBeUndefined();
    await cache.settled();
    expect(loads.length).toBe(1);
    const index = cache.lookup(partition());
    expect(index?.chunkCount).toBe(100);
    expect(cache.lookup(partition({ version: 'v2' }))).toBeUndefined();
    expect(cache.lookup(partition({ generation: 2 }))).toBeUndefined();
    expect(cache.usage()).toMatchObject({ partitions: 1, served: 1 });
  });

  it('leaves small partitions, and everything when its budget is 0, to SQL without building', async () => {
    const { cache, loads } = cacheWith((wanted) => built(wanted));
    expect(cache.lookup(partition({ chunks: 9 }))).toBeUndefined();
    const off = cacheWith((wanted) => built(wanted), { maxBytes: 0 });
    expect(off.cache.lookup(partition())).toBeUndefined();
    // A partition whose tokens alone would pass the budget is not even read.
    expect(cache.lookup(partition({ terms: 10_000_000 }))).toBeUndefined();
    await Promise.all([cache.settled(), off.cache.settled()]);
    expect(loads.length + off.loads.length).toBe(0);
  });

  it('keeps nothing from a build that saw the partition change, and spaces rebuilds by their cost', async () => {
    let changed = true;
    const { cache, loads, advance } = cacheWith((wanted) => (changed ? undefined : built(wanted)));
    cache.lookup(partition());
    await cache.settled();
    expect(cache.usage().partitions).toBe(0);
    // Within a second of the last build, no new one.
    changed = false;
    advance(500);
    cache.lookup(partition());
    await cache.settled();
    expect(loads.length).toBe(1);
    advance(600);
    cache.lookup(partition());
    await cache.settled();
    expect(loads.length).toBe(2);
    expect(cache.lookup(partition())).toBeDefined();
  });

  it('builds one partition once at a time, and reports failed builds', async () => {
    const { cache, loads, errors } = cacheWith(() => new Error('database gone'));
    cache.lookup(partition());
    cache.lookup(partition());
    await cache.settled();
    expect(loads.length).toBe(1);
    expect(errors.map((error) => (error as Error).message)).toEqual(['database gone']);
    expect(cache.usage()).toMatchObject({ partitions: 0, building: 0 });
  });

  it('runs builds one at a time, in the order they were asked for', async () => {
    let running = 0;
    let most = 0;
    const { cache, loads } = cacheWith(async (wanted) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      running -= 1;
      return built(wanted);
    });
    const sources = ['a', 'b', 'c'].map((sourceId) => partition({ sourceId }));
    for (const wanted of sources) cache.lookup(wanted);
    expect(cache.usage().building).toBe(3);
    await cache.settled();
    expect(most).toBe(1);
    expect(loads.map((wanted) => wanted.sourceId)).toEqual(['a', 'b', 'c']);
    for (const wanted of sources) expect(cache.lookup(wanted)).toBeDefined();
  });

  it('evicts the least recently searched partition to stay within its memory', async () => {
    const size = (await indexOf(1000)).bytes;
    const { cache } = cacheWith((wanted) => built(wanted, 1000), {
      maxBytes: Math.floor(size * 2.5),
      minChunks: 1,
    });
    const a = partition({ sourceId: 'a', chunks: 1000, terms: 1000 });
    const b = partition({ sourceId: 'b', chunks: 1000, terms: 1000 });
    const c = partition({ sourceId: 'c', chunks: 1000, terms: 1000 });
    for (const wanted of [a, b]) {
      cache.lookup(wanted);
      await cache.settled();
    }
    expect(cache.lookup(a)).toBeDefined();
    cache.lookup(c);
    await cache.settled();
    expect(cache.usage().partitions).toBe(2);
    expect(cache.usage().bytes).toBeLessThanOrEqual(size * 2.5);
    // b was searched least recently.
    expect(cache.lookup(a)).toBeDefined();
    expect(cache.lookup(c)).toBeDefined();
    expect(cache.lookup(b)).toBeUndefined();
    cache.forget('ws', 'a');
    expect(cache.lookup(a)).toBeUndefined();
    expect(cache.usage().partitions).toBe(1);
  });
});
