import type { Node } from 'web-tree-sitter';

/** Longest signature kept; a longer declaration head is cut with an ellipsis. */
export const MAX_SIGNATURE_CHARS = 300;
/** Longest doc comment kept. */
export const MAX_DOC_CHARS = 2000;

/** 1-based line of a node's first character. */
export const lineOf = (node: Node): number => node.startPosition.row + 1;

/** Text with runs of whitespace collapsed to one space, cut at `max` characters. */
export function collapse(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The text of a string literal node without its quotes (`'./x.ts'` -> `./x.ts`). */
export function stringValue(node: Node | null): string | null {
  if (!node) return null;
  const text = node.text;
  const match = /^(?:[rRbBuUfF]{0,2})(['"`])([\s\S]*)\1$/.exec(text);
  return match ? (match[2] ?? '') : text;
}

/**
 * A type reference as a bare name and what qualifies it: `Base<T>` -> `Base`,
 * `pkg.Base` -> `Base` qualified by `pkg`, `*Base` (a Go pointer) -> `Base`.
 */
export function typeReference(node: Node): { name: string; qualifier: string | null } | null {
  const text = node.text
    .replace(/<[\s\S]*>/, '')
    .replace(/\[[\s\S]*\]/, '')
    .replace(/^[*&\s]+/, '')
    .trim();
  if (!/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(text)) return null;
  const parts = text.split('.');
  const name = parts.pop() as string;
  return { name, qualifier: parts.length > 0 ? parts.join('.') : null };
}

/**
 * What a call was made on, as the resolver reads it: a name or a dotted chain of names
 * (`agents`, `this.deps.activity`); anything else (a call's result, an index) is `<expr>`.
 */
export function receiverText(node: Node): string {
  const text = node.text;
  return text.length <= 100 && /^[A-Za-z_$][\w$]*(\s*\??\.\s*[A-Za-z_$#][\w$]*)*$/.test(text)
    ? text.replace(/\s+/g, '').replaceAll('?.', '.')
    : '<expr>';
}

/** The comment's text without its markers: `/** ... *\/`, leading ` * `, `//`, `#`. */
export function cleanComment(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('/*')) {
    return trimmed
      .replace(/^\/\*+/, '')
      .replace(/\*+\/$/, '')
      .split('\n')
      .map((line) => line.replace(/^\s*\* ?/, '').trimEnd())
      .join('\n')
      .trim();
  }
  return trimmed
    .split('\n')
    .map((line) => line.replace(/^\s*(\/\/+|#+) ?/, '').trimEnd())
    .join('\n')
    .trim();
}

const isComment = (node: Node): boolean => node.type === 'comment' || node.type.endsWith('_comment');

/**
 * The comment block right above a declaration: a `/** ... *\/` block, or consecutive line
 * comments, ending on the line before it (or on its line). A plain `/* ... *\/` block (a
 * licence header) documents nothing. When the declaration is the first thing inside a
 * wrapper (`export`, `const`, a Go `type (...)`), the comment sits above the wrapper.
 */
export function precedingDoc(declaration: Node, wrappers: ReadonlySet<string>): string | null {
  let node = declaration;
  for (;;) {
    const doc = commentsAbove(node);
    if (doc !== null) return doc;
    const parent = node.parent;
    if (!parent || !wrappers.has(parent.type) || !startsWrapper(parent, node)) return null;
    node = parent;
  }
}

/** True when `child` is the first named, non-comment child of `wrapper` (`export const x = ...`). */
function startsWrapper(wrapper: Node, child: Node): boolean {
  for (const candidate of wrapper.namedChildren) {
    if (!candidate || isComment(candidate) || candidate.type === 'decorator') continue;
    return candidate.startIndex === child.startIndex;
  }
  return false;
}

function commentsAbove(node: Node): string | null {
  const lines: string[] = [];
  let expectedEndRow = node.startPosition.row;
  let sibling = node.previousNamedSibling;
  // Decorators and annotations between a comment and its declaration belong to the declaration.
  while (sibling && sibling.type === 'decorator') sibling = sibling.previousNamedSibling;
  while (sibling && isComment(sibling)) {
    const endRow = sibling.endPosition.row;
    if (endRow < expectedEndRow - 1) break;
    // A comment at the end of a line of code (`foo(); // why`) is about that line.
    const before = sibling.previousSibling;
    if (before && before.endPosition.row === sibling.startPosition.row) break;
    const text = sibling.text;
    if (text.startsWith('/*')) {
      // A block comment ends the search: a doc block is the doc, any other block is not one.
      if (lines.length === 0 && text.startsWith('/**')) return clip(cleanComment(text));
      break;
    }
    lines.unshift(text);
    expectedEndRow = sibling.startPosition.row;
    sibling = sibling.previousNamedSibling;
  }
  return lines.length > 0 ? clip(cleanComment(lines.join('\n'))) || null : null;
}

const clip = (text: string): string =>
  text.length > MAX_DOC_CHARS ? `${text.slice(0, MAX_DOC_CHARS - 1)}…` : text;

/**
 * A declaration's head: its text up to its body (`function foo(a: number): string`), or all
 * of it when it has no body (a type alias, an abstract method), cut at `MAX_SIGNATURE_CHARS`.
 */
export function headOf(declaration: Node, body: Node | null): string {
  const text = declaration.text;
  const head = body ? text.slice(0, body.startIndex - declaration.startIndex) : text;
  const flat = collapse(head, Number.POSITIVE_INFINITY)
    .replace(/[{:;]\s*$/, '')
    .replace(/([([]) /g, '$1')
    .replace(/,? ([)\]])/g, '$1')
    .trim();
  return collapse(flat, MAX_SIGNATURE_CHARS);
}

/** A Python docstring: the first statement of a body when it is a string literal. */
export function docstring(body: Node | null): string | null {
  const first = body?.namedChildren.find((child) => child !== null && !isComment(child));
  if (first?.type !== 'expression_statement') return null;
  const literal = first.namedChildren[0];
  if (literal?.type !== 'string') return null;
  const raw = literal.text.replace(/^[rRbBuUfF]{0,2}("""|'''|"|')/, '').replace(/("""|'''|"|')$/, '');
  return clip(dedent(raw)) || null;
}

function dedent(text: string): string {
  const lines = text.split('\n');
  const indents = lines
    .slice(1)
    .filter((line) => line.trim() !== '')
    .map((line) => /^\s*/.exec(line)?.[0].length ?? 0);
  const cut = indents.length > 0 ? Math.min(...indents) : 0;
  return [lines[0] ?? '', ...lines.slice(1).map((line) => line.slice(cut))].join('\n').trim();
}
