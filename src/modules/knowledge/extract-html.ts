import { Parser } from 'htmlparser2';
import type { Block } from './document.ts';

/**
 * HTML text through htmlparser2's streaming parser (entities decoded, implied end tags closed),
 * in one pass and without building a DOM, so a large page costs little more than its text.
 *
 * What is kept: `h1`-`h6` as headings; paragraphs (any text between block-level elements, `br`
 * as a line break); `ul`/`ol` as one list block per outermost list, nested items indented;
 * `pre` as a code block (language from a `language-*` or `lang-*` class); `table` as a table
 * block, one row a line, its header row first when it has one. What is dropped: scripts, styles,
 * `noscript`, `template`, `svg`, embedded frames and objects, form controls, navigation (`nav`,
 * `role="navigation"`) and anything hidden (`hidden`, `aria-hidden="true"`, `display:none`).
 */

export interface HtmlDocument {
  /** `<title>`, else the first `h1`. */
  title: string | null;
  blocks: Block[];
  /** The document's `lang` attribute, when it has one. */
  language?: string;
}

const DROPPED = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'iframe',
  'object',
  'embed',
  'canvas',
  'video',
  'audio',
  'map',
  'nav',
  'select',
  'datalist',
  'button',
  'textarea',
]);

/** Elements that end the running paragraph when they open or close. */
const BLOCK_ELEMENTS = new Set([
  'p',
  'div',
  'section',
  'article',
  'main',
  'header',
  'footer',
  'aside',
  'blockquote',
  'figure',
  'figcaption',
  'address',
  'details',
  'summary',
  'dl',
  'dt',
  'dd',
  'form',
  'fieldset',
  'legend',
  'hr',
  'body',
  'center',
  'caption',
]);

const HEADING = /^h([1-6])$/;

/**
 * Open elements beyond which a page is refused: real pages nest a few dozen deep, while the
 * parser's cost per element grows with the depth (a file of nothing but `<div>` would take
 * minutes).
 */
const MAX_DEPTH = 1000;

function isDropped(name: string, attributes: Record<string, string>): boolean {
  if (DROPPED.has(name)) return true;
  if ('hidden' in attributes || attributes['aria-hidden'] === 'true') return true;
  if (attributes.role === 'navigation') return true;
  return /display\s*:\s*none/i.test(attributes.style ?? '');
}

