/**
 * Globs over relative paths (`docs/**\/*.md`), matched without regular expressions so that no
 * pattern a tenant writes can make matching slow. Node's `path.matchesGlob` (minimatch) turns
 * patterns into backtracking regular expressions: `*a*a*a*a*a*a*a*a*a*a*b` against a 250-letter
 * name, or `*(a|aa)*(a|aa)b`, runs for seconds to minutes, and `{1..100000000}` expands
 * without bound. Here every check is polynomial and small:
 *
 *   pattern --brace expansion (at most 64)--> alternatives --split on "/"--> segments
 *   "**" segment: any number of whole path segments   (DP over segments: O(P·S))
 *   other segment: tokens * ? [class] literal          (greedy two-pointer: O(p·s))
 *
 * Syntax: `*` any run of characters but `/`; `?` one character; `[abc]`, `[a-z]`, `[!a]` or
 * `[^a]` one character of a class; `{a,b}` alternatives (nestable; a group without a comma is
 * literal, and `{1..9}` ranges are not expanded); `\` makes the next character literal; `**`
 * alone in a segment matches any number of segments. A name starting with `.` is matched only
 * by a segment pattern that starts with `.` (so `*` and `**` skip hidden files and folders).
 * Matching is case-sensitive. Extended globs (`+(a|b)`) and negation (`!x`) are not
 * supported: their characters are literal.
 */

/** A pattern that cannot be used; the message says why and is safe to show. */
export class GlobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GlobError';
  }
}

/** Alternatives a pattern's braces may expand to. */
export const MAX_EXPANSIONS = 64;

type Token =
  | { kind: 'literal'; char: string }
  | { kind: 'any' }
  | { kind: 'star' }
  | { kind: 'class'; negated: boolean; ranges: Array<[string, string]> };

type Segment = { kind: 'globstar' } | { kind: 'tokens'; tokens: Token[]; dot: boolean };

/** A compiled glob: `matches('docs/a.md')`. */
export interface Glob {
  readonly pattern: string;
  matches(relativePath: string): boolean;
}

/** Compiles `pattern`, or throws `GlobError` (empty, too many alternatives, a class never closed). */
export function compileGlob(pattern: string): Glob {
  if (pattern.trim() === '') throw new GlobError('must not be empty');
  const alternatives = expandBraces(pattern).map((alternative) =>
    alternative
      .replace(/^(\.\/)+/, '')
      .split('/')
      .filter((part) => part !== '')
      .map(compileSegment),
  );
  return {
    pattern,
    matches: (relativePath) => {
      const parts = relativePath.split('/').filter((part) => part !== '');
      return alternatives.some((segments) => matchSegments(segments, parts));
    },
  };
}

/** Expands `{a,b}` groups (nested too), refusing more than `MAX_EXPANSIONS` results. */
function expandBraces(pattern: string): string[] {
  const group = firstGroup(pattern);
  if (!group) return [pattern];
  const head = pattern.slice(0, group.open);
  const tail = pattern.slice(group.close + 1);
  const results: string[] = [];
  for (const option of group.options) {
    for (const expanded of expandBraces(head + option + tail)) {
      results.push(expanded);
      if (results.length > MAX_EXPANSIONS) {
        throw new GlobError(`must expand to at most ${MAX_EXPANSIONS} alternatives`);
      }
    }
  }
  return results;
}

/** The first `{...}` with a top-level comma, with its options; escapes are honoured. */
function firstGroup(pattern: string): { open: number; close: number; options: string[] } | undefined {
  for (let open = 0; open < pattern.length; open++) {
    if (pattern[open] === '\\') {
      open++;
      continue;
    }
    if (pattern[open] !== '{') continue;
    let depth = 0;
    const commas: number[] = [];
    for (let i = open; i < pattern.length; i++) {
      const c = pattern[i];
      if (c === '\\') {
        i++;
      } else if (c === '{') {
        depth++;
      } else if (c === '}') {
        depth--;
        if (depth === 0) {
          if (commas.length === 0) break;
          const bounds = [open, ...commas, i];
          const options = bounds.slice(1).map((end, k) => pattern.slice((bounds[k] as number) + 1, end));
          return { open, close: i, options };
        }
      } else if (c === ',' && depth === 1) {
        commas.push(i);
      }
    }
  }
  return undefined;
}

