import { baseName, detectFormat } from './detect-format.ts';
import { type Block, type DocumentFormat, type ExtractedDocument, ExtractionError } from './document.ts';
import { textTooLarge } from './document-limits.ts';
import { extractCsv } from './extract-csv.ts';
import { extractHtml } from './extract-html.ts';
import { extractJson } from './extract-json.ts';
import { extractMarkdown, markdownTooDeep } from './extract-markdown.ts';
import { extractPdf } from './extract-pdf.ts';
import { extractCode, extractPlainText } from './extract-text.ts';

/**
 * Reading a file into blocks, in the calling thread:
 *
 *   bytes + name + media type --detectFormat--> pdf bytes | decoded text and its format
 *     pdf       --unpdf-------> "Page N" headings, paragraphs
 *     markdown  --marked------> headings, paragraphs, lists, code, tables
 *     html      --htmlparser2-> the same, scripts, styles and navigation dropped
 *     text      --------------> paragraphs (blank-line separated)
 *     code      --------------> code blocks (top-level units)
 *     json      --------------> readable key: value blocks
 *     csv       --csv-parse---> one table block of self-describing rows
 *
 * Every failure is an `ExtractionError`. A parser that throws on a file's content (a stack
 * overflow on absurd nesting, an internal error) makes that file `corrupt`: whatever a file
 * contains, the answer is a classified refusal. `extractDocument` (extract.ts) runs this in a
 * worker thread with memory and time limits; call this directly only where blocking the thread
 * for the length of a parse is acceptable.
 */

/** What a file is read from. */
export interface DocumentSource {
  /** The file's name or path; its extension is one witness of the format, and the title fallback. */
  filename: string;
  /** The declared `Content-Type`, when there was one; parameters are ignored. */
  mediaType?: string;
  bytes: Uint8Array;
  /** Stops a long extraction (a large PDF is read page by page). */
  signal?: AbortSignal;
}

/**
 * Reads a file into a document, or throws the `ExtractionError` that says why it cannot. A file
 * whose text passes the limit for its size (document-limits.ts) is `too_large`.
 */
export async function readDocument(source: DocumentSource): Promise<ExtractedDocument> {
  const document = await readBlocks(source);
  const tooLarge = textTooLarge(document.blocks, source.bytes.length, `"${baseName(source.filename)}"`);
  if (tooLarge) throw new ExtractionError('too_large', tooLarge);
  return document;
}

async function readBlocks(source: DocumentSource): Promise<ExtractedDocument> {
  source.signal?.throwIfAborted();
  const name = baseName(source.filename);
  const shown = `"${name}"`;
  const detected = detectFormat(source);
  if (detected.format === 'pdf') {
    const pdf = await extractPdf(detected.bytes, shown, source.signal);
    return { format: 'pdf', title: pdf.title ?? name, blocks: pdf.blocks, metadata: pdf.metadata };
  }
  source.signal?.throwIfAborted();
  const text = detected.text.replace(/\r\n?/g, '\n');
  const encoding: ExtractedDocument['metadata'] =
    detected.encoding === 'utf-8' ? {} : { encoding: detected.encoding };
  const read = parseText(detected.format, text, shown, detected.extension, detected.language);
  if (!read.blocks.some((block) => block.kind !== 'heading')) {
    throw new ExtractionError('no_text', `${shown} contains no text to index`);
  }
  return {
    format: detected.format,
    title: read.title ?? name,
    blocks: read.blocks,
    metadata: { ...read.metadata, ...encoding },
  };
}

interface ParsedText {
  title: string | null;
  blocks: Block[];
  metadata: ExtractedDocument['metadata'];
}

const FORMAT_NAMES: Record<Exclude<DocumentFormat, 'pdf'>, string> = {
  markdown: 'Markdown',
  html: 'HTML',
  text: 'text',
  json: 'JSON',
  csv: 'CSV',
  code: 'source code',
};

/** Parses decoded text; a parser's own failure on the content becomes `corrupt`. */
function parseText(
  format: Exclude<DocumentFormat, 'pdf'>,
  text: string,
  shown: string,
  extension: string,
  language: string | undefined,
): ParsedText {
  try {
    return parseTextAs(format, text, shown, extension, language);
  } catch (error) {
    if (error instanceof ExtractionError) throw error;
    const why = error instanceof RangeError ? ' (nested too deeply or too large)' : '';
    throw new ExtractionError('corrupt', `${shown} could not be read as ${FORMAT_NAMES[format]}${why}`, {
      cause: error,
    });
  }
}

function parseTextAs(
  format: Exclude<DocumentFormat, 'pdf'>,
  text: string,
  shown: string,
  extension: string,
  language: string | undefined,
): ParsedText {
  const lines = { lines: countLines(text) };
  switch (format) {
    case 'markdown':
      // Markdown parsers take time that grows steeply with container nesting; no real document
      // nests that deep, so such a file is read as the plain text it then really is.
      if (markdownTooDeep(text)) {
        return { title: null, blocks: extractPlainText(text), metadata: { ...lines, read_as: 'text' } };
      }
      return { ...extractMarkdown(text), metadata: lines };
    case 'html': {
      const html = extractHtml(text);
      return {
        title: html.title,
        blocks: html.blocks,
        metadata: html.language ? { language: html.language } : {},
      };
    }
    case 'json': {
      const json = extractJson(text, shown, extension === 'jsonl' || extension === 'ndjson');
      return { title: null, ...json };
    }
    case 'csv':
      return { title: null, ...extractCsv(text, shown, extension) };
    case 'code':
      return {
        title: null,
        blocks: extractCode(text, language),
        metadata: { ...lines, ...(language ? { language } : {}) },
      };
    case 'text':
      return { title: null, blocks: extractPlainText(text), metadata: lines };
  }
}

function countLines(text: string): number {
  let count = 1;
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) count += 1;
  return text.endsWith('\n') ? count - 1 : count;
}
