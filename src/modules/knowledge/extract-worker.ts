import { enableCompileCache } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { ExtractionError } from './document.ts';
import { readDocument } from './read-document.ts';

/**
 * A worker thread of the extraction pool (extract-pool.ts): reads one file per message, in
 * order, saying when it starts each (the pool's time limit runs from there, not from the
 * thread's start) and answering with the document, the extraction failure or the unexpected
 * error. The pool ends the thread when a file exceeds its time limit, and V8 ends it when a file
 * exceeds its memory limit.
 */

// Cache V8's compiled code on disk as main.ts does for the process: a replacement thread loads
// the parsers without compiling them again.
enableCompileCache();

/** One file to read. */
export interface ExtractionJob {
  filename: string;
  mediaType?: string;
  bytes: Uint8Array;
}

/** What the worker posts: that it started reading a file, then what reading it came to. */
export type ExtractionMessage = { id: number; started: true } | { id: number; outcome: ExtractionOutcome };

/** What reading a file came to. */
export type ExtractionOutcome =
  | { ok: true; document: Awaited<ReturnType<typeof readDocument>> }
  | { ok: false; failure: { reason: ExtractionError['reason']; message: string } }
  | { ok: false; unexpected: string };

async function run(job: ExtractionJob): Promise<ExtractionOutcome> {
  try {
    return { ok: true, document: await readDocument(job) };
  } catch (error) {
    if (error instanceof ExtractionError) {
      return { ok: false, failure: { reason: error.reason, message: error.message } };
    }
    return {
      ok: false,
      unexpected: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    };
  }
}

const post = (message: ExtractionMessage) => parentPort?.postMessage(message);

parentPort?.on('message', async (message: { id: number; job: ExtractionJob }) => {
  post({ id: message.id, started: true });
  post({ id: message.id, outcome: await run(message.job) });
});
