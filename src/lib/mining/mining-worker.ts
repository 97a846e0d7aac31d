/**
 * Worker-thread entry point: mines the transactions in workerData and posts progress, batches of
 * itemsets and a summary back. Started by mineInWorker; not meant to be imported.
 */

import { parentPort, workerData } from 'node:worker_threads';
import { type MiningOptions, mineItemsets } from './fp-growth.ts';

/** What mineInWorker sends to the worker. */
export interface MiningWorkerInput {
  transactions: string[][];
  options: Omit<MiningOptions, 'onProgress'>;
  /** Itemsets per message: batching keeps message overhead low on large results. */
  batchSize: number;
}

/** Messages the worker posts back. */
export type MiningWorkerMessage =
  | { type: 'progress'; done: number; total: number }
  | { type: 'itemsets'; itemsets: [string[], number][] }
  | { type: 'done'; summary: ReturnType<typeof mineItemsets> };

const port = parentPort;
if (!port) throw new Error('mining-worker must run in a worker thread');
const input = workerData as MiningWorkerInput;
let batch: [string[], number][] = [];
const post = (message: MiningWorkerMessage): void => port.postMessage(message);
const summary = mineItemsets(
  input.transactions,
  { ...input.options, onProgress: (done, total) => post({ type: 'progress', done, total }) },
  (items, support) => {
    batch.push([items, support]);
    if (batch.length >= input.batchSize) {
      post({ type: 'itemsets', itemsets: batch });
      batch = [];
    }
  },
);
if (batch.length > 0) post({ type: 'itemsets', itemsets: batch });
post({ type: 'done', summary });
