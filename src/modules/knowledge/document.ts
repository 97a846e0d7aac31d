/**
 * The shape every extractor produces and the chunker consumes: a document as a flat sequence of
 * structural blocks. Headings carry their level; the content blocks that follow a heading belong
 * to it until the next heading of the same or a higher level.
 */

/** The formats the knowledge store reads. */
export type DocumentFormat = 'pdf' | 'markdown' | 'html' | 'text' | 'json' | 'csv' | 'code';

/**
 * One structural unit of a document.
 *
 * - `heading`: `level` 1 (top) to 6; its text is not content, it names what follows.
 * - `paragraph`: prose; split at sentence boundaries when too long.
 * - `list`: one item a line (`- item`, `1. item`, nested items indented by two spaces).
 * - `table`: one row a line, cells joined by ` | `; the first `headerRows` lines are the header
 *   row, repeated by the chunker in every piece of a table it must split (0 or absent when every
 *   line names its own columns, as CSV rows do).
 * - `code`: source text, whitespace kept; `language` when known (`typescript`, `bash`, ...).
 */
export type Block =
  | { kind: 'heading'; level: number; text: string }
  | { kind: 'paragraph' | 'list' | 'table' | 'code'; text: string; language?: string; headerRows?: number };

/** A content block (anything but a heading). */
export type ContentBlock = Exclude<Block, { kind: 'heading' }>;

/** What an extractor makes of a file. */
export interface ExtractedDocument {
  format: DocumentFormat;
  /** The first H1 (Markdown), `<title>` (HTML), the PDF's Title, else the file name. */
  title: string | null;
  blocks: Block[];
  /**
   * Facts about the source, by format: `pages` and `pages_with_text` (PDF), `language` (HTML's
   * `lang`, code's language), `rows`, `columns` and `delimiter` (CSV), `items` (JSON), `lines`
   * (text, code), and `encoding` when the bytes were not UTF-8.
   */
  metadata: Record<string, string | number | boolean>;
}

/**
 * Why a file yields no document. The route maps these to HTTP: `unsupported_type` and
 * `type_mismatch` are 415, the others 422.
 *
 * - `unsupported_type`: a format the store does not read (an image, an archive, unknown binary).
 * - `type_mismatch`: the bytes contradict the file name or the declared media type (a ZIP named
 *   `notes.md`, a `.pdf` that does not start with `%PDF`).
 * - `empty`: no bytes, or only whitespace.
 * - `corrupt`: the format is right but the content cannot be parsed (truncated PDF, invalid JSON,
 *   an unterminated CSV quote).
 * - `no_text`: readable, but there is no text in it (a scanned PDF without OCR, an encrypted PDF,
 *   an HTML page that is all script).
 * - `too_large`: it reads as more text, or makes more chunks, than its size allows
 *   (document-limits.ts): a CSV repeating long column names in every row, say.
 */
export type ExtractionFailure =
  | 'unsupported_type'
  | 'empty'
  | 'corrupt'
  | 'no_text'
  | 'type_mismatch'
  | 'too_large';

/** A file that yields no document; `message` is written for the person who uploaded it. */
export class ExtractionError extends Error {
  readonly reason: ExtractionFailure;

  constructor(reason: ExtractionFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ExtractionError';
    this.reason = reason;
  }
}
