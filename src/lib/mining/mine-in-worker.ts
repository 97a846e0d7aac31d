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

/** Starts a worker; Node 24 loads its TypeScript directly (type stripping). */
function startWorker(workerData: MiningWorkerInput | 'kept'): Worker {
  return new Worker(new URL('./mining-worker.ts', import.meta.url), { workerData });
}

/**
 * One worker kept between table mines: starting a worker and letting V8 optimise the engine
 * again cost 100 to 300 ms a mine. Used when idle; a mine that finds it busy gets a one-off
 * worker. Unreferenced while idle, so it never keeps the process alive; terminated on abort or
 * error (the next mine starts another).
 */
let kept: { worker: Worker; busy: boolean } | undefined;

function takeKeptWorker(): { worker: Worker; release(healthy: boolean): void } | undefined {
  if (kept?.busy) return undefined;
  if (!kept) {
    const worker = startWorker('kept');
    kept = { worker, busy: false };
    worker.on('exit', () => {
      if (kept?.worker === worker) kept = undefined;
    });
  }
  const entry = kept;
  entry.busy = true;
  entry.worker.ref();
  return {
    worker: entry.worker,
    release(healthy) {
      entry.worker.removeAllListeners('message');
      entry.worker.removeAllListeners('error');
      if (healthy) {
        entry.busy = false;
        entry.worker.unref();
      } else {
        if (kept === entry) kept = undefined;
        void entry.worker.terminate();
      }
    },
  };
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
    const input: MiningWorkerInput = { ...data, options: miningOptions, batchSize };
    const reused = 'table' in data ? takeKeptWorker() : undefined;
    const worker = reused?.worker ?? startWorker(input);
    if (reused) worker.postMessage(input);
    let settled = false;
    const finish = (healthy: boolean, action: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      worker.off('exit', onExit);
      if (reused) reused.release(healthy);
      else void worker.terminate();
      action();
    };
    const onAbort = (): void => finish(false, () => reject(signal?.reason));
    const onExit = (code: number): void =>
      finish(false, () => reject(new Error(`mining worker exited with code ${code}`)));
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (message: MiningWorkerMessage) => {
      if (settled) return;
      if (message.type === 'progress') onProgress?.(message.done, message.total);
      else if (message.type === 'done') finish(true, () => resolve(message.summary));
      else onResults(message);
    });
    worker.on('error', (error) => finish(false, () => reject(error)));
    worker.on('exit', onExit);
  });
}