function compileSegment(text: string): Segment {
  if (text === '**') return { kind: 'globstar' };
  // Code points, as names are compared: a character outside the BMP is one character.
  const part = [...text];
  const tokens: Token[] = [];
  for (let i = 0; i < part.length; i++) {
    const c = part[i] as string;
    if (c === '\\' && i + 1 < part.length) {
      tokens.push({ kind: 'literal', char: part[++i] as string });
    } else if (c === '*') {
      // Consecutive stars are one star; a lone `**` segment was handled above.
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (c === '?') {
      tokens.push({ kind: 'any' });
    } else if (c === '[') {
      const [token, end] = compileClass(part, i);
      tokens.push(token);
      i = end;
    } else {
      tokens.push({ kind: 'literal', char: c });
    }
  }
  return { kind: 'tokens', tokens, dot: text.startsWith('.') };
}

/** A `[...]` class starting at `start`; returns it with the index of its `]`. */
function compileClass(part: string[], start: number): [Token, number] {
  let i = start + 1;
  const negated = part[i] === '!' || part[i] === '^';
  if (negated) i++;
  const ranges: Array<[string, string]> = [];
  let first = true;
  for (; i < part.length; i++) {
    let c = part[i] as string;
    if (c === ']' && !first) return [{ kind: 'class', negated, ranges }, i];
    first = false;
    if (c === '\\' && i + 1 < part.length) c = part[++i] as string;
    if (part[i + 1] === '-' && i + 2 < part.length && part[i + 2] !== ']') {
      let to = part[i + 2] as string;
      i += 2;
      if (to === '\\' && i + 1 < part.length) to = part[++i] as string;
      ranges.push([c, to]);
    } else {
      ranges.push([c, c]);
    }
  }
  throw new GlobError(`has a character class "[" that is never closed`);
}

const single = (token: Token, char: string): boolean => {
  switch (token.kind) {
    case 'literal':
      return token.char === char;
    case 'any':
      return true;
    case 'class': {
      const inside = token.ranges.some(([from, to]) => char >= from && char <= to);
      return inside !== token.negated;
    }
    case 'star':
      return false;
  }
};

/**
 * One path segment against one segment pattern: the greedy two-pointer wildcard match, which
 * backtracks only to the last star, so it never takes more than O(pattern × name) steps.
 */
function matchTokens(segment: Extract<Segment, { kind: 'tokens' }>, name: string): boolean {
  if (name.startsWith('.') && !segment.dot) return false;
  const { tokens } = segment;
  const chars = [...name];
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = 0;
  while (t < chars.length) {
    const token = tokens[p];
    if (token && token.kind !== 'star' && single(token, chars[t] as string)) {
      p++;
      t++;
    } else if (token?.kind === 'star') {
      starP = p++;
      starT = t;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (tokens[p]?.kind === 'star') p++;
  return p === tokens.length;
}

/**
 * Path segments against segment patterns: `reach[j]` says the patterns so far can consume
 * exactly the first `j` path segments. A `**` extends every reach over any following
 * segments that are not hidden; another pattern moves each reach one segment on. O(P·S).
 */
function matchSegments(segments: Segment[], parts: string[]): boolean {
  let reach = new Array<boolean>(parts.length + 1).fill(false);
  reach[0] = true;
  for (const [index, segment] of segments.entries()) {
    const next = new Array<boolean>(parts.length + 1).fill(false);
    if (segment.kind === 'globstar') {
      // As minimatch: a trailing `**` after other segments (`docs/**`) needs something below them.
      const atLeastOne = index > 0 && index === segments.length - 1;
      for (let j = 0; j <= parts.length; j++) {
        const visible = j > 0 && !(parts[j - 1] as string).startsWith('.');
        const here = !atLeastOne && reach[j];
        const onward = visible && (next[j - 1] || (atLeastOne && reach[j - 1]));
        next[j] = Boolean(here || onward);
      }
    } else {
      for (let j = 0; j < parts.length; j++) {
        if (reach[j] && matchTokens(segment, parts[j] as string)) next[j + 1] = true;
      }
    }
    reach = next;
  }
  return reach[parts.length] === true;
}
