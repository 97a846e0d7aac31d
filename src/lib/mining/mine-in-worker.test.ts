import { describe, expect, it } from 'vitest';
import { mineInWorker, mineTableInWorker } from './mine-in-worker.ts';

describe('mineInWorker', () => {
  it('mines in a worker thread, streaming itemsets and reporting progress', async () => {
    const tx = Array.from({ length: 200 }, (_, t) =>
      Array.from({ length: 12 }, (_, i) => `ctx:${i}`).filter((_, i) => (t >> i) % 2 === 0 || i === t % 12),
    );
    const progress: [number, number][] = [];
    const streamed: [string[], number][] = [];
    const { summary, itemsets } = await mineInWorker(tx, {
      minSupport: 0.05,
      batchSize: 50,
      onProgress: (done, total) => progress.push([done, total]),
      onItemsets: (batch) => streamed.push(...batch),
    });
    expect(itemsets).toEqual([]);
    expect(streamed).toHaveLength(summary.itemsetCount);
    expect(summary.itemsetCount).toBeGreaterThan(100);
    expect(progress.length).toBeGreaterThan(1);
    const [done, total] = progress.at(-1) as [number, number];
    expect(done).toBe(total);
    expect(total).toBeGreaterThan(1);

    const collected = await mineInWorker(tx, { minSupport: 0.05 });
    expect(collected.itemsets).toEqual(streamed);
  });

  it('cancels a long mine promptly through an AbortSignal', async () => {
    // 40 items, each transaction missing one: about 2^40 frequent itemsets, far beyond any test timeout.
    const tx = Array.from({ length: 40 }, (_, t) =>
      Array.from({ length: 40 }, (_, i) => `item:${i}`).filter((_, i) => i !== t),
    );
    const controller = new AbortController();
    let progressed = false;
    const started = Date.now();
    const run = mineInWorker(tx, {
      minSupport: 1,
      signal: controller.signal,
      onItemsets: () => {
        if (!progressed) {
          progressed = true;
          controller.abort(new Error('cancelled by test'));
        }
      },
    });
    await expect(run).rejects.toThrow('cancelled by test');
    expect(progressed).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('rejects at once with an already aborted signal, and passes worker errors on', async () => {
    await expect(mineInWorker([['a']], { minSupport: 1, signal: AbortSignal.abort() })).rejects.toThrow();
    await expect(mineInWorker([['a']], { minSupport: 1.5 })).rejects.toThrow(/minSupport/);
  });
});

describe('mineTableInWorker', () => {
  const table = (rows: number[][]) => {
    const offsets = new Int32Array(rows.length + 1);
    rows.forEach((row, index) => {
      offsets[index + 1] = (offsets[index] as number) + row.length;
    });
    return { items: Int32Array.from(rows.flat()), offsets };
  };
  const sorted = (itemsets: [number[], number][]) =>
    itemsets.map(([items, support]) => `${[...items].sort().join(',')}:${support}`).sort();

  it('mines integer tables one after another, and side by side', async () => {
    const rows = table([
      [1, 2, 3],
      [1, 2],
      [2, 3],
      [1, 2, 3],
    ]);
    const expected = ['1,2,3:2', '1,2:3', '2,3:3', '2:4'];
    for (let round = 0; round < 3; round += 1) {
      expect(sorted((await mineTableInWorker(rows, { minSupport: 2, mode: 'closed' })).itemsets)).toEqual(
        expected,
      );
    }
    const both = await Promise.all([
      mineTableInWorker(rows, { minSupport: 2, mode: 'closed' }),
      mineTableInWorker(rows, { minSupport: 2, mode: 'closed' }),
    ]);
    for (const result of both) expect(sorted(result.itemsets)).toEqual(expected);
  });

  it('still mines after a mine was aborted or failed', async () => {
    const dense = table(
      Array.from({ length: 40 }, (_, t) => Array.from({ length: 40 }, (_, i) => i).filter((i) => i !== t)),
    );
    const controller = new AbortController();
    const long = mineTableInWorker(dense, { minSupport: 1, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 50);
    await expect(long).rejects.toThrow('stop');
    await expect(mineTableInWorker(dense, { minSupport: 1.5 })).rejects.toThrow(/minSupport/);
    const after = await mineTableInWorker(
      table([
        [7, 8],
        [7, 8],
      ]),
      { minSupport: 2, mode: 'closed' },
    );
    expect(sorted(after.itemsets)).toEqual(['7,8:2']);
  });
});