function languageOfClass(className: string | undefined): string | undefined {
  const match = /(?:^|\s)(?:language|lang)-([\w+#.-]+)/i.exec(className ?? '');
  return match?.[1]?.toLowerCase();
}

const collapse = (text: string): string => text.replace(/\s+/g, ' ');

/** One list item: its indentation and marker, then its text as it arrives. */
interface ListLine {
  prefix: string;
  text: string;
}

interface TableRow {
  cells: string[];
  header: boolean;
}

/** Collects the blocks of one HTML text as the parser walks it. */
class HtmlBlockCollector {
  readonly blocks: Block[] = [];
  title: string | null = null;
  firstH1: string | null = null;
  language: string | undefined;

  /** Open elements, each remembering whether it (or an ancestor) is dropped. */
  private readonly open: { name: string; dropped: boolean }[] = [];
  private paragraph = '';
  private titleText: string | undefined;
  private heading: { level: number; text: string } | undefined;
  private pre: { text: string; language?: string } | undefined;
  private list: { items: ListLine[]; levels: { ordered: boolean; next: number }[] } | undefined;
  private table:
    | { rows: TableRow[]; depth: number; inHead: boolean; inCaption: boolean; caption: string }
    | undefined;

  onOpen(name: string, attributes: Record<string, string>): void {
    if (this.open.length >= MAX_DEPTH)
      throw new RangeError(`HTML elements nested more than ${MAX_DEPTH} deep`);
    const dropped = (this.open.at(-1)?.dropped ?? false) || isDropped(name, attributes);
    this.open.push({ name, dropped });
    if (dropped) return;
    if (name === 'html' && attributes.lang) this.language = attributes.lang;
    if (name === 'title') this.titleText = '';
    else if (this.table) this.openInTable(name);
    else if (this.list) this.openInList(name, attributes);
    else if (this.pre) {
      if (name === 'code') this.pre.language ??= languageOfClass(attributes.class);
    } else this.openInFlow(name, attributes);
  }

  onText(text: string): void {
    if (this.open.at(-1)?.dropped) return;
    if (this.titleText !== undefined) this.titleText += text;
    else if (this.table) this.appendToCell(text);
    else if (this.list) this.appendToItem(text);
    else if (this.pre) this.pre.text += text;
    else if (this.heading) this.heading.text += text;
    else this.paragraph += collapse(text);
  }

  onClose(name: string): void {
    const element = this.open.pop();
    if (!element || element.dropped) return;
    if (name === 'title' && this.titleText !== undefined) {
      this.title ??= collapse(this.titleText).trim() || null;
      this.titleText = undefined;
    } else if (this.table) this.closeInTable(name);
    else if (this.list) this.closeInList(name);
    else if (name === 'pre' && this.pre) this.closePre();
    else if (HEADING.test(name) && this.heading) this.closeHeading();
    else if (BLOCK_ELEMENTS.has(name)) this.flushParagraph();
  }

  finish(): void {
    this.flushParagraph();
  }

  private openInFlow(name: string, attributes: Record<string, string>): void {
    const level = HEADING.exec(name)?.[1];
    if (level) {
      this.flushParagraph();
      this.heading = { level: Number(level), text: '' };
    } else if (name === 'pre') {
      this.flushParagraph();
      this.pre = { text: '', language: languageOfClass(attributes.class) };
    } else if (name === 'ul' || name === 'ol') {
      this.flushParagraph();
      this.list = { items: [], levels: [] };
      this.openInList(name, attributes);
    } else if (name === 'table') {
      this.flushParagraph();
      this.table = { rows: [], depth: 1, inHead: false, inCaption: false, caption: '' };
    } else if (name === 'br') this.paragraph += '\n';
    else if (BLOCK_ELEMENTS.has(name)) this.flushParagraph();
  }

  private flushParagraph(): void {
    const text = this.paragraph
      .split('\n')
      .map((line) => collapse(line).trim())
      .filter((line) => line !== '')
      .join('\n');
    this.paragraph = '';
    if (text !== '') this.blocks.push({ kind: 'paragraph', text });
  }

  private closeHeading(): void {
    const text = collapse(this.heading?.text ?? '').trim();
    const level = this.heading?.level ?? 1;
    this.heading = undefined;
    if (text === '') return;
    if (level === 1) this.firstH1 ??= text;
    this.blocks.push({ kind: 'heading', level, text });
  }

  private closePre(): void {
    const text = (this.pre?.text ?? '').replace(/^\s*\n/, '').trimEnd();
    const language = this.pre?.language;
    this.pre = undefined;
    if (text !== '') this.blocks.push({ kind: 'code', text, ...(language ? { language } : {}) });
  }

  private openInList(name: string, attributes: Record<string, string>): void {
    const list = this.list;
    if (!list) return;
    if (name === 'ul' || name === 'ol') {
      const start = Number.parseInt(attributes.start ?? '1', 10);
      list.levels.push({ ordered: name === 'ol', next: Number.isFinite(start) ? start : 1 });
    } else if (name === 'li') {
      const level = list.levels.at(-1) ?? { ordered: false, next: 1 };
      const marker = level.ordered ? `${level.next++}. ` : '- ';
      list.items.push({ prefix: `${'  '.repeat(Math.max(list.levels.length - 1, 0))}${marker}`, text: '' });
    } else if (name === 'br' || BLOCK_ELEMENTS.has(name) || name === 'pre') this.appendToItem(' ');
  }

  private appendToItem(text: string): void {
    const list = this.list;
    if (!list) return;
    if (list.items.length === 0) list.items.push({ prefix: '- ', text: '' });
    const item = list.items.at(-1) as ListLine;
    item.text = collapse(item.text + text);
  }

  private closeInList(name: string): void {
    const list = this.list;
    if (!list || (name !== 'ul' && name !== 'ol')) return;
    list.levels.pop();
    if (list.levels.length > 0) return;
    const text = list.items
      .map((item) => ({ prefix: item.prefix, text: item.text.trim() }))
      .filter((item) => item.text !== '')
      .map((item) => `${item.prefix}${item.text}`)
      .join('\n');
    this.list = undefined;
    if (text !== '') this.blocks.push({ kind: 'list', text });
  }

  private openInTable(name: string): void {
    const table = this.table;
    if (!table) return;
    if (name === 'table') table.depth += 1;
    else if (table.depth > 1) this.appendToCell(' ');
    else if (name === 'thead') table.inHead = true;
    else if (name === 'tr') table.rows.push({ cells: [], header: table.inHead });
    else if (name === 'td' || name === 'th') {
      if (table.rows.length === 0) table.rows.push({ cells: [], header: table.inHead });
      const row = table.rows.at(-1) as TableRow;
      row.cells.push('');
      if (name === 'td' && !table.inHead) row.header = false;
      else if (row.cells.length === 1) row.header = true;
    } else if (name === 'caption') table.inCaption = true;
    else if (name === 'br' || BLOCK_ELEMENTS.has(name)) this.appendToCell(' ');
  }

  private appendToCell(text: string): void {
    const table = this.table;
    if (!table) return;
    if (table.inCaption) {
      table.caption += text;
      return;
    }
    const row = table.rows.at(-1);
    if (!row || row.cells.length === 0) return;
    row.cells[row.cells.length - 1] += text;
  }

  private closeInTable(name: string): void {
    const table = this.table;
    if (!table) return;
    if (name === 'thead') table.inHead = false;
    if (name === 'caption') table.inCaption = false;
    if (name !== 'table') return;
    table.depth -= 1;
    if (table.depth > 0) return;
    this.table = undefined;
    const caption = collapse(table.caption).trim();
    if (caption !== '') this.blocks.push({ kind: 'paragraph', text: caption });
    const rows = table.rows
      .map((row) => ({ header: row.header, cells: row.cells.map((cell) => collapse(cell).trim()) }))
      .filter((row) => row.cells.some((cell) => cell !== ''));
    if (rows.length === 0) return;
    const headerRows = rows[0]?.header && rows.length > 1 ? 1 : 0;
    const text = rows.map((row) => row.cells.join(' | ')).join('\n');
    this.blocks.push({ kind: 'table', text, headerRows });
  }
}

/** The blocks, title and language of an HTML text (a page, or a fragment inside Markdown). */
export function extractHtml(html: string): HtmlDocument {
  const collector = new HtmlBlockCollector();
  const parser = new Parser(
    {
      onopentag: (name, attributes) => collector.onOpen(name, attributes),
      ontext: (text) => collector.onText(text),
      onclosetag: (name) => collector.onClose(name),
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  collector.finish();
  return {
    title: collector.title ?? collector.firstH1,
    blocks: collector.blocks,
    ...(collector.language ? { language: collector.language } : {}),
  };
}
