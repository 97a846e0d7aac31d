import { estimateTokens } from '../../lib/tokens.ts';
import type { ContentBlock, ExtractedDocument } from './document.ts';

/**
 * Structure-aware chunking: a document's blocks packed into chunks of at most `targetTokens`
 * (as `estimateTokens` counts them), each within one section and labelled with its heading path.
 *
 *   blocks ──> sections (a heading closes the running chunk; chunks never span sections)
 *          ──> elements: a block that fits in one chunk is one element, kept whole;
 *              a longer one is cut: paragraphs into sentences, code and lists into lines,
 *              tables into rows (header repeated); a sentence or line still too long into
 *              runs of words, and a single word longer than a chunk into slices
 *          ──> chunks: elements packed greedily; a chunk that continues a section opens with
 *              the tail of the previous chunk (up to `overlapTokens`, whole sentences or lines
 *              where possible), except a table's next rows, which open with its header instead
 *
 * Guarantees (checked by chunking.test.ts): every chunk's `tokenCount` (its text's estimate) is
 * at most `targetTokens`; a block that fits in a chunk is never split; chunk text is content only
 * (no heading text, no markup added), in document order; output is deterministic.
 */

export interface ChunkingOptions {
  /** The most tokens a chunk holds, overlap included. */
  targetTokens: number;
  /** Tokens of the previous chunk's end repeated at the start of the next one in the same section. */
  overlapTokens: number;
}

/**
 * 500 tokens with 50 of overlap, Dify's defaults: a chunk holds a few paragraphs (one idea,
 * specific enough to rank well), fits the 512-token input of the small embedding models
 * (bge-small, e5, MiniLM) and leaves room for several chunks in a prompt; 10% overlap carries a
 * sentence or two across a cut so that a fact split by it is still found.
 */
export const DEFAULT_CHUNKING: ChunkingOptions = { targetTokens: 500, overlapTokens: 50 };

/** The accepted range of the options: overlap at most half the target. */
export const CHUNKING_LIMITS = { minTargetTokens: 32, maxTargetTokens: 8192 } as const;

export interface Chunk {
  /** 0-based order of the chunk in its document. */
  position: number;
  text: string;
  /** The document title, then the headings above the chunk, outermost first. */
  headingPath: string[];
  /** `estimateTokens(text)`. */
  tokenCount: number;
}

/** How a run of text is cut and how its tail is taken for overlap. */
type Mode = 'prose' | 'lines' | 'table';

/** A piece of content the packer places whole. */
interface Element {
  text: string;
  /** What joins it to the text before it in a chunk: a paragraph break, a line break or a space. */
  joiner: string;
  mode: Mode;
  /** It continues a block begun in an earlier element (a later sentence, line or row). */
  continues: boolean;
  /** For a table's rows: the header lines a chunk opening with this row repeats ('' for none). */
  tableHeader?: string;
}

const sentences = new Intl.Segmenter('en', { granularity: 'sentence' });
const words = new Intl.Segmenter('en', { granularity: 'word' });

function checkOptions(options: ChunkingOptions): void {
  const { targetTokens, overlapTokens } = options;
  const { minTargetTokens, maxTargetTokens } = CHUNKING_LIMITS;
  if (!Number.isInteger(targetTokens) || targetTokens < minTargetTokens || targetTokens > maxTargetTokens) {
    throw new RangeError(`targetTokens must be an integer from ${minTargetTokens} to ${maxTargetTokens}`);
  }
  if (!Number.isInteger(overlapTokens) || overlapTokens < 0 || overlapTokens > Math.floor(targetTokens / 2)) {
    throw new RangeError('overlapTokens must be an integer from 0 to half of targetTokens');
  }
}

/** A document that would make more chunks than its caller allows: chunking stops there. */
export class TooManyChunksError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`more than ${limit} chunks`);
    this.name = 'TooManyChunksError';
    this.limit = limit;
  }
}

/**
 * Cuts text into chunks; see the file header for the rules. Past `maxChunks` chunks it throws
 * `TooManyChunksError` at once, so a document that amplifies costs no more than the limit.
 */
export function chunkDocument(
  doc: Pick<ExtractedDocument, 'blocks' | 'title'>,
  options: ChunkingOptions,
  maxChunks = Number.POSITIVE_INFINITY,
): Chunk[] {
  checkOptions(options);
  const packer = new ChunkPacker(options, maxChunks);
  const trail: { level: number; text: string }[] = [];
  let sectionOpen = false;
  for (const block of doc.blocks) {
    if (block.kind === 'heading') {
      while ((trail.at(-1)?.level ?? 0) >= block.level) trail.pop();
      trail.push({ level: block.level, text: block.text.trim() });
      sectionOpen = false;
      continue;
    }
    const elements = blockElements(block, options.targetTokens);
    if (elements.length === 0) continue;
    if (!sectionOpen) {
      packer.startSection(headingPath(doc.title, trail));
      sectionOpen = true;
    }
    for (const element of elements) packer.add(element);
  }
  return packer.finish();
}

