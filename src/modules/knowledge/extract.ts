import { availableParallelism } from 'node:os';
import type { Chunk, ChunkingOptions } from './chunking.ts';
import { baseName } from './detect-format.ts';
import { type ExtractedDocument, ExtractionError } from './document.ts';
import { ExtractionPool, type ExtractionPoolOptions } from './extract-pool.ts';
import type { ChunkingJob, ExtractionJob, ExtractionOutcome } from './extract-worker.ts';
import type { DocumentSource } from './read-document.ts';

export type { Block, DocumentFormat, ExtractedDocument, ExtractionFailure } from './document.ts';
export { ExtractionError } from './document.ts';

/**
 * Text extraction for the knowledge store: bytes in, structural blocks out. read-document.ts
 * says how each format is read, chunking.ts what becomes of the blocks (also cut in the pool,
 * `chunkStoredDocument`).
 *
 * Parsing runs in worker threads with memory and time limits (extract-pool.ts), because what a
 * file costs to parse is up to whoever wrote it: a PDF whose streams inflate to gigabytes,
 * Markdown or HTML nested to make a parser's cost explode, or merely 25 MiB of ordinary text that
 * takes seconds. In a worker such a file can neither block the API's event loop nor exhaust the
 * process's memory; reaching a limit makes it `corrupt`, with a message that names the limit.
 */

/** What `extractDocument` reads. */
export type ExtractionInput = DocumentSource;

/** A stored document to chunk off the event loop (`chunkStoredDocument`). */
export interface ChunkingInput {
  document: Pick<ExtractedDocument, 'blocks' | 'title'>;
  options: ChunkingOptions;
  /** The size of the file it was read from: it bounds the chunks (document-limits.ts). */
  sizeBytes: number;
  /** Names the document in limit messages. */
  filename: string;
  signal?: AbortSignal;
}

/** Reads and chunks files; `close` ends its worker threads (idle ones end by themselves). */
export interface DocumentExtractor {
  extract(input: ExtractionInput): Promise<ExtractedDocument>;
  chunk(input: ChunkingInput): Promise<Chunk[]>;
  close(): Promise<void>;
}

/**
 * Two minutes and 1 GiB per file: a 25 MiB Markdown file (the largest upload by default, and the
 * slowest format to parse) is read well within both on a slow two-core machine (docs/knowledge.md
 * has the figures). One file at a time per spare core, at most two, leaves the API its share.
 */
export const DEFAULT_EXTRACTION_OPTIONS: ExtractionPoolOptions = {
  size: Math.max(1, Math.min(2, availableParallelism() - 1)),
  timeoutMs: 120_000,
  memoryMb: 1024,
  idleMs: 30_000,
};

/** An extractor with its own threads and limits (tests use tight ones). */
export function createDocumentExtractor(options: Partial<ExtractionPoolOptions> = {}): DocumentExtractor {
  const pool = new ExtractionPool({ ...DEFAULT_EXTRACTION_OPTIONS, ...options });
  return {
    async extract(input) {
      const job: ExtractionJob = { filename: input.filename, bytes: input.bytes };
      if (input.mediaType !== undefined) job.mediaType = input.mediaType;
      const outcome = await pool.run(job, `"${baseName(input.filename)}"`, input.signal);
      if (outcome.ok && 'document' in outcome) return outcome.document;
      throw failureOf(outcome, 'document extraction');
    },
    async chunk(input) {
      const { document, options, sizeBytes } = input;
      const job: ChunkingJob = { chunk: { document, options, sizeBytes } };
      const outcome = await pool.run(job, `"${baseName(input.filename)}"`, input.signal);
      if (outcome.ok && 'chunks' in outcome) return outcome.chunks;
      throw failureOf(outcome, 'document chunking');
    },
    close: () => pool.close(),
  };
}

/** The error an outcome that is not the expected answer stands for. */
function failureOf(outcome: ExtractionOutcome, what: string): Error {
  if (!outcome.ok && 'failure' in outcome) {
    return new ExtractionError(outcome.failure.reason, outcome.failure.message);
  }
  return new Error(`${what} failed: ${outcome.ok ? 'an answer of the wrong kind' : outcome.unexpected}`);
}

let shared: DocumentExtractor | undefined;

/**
 * Detects the real format from the bytes (magic numbers, UTF-8 validity, structure), the file
 * name's extension and the declared media type; refuses a file lying about its type.
 *
 * Resolves with the document, or rejects with an `ExtractionError` (every way a file can fail),
 * with the signal's reason when `signal` aborts, or with a plain `Error` only on a fault of the
 * service itself. Uses one process-wide extractor with `DEFAULT_EXTRACTION_OPTIONS`.
 */
export function extractDocument(input: ExtractionInput): Promise<ExtractedDocument> {
  shared ??= createDocumentExtractor();
  return shared.extract(input);
}

/**
 * Cuts a stored document into chunks in the same pool of threads, under the same limits: a
 * 25 MiB text takes the chunker about a second, which the API's event loop must not spend.
 * Rejects with an `ExtractionError` `too_large` when the document makes more chunks than its
 * file's size allows (`maxChunksFor`), `corrupt` past the time or memory limit.
 */
export function chunkStoredDocument(input: ChunkingInput): Promise<Chunk[]> {
  shared ??= createDocumentExtractor();
  return shared.chunk(input);
}
