/**
 * Runs the miner in a worker thread so that an API process keeps answering requests while a large mine
 * runs, with progress reports and cancellation.
 */

import { Worker } from 'node:worker_threads';
import type { MiningOptions, MiningSummary } from './fp-growth.ts';
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
  const { signal, onProgress, onItemsets, batchSize = 1000, ...miningOptions } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const input: MiningWorkerInput = {
      transactions: transactions as string[][],
      options: miningOptions,
      batchSize,
    };
    const worker = startWorker(input);
    const itemsets: [string[], number][] = [];
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
      else if (message.type === 'itemsets') {
        if (onItemsets) onItemsets(message.itemsets);
        else for (const entry of message.itemsets) itemsets.push(entry);
      } else {
        finish(() => resolve({ summary: message.summary, itemsets }));
        void worker.terminate();
      }
    });
    worker.on('error', (error) => finish(() => reject(error)));
    worker.on('exit', (code) => finish(() => reject(new Error(`mining worker exited with code ${code}`))));
  });
}
