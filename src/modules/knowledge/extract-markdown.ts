import { decodeHTML } from 'entities';
import { Lexer, type Token, type Tokens } from 'marked';
import type { Block, ContentBlock } from './document.ts';
import { extractHtml } from './extract-html.ts';

/**
 * Markdown through marked's lexer (CommonMark with GitHub's tables, task lists and
 * strikethrough), its token tree turned into blocks:
 *
 * - headings (ATX and setext) keep their level; inline markup is reduced to its text (link text,
 *   image alt text, code spans verbatim), entities decoded;
 * - paragraphs join their soft line breaks with spaces and keep hard breaks;
 * - a list is one block, one item a line (`- item`, `3. item`, `- [x] task`), nested items
 *   indented by two spaces, an item's later paragraphs and code on indented lines;
 * - fenced and indented code is a code block, the fence's first word its language;
 * - a table is one block, its header row first, cells joined by ` | `;
 * - a block quote contributes its paragraphs, lists and code (its headings become paragraphs so
 *   that a quoted heading does not reshape the document's outline);
 * - raw HTML blocks go through the HTML extractor (so `<h1 align="center">` is still a heading);
 * - YAML front matter is removed, its `title:` kept as the title.
 */

export interface MarkdownDocument {
  /** Front matter's `title`, else the first level-1 heading. */
  title: string | null;
  blocks: Block[];
}

/** Front matter is short; a `---` further down is a thematic break, not its end. */
const FRONT_MATTER_MAX_LINES = 200;

