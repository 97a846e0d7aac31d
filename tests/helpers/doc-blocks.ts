/**
 * Reads the fenced code blocks of a Markdown file, for the test that runs the README's and the
 * docs' commands (tests/docs/docs-commands.test.ts).
 *
 * The conventions a writer follows (README "Examples are tested"):
 * - every fenced block names its language; `sh`, `bash`, `shell` and `console` blocks are run,
 *   the others (`json`, `text`, `http`, `ts`, ...) are not;
 * - a block that cannot run in CI is preceded by `<!-- docs-test: skip (reason) -->` on the line
 *   before its fence (blank lines between are allowed), and the reason is required;
 * - in a `console` block only the lines starting with `$ ` are commands (the rest is output).
 */

/** The languages whose blocks are shell commands and therefore run. */
export const SHELL_LANGUAGES = new Set(['sh', 'bash', 'shell', 'console']);

/** One fenced block of a Markdown file. */
export interface DocBlock {
  /** Path of the file as given to `extractBlocks`. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The fence's info string up to the first space (`sh`), or '' when the block names none. */
  language: string;
  /** The block's lines, without the fences. */
  body: string[];
  /** The reason of a `<!-- docs-test: skip (reason) -->` marker before the block. */
  skip?: string;
}

/**
 * A writing mistake to report: a `docs-test` marker that is malformed or not followed by a
 * block, or a fence that is never closed (which swallows the rest of the file).
 */
export interface MarkdownProblem {
  file: string;
  line: number;
  text: string;
}

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;
const MARKER = /^\s*<!--\s*docs-test:(.*?)-->\s*$/;
const SKIP = /^\s*skip\s*\((.+)\)\s*$/;

/** Splits Markdown into its fenced blocks, with the skip marker that precedes each one. */
export function extractBlocks(
  file: string,
  markdown: string,
): { blocks: DocBlock[]; problems: MarkdownProblem[] } {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  const problems: MarkdownProblem[] = [];
  let pending: { line: number; text: string; reason?: string } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] as string;
    const marker = MARKER.exec(text);
    if (marker) {
      if (pending) problems.push({ file, line: pending.line, text: pending.text });
      const reason = SKIP.exec(marker[1] as string)?.[1]?.trim();
      pending = { line: i + 1, text, ...(reason ? { reason } : {}) };
      continue;
    }
    const fence = FENCE.exec(text);
    if (!fence) {
      if (pending && text.trim() !== '') {
        problems.push({ file, line: pending.line, text: pending.text });
        pending = undefined;
      }
      continue;
    }
    const [, indent, marks, info] = fence as unknown as [string, string, string, string];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const closing = FENCE.exec(lines[j] as string);
      if (closing && (closing[2] as string).startsWith(marks) && (closing[3] as string).trim() === '') break;
      // An indented fence (inside a list item) indents its body as much: take that back off.
      const raw = lines[j] as string;
      body.push(raw.startsWith(indent) ? raw.slice(indent.length) : raw.trimStart());
    }
    if (j === lines.length) problems.push({ file, line: i + 1, text: `${text} is never closed` });
    const block: DocBlock = { file, line: i + 1, language: info.trim().split(/\s+/)[0] ?? '', body };
    if (pending) {
      if (pending.reason) block.skip = pending.reason;
      else problems.push({ file, line: pending.line, text: pending.text });
      pending = undefined;
    }
    blocks.push(block);
    i = j;
  }
  if (pending) problems.push({ file, line: pending.line, text: pending.text });
  return { blocks, problems };
}

/**
 * The commands of a shell block, one entry per Markdown line (so a failure maps back to its
 * line): a `console` block keeps its `$ ` lines (and their `\` continuations) and blanks the output.
 */
export function commandLines(block: DocBlock): string[] {
  if (block.language !== 'console') return block.body;
  let continuing = false;
  return block.body.map((line) => {
    if (continuing || line.startsWith('$ ')) {
      const command = continuing ? line : line.slice(2);
      continuing = command.endsWith('\\');
      return command;
    }
    return '';
  });
}
