import { enableCompileCache } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { type Chunk, type ChunkingOptions, chunkDocument, TooManyChunksError } from './chunking.ts';
import { type ExtractedDocument, ExtractionError } from './document.ts';
import { maxChunksFor, tooManyChunks } from './document-limits.ts';
import { readDocument } from './read-document.ts';

/**
 * A worker thread of the extraction pool (extract-pool.ts): reads (or chunks) one file per message, in
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

/**
 * A stored document to cut into chunks, as large as its file (`sizeBytes`) allows
 * (`maxChunksFor`): chunking a large document takes the CPU reading it does.
 */
export interface ChunkingJob {
  chunk: {
    document: Pick<ExtractedDocument, 'blocks' | 'title'>;
    options: ChunkingOptions;
    sizeBytes: number;
  };
}

/** What the worker posts: that it started reading a file, then what reading it came to. */
export type ExtractionMessage = { id: number; started: true } | { id: number; outcome: ExtractionOutcome };

/** What reading (or chunking) a file came to. */
export type ExtractionOutcome =
  | { ok: true; document: Awaited<ReturnType<typeof readDocument>> }
  | { ok: true; chunks: Chunk[] }
  | { ok: false; failure: { reason: ExtractionError['reason']; message: string } }
  | { ok: false; unexpected: string };

async function run(job: ExtractionJob | ChunkingJob): Promise<ExtractionOutcome> {
  try {
    if ('chunk' in job) {
      const { document, options, sizeBytes } = job.chunk;
      return { ok: true, chunks: chunkDocument(document, options, maxChunksFor(sizeBytes)) };
    }
    return { ok: true, document: await readDocument(job) };
  } catch (error) {
    if (error instanceof ExtractionError) {
      return { ok: false, failure: { reason: error.reason, message: error.message } };
    }
    if (error instanceof TooManyChunksError && 'chunk' in job) {
      return {
        ok: false,
        failure: { reason: 'too_large', message: tooManyChunks(error.limit, job.chunk.sizeBytes) },
      };
    }
    return {
      ok: false,
      unexpected: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    };
  }
}

const post = (message: ExtractionMessage) => parentPort?.postMessage(message);

parentPort?.on('message', async (message: { id: number; job: ExtractionJob | ChunkingJob }) => {
  post({ id: message.id, started: true });
  post({ id: message.id, outcome: await run(message.job) });
});