const sameHeading = (a: string, b: string): boolean =>
  a.replace(/\s+/g, ' ').trim().toLowerCase() === b.replace(/\s+/g, ' ').trim().toLowerCase();

/** The title, then the heading trail; a first heading that repeats the title is not repeated. */
function headingPath(title: string | null, trail: { text: string }[]): string[] {
  const headings = trail.map((heading) => heading.text).filter((text) => text !== '');
  const documentTitle = title?.trim();
  if (!documentTitle) return headings;
  if (headings[0] !== undefined && sameHeading(headings[0], documentTitle)) return headings;
  return [documentTitle, ...headings];
}

/** Packs elements into chunks, section by section. */
class ChunkPacker {
  private readonly target: number;
  private readonly overlap: number;
  private readonly chunks: Chunk[] = [];
  private path: string[] = [];
  private text = '';
  private mode: Mode = 'prose';

  private readonly maxChunks: number;

  constructor(options: ChunkingOptions, maxChunks: number) {
    this.target = options.targetTokens;
    this.overlap = options.overlapTokens;
    this.maxChunks = maxChunks;
  }

  startSection(path: string[]): void {
    this.flush();
    this.path = path;
  }

  add(element: Element): void {
    if (this.text !== '') {
      const joined = this.text + element.joiner + element.text;
      if (estimateTokens(joined) <= this.target) {
        this.text = joined;
        this.mode = element.mode;
        return;
      }
    }
    const previous = this.text;
    const previousMode = this.mode;
    this.flush();
    this.text = previous === '' ? element.text : this.opening(previous, previousMode, element);
    this.mode = element.mode;
  }

  finish(): Chunk[] {
    this.flush();
    return this.chunks;
  }

  /** The text a chunk that continues the section opens with: overlap or table header, then the element. */
  private opening(previous: string, previousMode: Mode, element: Element): string {
    if (element.tableHeader !== undefined && element.continues) {
      return element.tableHeader === '' ? element.text : `${element.tableHeader}\n${element.text}`;
    }
    const limit = Math.min(this.overlap, Math.floor(estimateTokens(previous) / 2));
    const fits = (tail: string) => estimateTokens(tail + element.joiner + element.text) <= this.target;
    const tail = overlapTail(previous, previousMode, limit, fits);
    return tail === '' ? element.text : tail + element.joiner + element.text;
  }

  private flush(): void {
    const text = this.text.replace(/^\n+/, '').trimEnd();
    this.text = '';
    if (text.trim() === '') return;
    if (this.chunks.length >= this.maxChunks) throw new TooManyChunksError(this.maxChunks);
    this.chunks.push({
      position: this.chunks.length,
      text,
      headingPath: [...this.path],
      tokenCount: estimateTokens(text),
    });
  }
}

/** Block text as it goes into a chunk: code keeps its indentation, the rest is trimmed. */
function blockText(block: ContentBlock): string {
  return block.kind === 'code' ? block.text.replace(/^\s*\n/, '').trimEnd() : block.text.trim();
}

/** A block as elements: itself when it fits in a chunk, else its sentences, lines or rows. */
function blockElements(block: ContentBlock, target: number): Element[] {
  const text = blockText(block);
  if (text === '') return [];
  const mode: Mode = block.kind === 'paragraph' ? 'prose' : block.kind === 'table' ? 'table' : 'lines';
  if (estimateTokens(text) <= target) return [{ text, joiner: '\n\n', mode, continues: false }];
  if (block.kind === 'paragraph') return proseElements(text, target);
  if (block.kind === 'table') return tableElements(text, block.headerRows ?? 0, target);
  return lineElements(text, target, 'lines');
}

/** A lone short word with a full stop (`Dr.`, `Fig.`, `No.`) is an abbreviation, not a sentence. */
const ABBREVIATION = /^\S{1,4}\.\s*$/;

/**
 * The sentences of a text, in order and covering all of it, by Unicode sentence segmentation;
 * an abbreviation the segmenter took for a sentence end is joined to what follows it.
 */
function sentencesOf(text: string): string[] {
  const found: string[] = [];
  let pending = '';
  for (const { segment } of sentences.segment(text)) {
    if (ABBREVIATION.test(segment) && !segment.endsWith('\n')) {
      pending += segment;
      continue;
    }
    found.push(pending + segment);
    pending = '';
  }
  if (pending !== '') found.push(pending);
  return found;
}

