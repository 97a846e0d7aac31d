/**
 * Worker-thread entry point: mines the transactions in workerData and posts progress, batches of
 * itemsets and a summary back. Started by mineInWorker or mineTableInWorker; not meant to be imported.
 */

import { parentPort, workerData } from 'node:worker_threads';
import {
  type MiningOptions,
  mineItemsets,
  mineTransactionTable,
  type TransactionTable,
} from './fp-growth.ts';

/** What mineInWorker (string transactions) or mineTableInWorker (an integer table) sends to the worker. */
export type MiningWorkerInput = {
  options: Omit<MiningOptions, 'onProgress'>;
  /** Itemsets per message: batching keeps message overhead low on large results. */
  batchSize: number;
} & ({ transactions: string[][] } | { table: TransactionTable });

/** Messages the worker posts back: string itemsets, or integer ones for a table. */
export type MiningWorkerMessage =
  | { type: 'progress'; done: number; total: number }
  | { type: 'itemsets'; itemsets: [string[], number][] }
  | { type: 'integer-itemsets'; itemsets: [number[], number][] }
  | { type: 'done'; summary: ReturnType<typeof mineItemsets> };

const port = parentPort;
if (!port) throw new Error('mining-worker must run in a worker thread');
const post = (message: MiningWorkerMessage): void => port.postMessage(message);

function mine(input: MiningWorkerInput): void {
  const options = {
    ...input.options,
    onProgress: (done: number, total: number) => post({ type: 'progress', done, total }),
  };
  if ('table' in input) {
    let batch: [number[], number][] = [];
    const summary = mineTransactionTable(input.table, options, (items, length, support) => {
      batch.push([Array.from(items.subarray(0, length)), support]);
      if (batch.length >= input.batchSize) {
        post({ type: 'integer-itemsets', itemsets: batch });
        batch = [];
      }
    });
    if (batch.length > 0) post({ type: 'integer-itemsets', itemsets: batch });
    post({ type: 'done', summary });
  } else {
    let batch: [string[], number][] = [];
    const summary = mineItemsets(input.transactions, options, (items, support) => {
      batch.push([items, support]);
      if (batch.length >= input.batchSize) {
        post({ type: 'itemsets', itemsets: batch });
        batch = [];
      }
    });
    if (batch.length > 0) post({ type: 'itemsets', itemsets: batch });
    post({ type: 'done', summary });
  }
}

// A kept worker takes one job after another as messages (warm: V8 has optimised the engine);
// a one-off worker mines its workerData and is terminated.
if (workerData === 'kept') port.on('message', (input: MiningWorkerInput) => mine(input));
else mine(workerData as MiningWorkerInput);