function splitFrontMatter(text: string): { title: string | null; body: string } {
  const lines = text.split('\n', FRONT_MATTER_MAX_LINES + 1);
  if (lines[0]?.trimEnd() !== '---') return { title: null, body: text };
  const end = lines.findIndex((line, index) => index > 0 && /^(?:---|\.\.\.)\s*$/.test(line));
  if (end === -1) return { title: null, body: text };
  const titleLine = lines.slice(1, end).find((line) => /^title\s*:/i.test(line));
  const title = titleLine
    ?.replace(/^title\s*:\s*/i, '')
    .trim()
    .replace(/^(["'])(.*)\1$/, '$2')
    .trim();
  const consumed = lines.slice(0, end + 1).reduce((length, line) => length + line.length + 1, 0);
  return { title: title || null, body: text.slice(consumed) };
}

/** The plain text of inline tokens. */
function inlineText(tokens: Token[] | undefined): string {
  let text = '';
  for (const token of tokens ?? []) {
    switch (token.type) {
      case 'text':
        // A line break inside text is a soft break, a space; hard breaks arrive as `br`.
        text +=
          'tokens' in token && token.tokens
            ? inlineText(token.tokens)
            : decodeHTML(token.text).replace(/\n/g, ' ');
        break;
      case 'escape':
      case 'codespan':
        text += token.text;
        break;
      case 'image':
        text += decodeHTML(token.text);
        break;
      case 'br':
        text += '\n';
        break;
      case 'html':
      case 'checkbox':
        break;
      default:
        text += 'tokens' in token && token.tokens ? inlineText(token.tokens) : decodeHTML(token.raw ?? '');
    }
  }
  return text;
}

/** Inline text as prose: soft line breaks become spaces, hard breaks (`br`) stay. */
function proseText(tokens: Token[] | undefined): string {
  return inlineText(tokens)
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
}

/** Lines of a list, nested lists indented by two spaces per level. */
function listLines(list: Tokens.List, indent: string): string[] {
  const lines: string[] = [];
  const start = typeof list.start === 'number' ? list.start : 1;
  list.items.forEach((item, index) => {
    const marker = list.ordered ? `${start + index}. ` : '- ';
    const task = item.task ? (item.checked ? '[x] ' : '[ ] ') : '';
    const inner = `${indent}${' '.repeat(marker.length)}`;
    let first = true;
    for (const token of item.tokens) {
      const itemLines = itemTokenLines(token, inner);
      if (itemLines.length === 0) continue;
      if (first && token.type !== 'list') {
        lines.push(`${indent}${marker}${task}${(itemLines[0] as string).trimStart()}`, ...itemLines.slice(1));
      } else {
        if (first) lines.push(`${indent}${marker}${task}`.trimEnd());
        lines.push(...itemLines);
      }
      first = false;
    }
    if (first && task) lines.push(`${indent}${marker}${task}`.trimEnd());
  });
  return lines;
}

/** Lines one token of a list item contributes, already indented. */
function itemTokenLines(token: Token, indent: string): string[] {
  switch (token.type) {
    case 'list':
      return listLines(token as Tokens.List, indent);
    case 'code':
      return (token as Tokens.Code).text.split('\n').map((line) => `${indent}${line}`);
    case 'space':
    case 'checkbox':
      return [];
    default: {
      const text = 'tokens' in token && token.tokens ? proseText(token.tokens) : proseText([token]);
      return text === '' ? [] : text.split('\n').map((line) => `${indent}${line}`);
    }
  }
}

function tableBlock(table: Tokens.Table): ContentBlock {
  const row = (cells: Tokens.TableCell[]) => cells.map((cell) => proseText(cell.tokens).replace(/\n/g, ' '));
  const lines = [row(table.header), ...table.rows.map(row)].map((cells) => cells.join(' | '));
  return { kind: 'table', text: lines.join('\n'), headerRows: 1 };
}

function tokenBlocks(token: Token, inQuote: boolean): Block[] {
  switch (token.type) {
    case 'heading': {
      const text = proseText(token.tokens).replace(/\n/g, ' ');
      if (text === '') return [];
      return [inQuote ? { kind: 'paragraph', text } : { kind: 'heading', level: token.depth, text }];
    }
    case 'paragraph':
    case 'text': {
      const text = proseText(token.tokens ?? [token]);
      return text === '' ? [] : [{ kind: 'paragraph', text }];
    }
    case 'list': {
      const text = listLines(token as Tokens.List, '').join('\n');
      return text.trim() === '' ? [] : [{ kind: 'list', text }];
    }
    case 'code': {
      const code = token as Tokens.Code;
      const text = code.text.replace(/^\s*\n/, '').trimEnd();
      const language = code.lang?.trim().split(/\s+/)[0]?.toLowerCase();
      return text === '' ? [] : [{ kind: 'code', text, ...(language ? { language } : {}) }];
    }
    case 'table':
      return [tableBlock(token as Tokens.Table)];
    case 'blockquote':
      return (token as Tokens.Blockquote).tokens.flatMap((inner) => tokenBlocks(inner, true));
    case 'html':
      return extractHtml(token.raw).blocks.map((block) =>
        inQuote && block.kind === 'heading' ? { kind: 'paragraph', text: block.text } : block,
      );
    default:
      return [];
  }
}

/** The title and blocks of a Markdown text. */
export function extractMarkdown(text: string): MarkdownDocument {
  const { title: frontMatterTitle, body } = splitFrontMatter(text);
  const tokens = new Lexer({ gfm: true }).lex(body);
  const blocks = tokens.flatMap((token) => tokenBlocks(token, false));
  const firstH1 = blocks.find((block) => block.kind === 'heading' && block.level === 1);
  return { title: frontMatterTitle ?? firstH1?.text ?? null, blocks };
}

/** Containers (block quotes, list items) opened at one line's start that no real document reaches. */
const MAX_CONTAINER_NESTING = 16;
/** Indentation, in columns, beyond which a line outside fenced code is nesting rather than layout. */
const MAX_INDENT_COLUMNS = 64;

const SPACE = 0x20;
const TAB = 0x09;
const isDigit = (code: number) => code >= 0x30 && code <= 0x39;
const isBlank = (code: number) => code === SPACE || code === TAB;

/**
 * Whether a Markdown text nests containers deeper than any real document does: more than 16
 * block quotes or list markers opened at a line's start, or a line indented by more than 64
 * columns outside fenced code. Parsing such nesting costs time that grows with the cube of its
 * depth (a 4 KB file of nested quotes takes seconds), so the caller reads it as plain text.
 * One linear pass, no allocation per line.
 */
export function markdownTooDeep(text: string): boolean {
  let inFence = false;
  let lineStart = 0;
  while (lineStart < text.length) {
    const newline = text.indexOf('\n', lineStart);
    const end = newline === -1 ? text.length : newline;
    let index = lineStart;
    let columns = 0;
    let containers = 0;
    while (index < end) {
      const code = text.charCodeAt(index);
      if (code === SPACE) columns += 1;
      else if (code === TAB) columns += 4;
      else if (code === 0x3e)
        containers += 1; // >
      else if ((code === 0x2d || code === 0x2a || code === 0x2b) && isBlank(text.charCodeAt(index + 1))) {
        containers += 1; // - * + followed by a blank: a bullet
      } else if (isDigit(code)) {
        let after = index;
        while (after < end && isDigit(text.charCodeAt(after))) after += 1;
        const delimiter = text.charCodeAt(after);
        if (!((delimiter === 0x2e || delimiter === 0x29) && isBlank(text.charCodeAt(after + 1)))) break;
        containers += 1; // 1. or 1) followed by a blank: an ordered item
        index = after;
      } else break;
      index += 1;
    }
    if (text.startsWith('```', index) || text.startsWith('~~~', index)) inFence = !inFence;
    else if (!inFence && (containers > MAX_CONTAINER_NESTING || columns > MAX_INDENT_COLUMNS)) return true;
    lineStart = end + 1;
  }
  return false;
}
