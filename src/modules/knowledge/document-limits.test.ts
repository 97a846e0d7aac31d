import { describe, expect, it } from 'vitest';
import { chunkDocument, TooManyChunksError } from './chunking.ts';
import type { Block } from './document.ts';
import {
  CHUNK_SLACK,
  MAX_CHUNKS,
  MAX_TEXT,
  maxChunksFor,
  maxTextFor,
  TEXT_SLACK,
  textTooLarge,
} from './document-limits.ts';

describe('document limits', () => {
  it('grow with the file and stop at the absolute caps', () => {
    expect(maxTextFor(0)).toBe(TEXT_SLACK);
    expect(maxTextFor(1_000_000)).toBe(4_000_000 + TEXT_SLACK);
    expect(maxTextFor(1e9)).toBe(MAX_TEXT);
    expect(maxChunksFor(0)).toBe(CHUNK_SLACK);
    expect(maxChunksFor(256_000)).toBe(1_000 + CHUNK_SLACK);
    expect(maxChunksFor(1e9)).toBe(MAX_CHUNKS);
  });

  it('refuse text past the limit for the file, naming the limit and the figures', () => {
    const blocks = (length: number): Block[] => [
      { kind: 'heading', level: 1, text: 'Title' },
      { kind: 'paragraph', text: 'x'.repeat(length) },
    ];
    const limit = maxTextFor(10_000);
    expect(textTooLarge(blocks(limit - 5), 10_000, '"a.csv"')).toBeUndefined();
    expect(textTooLarge(blocks(limit), 10_000, '"a.csv"')).toBe(
      `"a.csv" reads as ${limit + 5} characters of text, more than the limit of ${limit} for a file of 10000 bytes (4 per byte plus 65536, at most 67108864)`,
    );
  });

  it('stop chunking at the first chunk past the limit', () => {
    const blocks: Block[] = Array.from({ length: 50 }, (_, i) => [
      { kind: 'heading', level: 1, text: `S${i}` } as const,
      { kind: 'paragraph', text: `word ${i}` } as const,
    ]).flat();
    const options = { targetTokens: 500, overlapTokens: 50 };
    expect(chunkDocument({ title: null, blocks }, options, 50)).toHaveLength(50);
    expect(() => chunkDocument({ title: null, blocks }, options, 49)).toThrow(TooManyChunksError);
  });
});
