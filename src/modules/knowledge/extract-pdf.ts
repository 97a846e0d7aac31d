import { getDocumentProxy, getMeta } from 'unpdf';
import { type Block, ExtractionError } from './document.ts';

/**
 * PDF text through unpdf (pdf.js built for servers), page by page.
 *
 * A PDF has no reliable headings (a large bold line may be a title or a pull quote), so each page
 * that carries text becomes a level-1 heading `Page N` followed by its paragraphs: chunks never
 * straddle pages and a search hit can say which page it came from. Paragraphs are rebuilt from
 * the text lines pdf.js reports: a vertical gap clearly wider than the page's usual line spacing
 * starts a new paragraph, and a word hyphenated at a line end is joined again.
 *
 * Every pdf.js failure is classified: a file pdf.js cannot open is `corrupt`, an encrypted one is
 * `no_text`, a page that fails alone is skipped (and counted), and a document in which no page
 * yields text is `no_text` (a scan without OCR).
 */

interface TextLine {
  text: string;
  /** Baseline height from the bottom of the page, in points. */
  y: number;
  /** Glyph height, in points. */
  height: number;
}

/** Text items as pdf.js reports them; marked-content items carry no `str`. */
interface PdfTextItem {
  str?: string;
  transform?: number[];
  height?: number;
  hasEOL?: boolean;
}

interface PdfPage {
  getTextContent(): Promise<{ items: unknown[] }>;
  cleanup(): unknown;
}

/** A gap this much wider than the page's usual line spacing separates paragraphs. */
const PARAGRAPH_GAP_FACTOR = 1.3;
/** Without enough lines to know the spacing, a gap this many glyph heights separates paragraphs. */
const PARAGRAPH_GAP_HEIGHTS = 1.6;

export interface PdfDocument {
  title: string | null;
  blocks: Block[];
  metadata: { pages: number; pages_with_text: number; unreadable_pages?: number };
}

/** Reads a PDF's title and text; `displayName` names the file in messages. */
export async function extractPdf(
  bytes: Uint8Array,
  displayName: string,
  signal?: AbortSignal,
): Promise<PdfDocument> {
  // pdf.js may take ownership of (detach) the buffer it is given: hand it a copy.
  const pdf = await openPdf(bytes.slice(), displayName);
  try {
    signal?.throwIfAborted();
    const title = await readTitle(pdf);
    const blocks: Block[] = [];
    let pagesWithText = 0;
    let unreadable = 0;
    for (let pageNumber = 1; pageNumber <= pdf.numPages; pageNumber += 1) {
      signal?.throwIfAborted();
      const lines = await readPageLines(pdf, pageNumber).catch(() => undefined);
      if (lines === undefined) {
        unreadable += 1;
        continue;
      }
      const paragraphs = linesToParagraphs(lines);
      if (paragraphs.length === 0) continue;
      pagesWithText += 1;
      blocks.push({ kind: 'heading', level: 1, text: `Page ${pageNumber}` });
      for (const text of paragraphs) blocks.push({ kind: 'paragraph', text });
    }
    if (unreadable === pdf.numPages) {
      throw new ExtractionError('corrupt', `${displayName} is a damaged PDF: none of its pages can be read`);
    }
    if (pagesWithText === 0) {
      throw new ExtractionError(
        'no_text',
        `${displayName} contains no text (a scanned PDF needs text recognition before it can be indexed)`,
      );
    }
    return {
      title,
      blocks,
      metadata: {
        pages: pdf.numPages,
        pages_with_text: pagesWithText,
        ...(unreadable > 0 ? { unreadable_pages: unreadable } : {}),
      },
    };
  } finally {
    await pdf.loadingTask.destroy().catch(() => undefined);
  }
}

async function openPdf(bytes: Uint8Array, displayName: string) {
  try {
    return await getDocumentProxy(bytes, { verbosity: 0 });
  } catch (error) {
    if (error instanceof Error && error.name === 'PasswordException') {
      throw new ExtractionError('no_text', `${displayName} is an encrypted PDF: its text cannot be read`, {
        cause: error,
      });
    }
    throw new ExtractionError('corrupt', `${displayName} is not a readable PDF (truncated or damaged)`, {
      cause: error,
    });
  }
}

async function readTitle(pdf: Parameters<typeof getMeta>[0]): Promise<string | null> {
  const meta = await getMeta(pdf).catch(() => undefined);
  const title = meta?.info?.Title;
  return typeof title === 'string' && title.trim() !== '' ? title.trim() : null;
}

async function readPageLines(
  pdf: { getPage(pageNumber: number): Promise<PdfPage> },
  pageNumber: number,
): Promise<TextLine[]> {
  const page = await pdf.getPage(pageNumber);
  try {
    const content = await page.getTextContent();
    return itemsToLines(content.items as PdfTextItem[]);
  } finally {
    page.cleanup();
  }
}

/** Joins text items into lines at the end-of-line marks pdf.js sets. */
function itemsToLines(items: PdfTextItem[]): TextLine[] {
  const lines: TextLine[] = [];
  let current: TextLine | undefined;
  for (const item of items) {
    if (typeof item.str !== 'string') continue;
    if (current === undefined && item.str.trim() !== '') {
      current = {
        text: '',
        y: item.transform?.[5] ?? 0,
        height: item.height || Math.abs(item.transform?.[3] ?? 0),
      };
    }
    if (current) current.text += item.str;
    if (item.hasEOL && current) {
      lines.push(current);
      current = undefined;
    }
  }
  if (current) lines.push(current);
  return lines
    .map((line) => ({ ...line, text: line.text.replace(/\s+/g, ' ').trim() }))
    .filter((line) => line.text !== '');
}

/** The usual distance between consecutive lines: the lower quartile of the downward gaps. */
function usualLineGap(lines: TextLine[]): number | undefined {
  const gaps = lines
    .slice(1)
    .map((line, index) => (lines[index] as TextLine).y - line.y)
    .filter((gap) => gap > 0)
    .sort((a, b) => a - b);
  return gaps.length >= 2 ? gaps[Math.floor((gaps.length - 1) / 4)] : undefined;
}

function linesToParagraphs(lines: TextLine[]): string[] {
  const usual = usualLineGap(lines);
  const paragraphs: string[] = [];
  let current = '';
  lines.forEach((line, index) => {
    const previous = lines[index - 1];
    if (previous && startsParagraph(previous, line, usual)) {
      paragraphs.push(current);
      current = '';
    }
    current = joinLine(current, line.text);
  });
  if (current !== '') paragraphs.push(current);
  return paragraphs;
}

function startsParagraph(previous: TextLine, line: TextLine, usual: number | undefined): boolean {
  const gap = previous.y - line.y;
  if (gap <= 0) return true; // back up the page: a new column or a text box
  const threshold = usual ? usual * PARAGRAPH_GAP_FACTOR : Math.max(line.height, 1) * PARAGRAPH_GAP_HEIGHTS;
  return gap > threshold;
}

/** Joins a line to its paragraph; `card-` + `board.` becomes `cardboard.`. */
function joinLine(paragraph: string, line: string): string {
  if (paragraph === '') return line;
  if (/\p{L}-$/u.test(paragraph) && /^\p{Ll}/u.test(line)) return paragraph.slice(0, -1) + line;
  return `${paragraph} ${line}`;
}
