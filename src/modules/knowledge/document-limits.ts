import type { Block } from './document.ts';

/**
 * How much a document may grow on its way into the index, relative to the bytes it arrived as.
 * Reading and chunking can amplify: a CSV repeats its header names in every row's text (a
 * 60 KB file of short values under long names became megabytes of text and thousands of
 * chunks), a Markdown file of tiny sections becomes a chunk per few bytes, each carrying its
 * heading path. Every later step (storing the text, chunking, tsvector and statistics,
 * embeddings) costs in proportion to what comes out, so what comes out is bounded by what came
 * in, and absolutely:
 *
 *   extracted text  <=  min(TEXT_PER_BYTE x bytes + TEXT_SLACK, MAX_TEXT)    else the file is refused
 *   chunks          <=  min(bytes / BYTES_PER_CHUNK + CHUNK_SLACK, MAX_CHUNKS) else the document fails
 *
 * Ordinary files stay far below: text reads as about its own size (PDF and HTML less, CSV rows
 * with their column names two to three times), and chunks of the default 500 tokens are one
 * per 2 KB of text. docs/knowledge.md ("Limits") has the figures.
 */

/** Extracted text (UTF-16 code units of the blocks' text) per byte of the file. */
export const TEXT_PER_BYTE = 4;
/** Text any file may yield whatever its size (a tiny JSON file written out as `key: value`). */
export const TEXT_SLACK = 64 * 1024;
/** The most text one document may yield. */
export const MAX_TEXT = 64 * 1024 * 1024;
/** Bytes of the file per chunk it may yield. */
export const BYTES_PER_CHUNK = 256;
/** Chunks any document may yield whatever its size. */
export const CHUNK_SLACK = 200;
/** The most chunks one document may yield. */
export const MAX_CHUNKS = 100_000;

/** The most text a file of `bytes` bytes may yield. */
export const maxTextFor = (bytes: number): number => Math.min(TEXT_PER_BYTE * bytes + TEXT_SLACK, MAX_TEXT);

/** The most chunks a file of `bytes` bytes may yield. */
export const maxChunksFor = (bytes: number): number =>
  Math.min(Math.floor(bytes / BYTES_PER_CHUNK) + CHUNK_SLACK, MAX_CHUNKS);

/** The text of a document's blocks, headings included, in UTF-16 code units. */
export function textLength(blocks: readonly Block[]): number {
  let length = 0;
  for (const block of blocks) length += block.text.length;
  return length;
}

/**
 * Why a file of `bytes` bytes yielding `blocks` is refused, or undefined: its text passes
 * `maxTextFor(bytes)`. The message names the limit and the figures, for the person uploading.
 */
export function textTooLarge(blocks: readonly Block[], bytes: number, shown: string): string | undefined {
  const length = textLength(blocks);
  const limit = maxTextFor(bytes);
  if (length <= limit) return undefined;
  return `${shown} reads as ${length} characters of text, more than the limit of ${limit} for a file of ${bytes} bytes (${TEXT_PER_BYTE} per byte plus ${TEXT_SLACK}, at most ${MAX_TEXT})`;
}

/** Why a document of `bytes` bytes cannot have more than `limit` chunks (the failure reason shown). */
export const tooManyChunks = (limit: number, bytes: number): string =>
  `the document makes more than ${limit} chunks, the limit for a file of ${bytes} bytes (one per ${BYTES_PER_CHUNK} bytes plus ${CHUNK_SLACK}, at most ${MAX_CHUNKS}); a larger target_tokens makes fewer`;