/** A paragraph too long for one chunk: its sentences, a sentence too long cut into runs of words. */
function proseElements(text: string, target: number): Element[] {
  const pieces: string[] = [];
  for (const segment of sentencesOf(text)) {
    const sentence = segment.trim();
    if (sentence === '') continue;
    if (estimateTokens(sentence) <= target) pieces.push(sentence);
    else pieces.push(...splitWords(sentence, target));
  }
  return pieces.map((piece, index) => ({
    text: piece,
    joiner: index === 0 ? '\n\n' : ' ',
    mode: 'prose',
    continues: index > 0,
  }));
}

/** Code or a list too long for one chunk: its lines, a line too long cut into runs of words. */
function lineElements(text: string, limit: number, mode: Mode, tableHeader?: string): Element[] {
  const elements: Element[] = [];
  for (const line of text.split('\n')) {
    const parts = estimateTokens(line) <= limit ? [line] : splitWords(line, limit);
    parts.forEach((part, index) => {
      elements.push({
        text: part,
        joiner: elements.length === 0 ? '\n\n' : index === 0 ? '\n' : ' ',
        mode,
        continues: elements.length > 0,
        ...(tableHeader !== undefined ? { tableHeader } : {}),
      });
    });
  }
  return elements;
}

/**
 * A table too long for one chunk: its rows, every chunk after the first opening with the header
 * lines again. A header so large that it leaves less than half a chunk for rows is not repeated.
 */
function tableElements(text: string, headerRows: number, target: number): Element[] {
  const lines = text.split('\n');
  const header = lines.slice(0, headerRows).join('\n');
  const rows = lines.slice(headerRows).join('\n');
  const rowLimit = target - estimateTokens(`${header}\n`);
  if (header === '' || rows === '' || rowLimit < target / 2) return lineElements(text, target, 'table', '');
  const elements = lineElements(rows, rowLimit, 'table', header);
  const first = elements[0];
  if (first) first.text = `${header}\n${first.text}`;
  return elements;
}

/**
 * Text cut between words into runs of at most `limit` tokens (a word is what Unicode word
 * segmentation says, so scripts without spaces are cut between words too); a single word longer
 * than `limit` is cut into slices that fit.
 */
function splitWords(text: string, limit: number): string[] {
  const pieces: string[] = [];
  let current = '';
  for (const { segment } of words.segment(text)) {
    if (estimateTokens(current + segment) <= limit) {
      current += segment;
      continue;
    }
    if (current.trim() !== '') pieces.push(current.trim());
    current = segment.trimStart();
    while (estimateTokens(current) > limit) {
      const cut = longestFittingPrefix(current, limit);
      pieces.push(current.slice(0, cut));
      current = current.slice(cut);
    }
  }
  if (current.trim() !== '') pieces.push(current.trim());
  return pieces;
}

/** The length of the longest prefix within `limit` tokens, never splitting a surrogate pair. */
function longestFittingPrefix(text: string, limit: number): number {
  let low = 1;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (estimateTokens(text.slice(0, middle)) <= limit) low = middle;
    else high = middle - 1;
  }
  const code = text.charCodeAt(low - 1);
  return code >= 0xd800 && code <= 0xdbff && low > 1 ? low - 1 : low;
}

/** Where the units of a text start: sentences for prose, lines for the rest. */
function unitStarts(text: string, mode: Mode): number[] {
  if (mode === 'prose') {
    const starts: number[] = [];
    let start = 0;
    for (const sentence of sentencesOf(text)) {
      starts.push(start);
      start += sentence.length;
    }
    return starts;
  }
  const starts = [0];
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) {
    starts.push(index + 1);
  }
  return starts;
}

/**
 * The end of `previous` to repeat at the start of the next chunk: as many whole trailing
 * sentences (or lines) as stay within `limit` tokens and let the next element fit; failing one
 * whole unit, as many trailing words. Never all of `previous`.
 */
function overlapTail(previous: string, mode: Mode, limit: number, fits: (tail: string) => boolean): string {
  if (limit <= 0) return '';
  const acceptable = (tail: string) => tail !== '' && estimateTokens(tail) <= limit && fits(tail);
  let best = '';
  const starts = unitStarts(previous, mode);
  for (let index = starts.length - 1; index >= 1; index -= 1) {
    const tail = previous.slice(starts[index]).trim();
    if (tail === '') continue;
    if (!acceptable(tail)) break;
    best = tail;
  }
  if (best !== '') return best;
  for (let index = previous.length - 1; index > 0; index -= 1) {
    if (!/\s/.test(previous[index] as string)) continue;
    const tail = previous.slice(index + 1).trim();
    if (tail === '') continue;
    if (!acceptable(tail)) break;
    best = tail;
  }
  return best;
}
