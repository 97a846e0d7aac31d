/**
 * Runs the miner in a worker thread so that an API process keeps answering requests while a large mine
 * runs, with progress reports and cancellation.
 */

import { Worker } from 'node:worker_threads';
import type { MiningOptions, MiningSummary, TransactionTable } from './fp-growth.ts';
import type { MiningWorkerInput, MiningWorkerMessage } from './mining-worker.ts';

/** Options for a mine in a worker thread. */
export interface WorkerMiningOptions extends Omit<MiningOptions, 'onProgress'> {
  /** Aborting terminates the worker at once, even in the middle of a long synchronous search. */
  signal?: AbortSignal;
  /** Called with (done, total) top-level branches as the worker reports them. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Receives itemsets in batches as they are found, to stream them on. Without it, the result holds
   * every itemset in an array.
   */
  onItemsets?: (itemsets: [string[], number][]) => void;
  /** Itemsets per message from the worker (default 1000). */
  batchSize?: number;
}

/** The outcome of a worker mine. */
export interface WorkerMiningResult {
  summary: MiningSummary;
  /** Every itemset as [items, support], unless onItemsets consumed them. */
  itemsets: [string[], number][];
}

/** Starts the worker; Node 24 loads its TypeScript directly (type stripping). */
function startWorker(workerData: MiningWorkerInput): Worker {
  return new Worker(new URL('./mining-worker.ts', import.meta.url), { workerData });
}

/**
 * Mines string transactions in a worker thread. Resolves with the summary (and the itemsets when no
 * onItemsets callback is given); rejects with the signal's reason when aborted, or with the worker's
 * error (bad options, for instance).
 */
export function mineInWorker(
  transactions: readonly (readonly string[])[],
  options: WorkerMiningOptions,
): Promise<WorkerMiningResult> {
  const { onItemsets, ...rest } = options;
  const itemsets: [string[], number][] = [];
  return runWorker({ transactions: transactions as string[][] }, rest, (message) => {
    if (message.type !== 'itemsets') return;
    if (onItemsets) onItemsets(message.itemsets);
    else for (const entry of message.itemsets) itemsets.push(entry);
  }).then((summary) => ({ summary, itemsets }));
}

/**
 * Mines an integer transaction table (items already mapped to ids) in a worker thread: no string
 * crosses between the threads, which on 100,000 transactions is most of a string mine's cost.
 * Resolves with the summary and every itemset as [item ids, support].
 */
export function mineTableInWorker(
  table: TransactionTable,
  options: Omit<WorkerMiningOptions, 'onItemsets'>,
): Promise<{ summary: MiningSummary; itemsets: [number[], number][] }> {
  const itemsets: [number[], number][] = [];
  return runWorker({ table }, options, (message) => {
    if (message.type === 'integer-itemsets') for (const entry of message.itemsets) itemsets.push(entry);
  }).then((summary) => ({ summary, itemsets }));
}

function runWorker(
  data: { transactions: string[][] } | { table: TransactionTable },
  options: Omit<WorkerMiningOptions, 'onItemsets'>,
  onResults: (message: MiningWorkerMessage) => void,
): Promise<MiningSummary> {
  const { signal, onProgress, batchSize = 1000, ...miningOptions } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const worker = startWorker({ ...data, options: miningOptions, batchSize });
    let settled = false;
    const finish = (action: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      action();
    };
    const onAbort = (): void => {
      finish(() => reject(signal?.reason));
      void worker.terminate();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (message: MiningWorkerMessage) => {
      if (settled) return;
      if (message.type === 'progress') onProgress?.(message.done, message.total);
      else if (message.type === 'done') {
        finish(() => resolve(message.summary));
        void worker.terminate();
      } else onResults(message);
    });
    worker.on('error', (error) => finish(() => reject(error)));
    worker.on('exit', (code) => finish(() => reject(new Error(`mining worker exited with code ${code}`))));
  });
}
