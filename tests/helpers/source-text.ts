/**
 * The literal text of a TypeScript source, for checks over what a file says rather than what
 * it imports: each string literal and each template literal (with the expressions inside
 * `${...}` removed, their own literals listed separately), outside comments and regular
 * expression literals. A small scanner, not a parser: it knows the lexical grammar well enough
 * for this codebase (strings, templates nested in `${}`, comments, regex literals by the usual
 * rule of what may precede a division), and the test that uses it checks it on fixtures.
 */
export interface Literal {
  /** `'` or `"` for a string, `` ` `` for a template. */
  quote: "'" | '"' | '`';
  /** The identifier tagging a template (`sql` for sql`...`, `raw` for sql.raw`...`), if any. */
  tag?: string;
  /** The text, template expressions replaced by `$1`, `$2`, ... */
  text: string;
  /** 1-based line of the opening quote. */
  line: number;
}

/** Tokens after which a `/` starts a regular expression rather than dividing. */
const REGEX_AFTER_WORDS = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

export function literalsOf(source: string): Literal[] {
  return scan(source).literals;
}

/** The source with its comments blanked (line breaks kept), for checks over code alone. */
export function codeOf(source: string): string {
  return scan(source).code;
}

function scan(source: string): { literals: Literal[]; code: string } {
  const literals: Literal[] = [];
  const comments: Array<[number, number]> = [];
  let i = 0;
  let line = 1;
  /** The last significant token: a word, a closing bracket, or an operator character. */
  let previous = '';

  const advance = (n: number) => {
    for (let k = 0; k < n; k++) if (source[i + k] === '\n') line++;
    i += n;
  };

  const readString = (quote: "'" | '"') => {
    const start = line;
    advance(1);
    let text = '';
    while (i < source.length && source[i] !== quote) {
      if (source[i] === '\\') {
        text += source.slice(i, i + 2);
        advance(2);
      } else {
        text += source[i];
        advance(1);
      }
    }
    advance(1);
    literals.push({ quote, text, line: start });
    previous = 'literal';
  };

  /** Reads a template from its opening backtick; expressions are scanned as code. */
  const readTemplate = (tag: string | undefined) => {
    const start = line;
    advance(1);
    let text = '';
    let expressions = 0;
    while (i < source.length && source[i] !== '`') {
      if (source[i] === '\\') {
        text += source.slice(i, i + 2);
        advance(2);
      } else if (source[i] === '$' && source[i + 1] === '{') {
        advance(2);
        scanCode('}');
        advance(1);
        text += `$${++expressions}`;
      } else {
        text += source[i];
        advance(1);
      }
    }
    advance(1);
    literals.push({ quote: '`', tag, text, line: start });
    previous = 'literal';
  };

  const readRegex = () => {
    advance(1);
    let inClass = false;
    while (i < source.length && source[i] !== '\n') {
      const c = source[i];
      if (c === '\\') {
        advance(2);
        continue;
      }
      advance(1);
      if (c === '[') inClass = true;
      else if (c === ']') inClass = false;
      else if (c === '/' && !inClass) break;
    }
    while (/[a-z]/i.test(source[i] ?? '')) advance(1);
    previous = 'literal';
  };

  /** Scans code until the unbalanced `until` (a template expression's `}`) or the end. */
  const scanCode = (until?: string) => {
    let depth = 0;
    while (i < source.length) {
      const c = source[i] as string;
      const next = source[i + 1];
      if (c === '/' && next === '/') {
        const start = i;
        while (i < source.length && source[i] !== '\n') advance(1);
        comments.push([start, i]);
      } else if (c === '/' && next === '*') {
        const start = i;
        const end = source.indexOf('*/', i + 2);
        advance((end === -1 ? source.length : end + 2) - i);
        comments.push([start, i]);
      } else if (c === "'" || c === '"') {
        readString(c);
      } else if (c === '`') {
        const tag = /(\w+)\s*$/.exec(source.slice(Math.max(0, i - 40), i))?.[1];
        readTemplate(previous === tag ? tag : undefined);
      } else if (c === '/') {
        const regexAllowed =
          previous === '' || REGEX_AFTER_WORDS.has(previous) || /^[(,=:[!&|?{};+\-*%<>~^]$/.test(previous);
        if (regexAllowed) readRegex();
        else {
          previous = '/';
          advance(1);
        }
      } else if (/[A-Za-z_$]/.test(c)) {
        const word = /^[\w$]+/.exec(source.slice(i, i + 100))?.[0] as string;
        previous = word;
        advance(word.length);
      } else if (/\s/.test(c)) {
        advance(1);
      } else {
        if (c === '{' || c === '(' || c === '[') depth++;
        if (c === '}' || c === ')' || c === ']') {
          if (depth === 0 && c === until) return;
          depth--;
        }
        previous = c;
        advance(1);
      }
    }
  };

  scanCode();
  let code = '';
  let from = 0;
  for (const [start, end] of comments) {
    code += source.slice(from, start) + source.slice(start, end).replace(/[^\n]/g, ' ');
    from = end;
  }
  return { literals, code: code + source.slice(from) };
}

/** One import (or re-export) of a file: where from, and which names, type-only ones apart. */
export interface ImportClause {
  /** The specifier as written (`drizzle-orm`, `../../db/schema/runs.ts`). */
  from: string;
  /** Names imported as values; `*` for a namespace import, a re-export of all, or `import()`. */
  values: string[];
  /** Names imported for their types only (`import type`, `type X` in braces). */
  types: string[];
  line: number;
}

const STATIC_IMPORT =
  /^[ \t]*(import|export)\s+(type\s+)?((?:[\w$]+\s*,\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?|[\w$]+)?)\s*(?:from\s+)?['"]([^'"]+)['"]/gm;
const DYNAMIC_IMPORT = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The imports and re-exports of a TypeScript source, static and dynamic (`import('x')`). */
export function importsOf(source: string): ImportClause[] {
  const lineAt = (index: number) => source.slice(0, index).split('\n').length;
  const clauses: ImportClause[] = [];
  for (const match of source.matchAll(STATIC_IMPORT)) {
    const [, , typeOnly, clause = '', from = ''] = match;
    const values: string[] = [];
    const types: string[] = [];
    const add = (name: string, isType: boolean) => (typeOnly || isType ? types : values).push(name);
    const braces = /\{([^}]*)\}/.exec(clause)?.[1];
    for (const part of braces?.split(',') ?? []) {
      const name = part.trim();
      if (!name) continue;
      const isType = name.startsWith('type ');
      add(
        name
          .replace(/^type\s+/, '')
          .split(/\s+as\s+/)[0]
          ?.trim() ?? name,
        isType,
      );
    }
    const outside = clause.replace(/\{[^}]*\}/, '').trim();
    if (outside.startsWith('*') || (match[1] === 'export' && clause === '')) add('*', false);
    else if (/^[\w$]+/.test(outside)) add('default', false);
    clauses.push({ from, values, types, line: lineAt(match.index) });
  }
  for (const match of source.matchAll(DYNAMIC_IMPORT)) {
    clauses.push({ from: match[1] as string, values: ['*'], types: [], line: lineAt(match.index) });
  }
  return clauses;
}
