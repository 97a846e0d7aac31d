import type { ContentBlock } from './document.ts';

/**
 * Plain text and source code, the two formats whose structure is only their blank lines.
 * Both take text whose line endings are already `\n`.
 */

/** Plain text: one paragraph per run of non-blank lines, its line breaks kept. */
export function extractPlainText(text: string): ContentBlock[] {
  return groupLines(text.split('\n'), (line, previousBlank) => previousBlank && line.trim() !== '')
    .map((lines) =>
      lines
        .map((line) => line.trimEnd())
        .join('\n')
        .trim(),
    )
    .filter((paragraph) => paragraph !== '')
    .map((paragraph) => ({ kind: 'paragraph', text: paragraph }));
}

/**
 * Source code: one code block per top-level unit. A unit starts at a line that follows a blank
 * line and is not indented, so a function, class or statement group stays whole even when blank
 * lines separate the parts of its body; comments directly above a declaration stay with it.
 */
export function extractCode(text: string, language: string | undefined): ContentBlock[] {
  const startsUnit = (line: string, previousBlank: boolean) => previousBlank && /^\S/.test(line);
  return groupLines(text.split('\n'), startsUnit)
    .map((lines) =>
      lines
        .join('\n')
        .replace(/^\s*\n/, '')
        .trimEnd(),
    )
    .filter((code) => code.trim() !== '')
    .map((code) => ({ kind: 'code', text: code, ...(language ? { language } : {}) }));
}

/** Splits lines into groups, a new group starting wherever `starts` says so. */
function groupLines(lines: string[], starts: (line: string, previousBlank: boolean) => boolean): string[][] {
  const groups: string[][] = [];
  let current: string[] = [];
  let previousBlank = false;
  for (const line of lines) {
    if (current.length > 0 && starts(line, previousBlank)) {
      groups.push(current);
      current = [];
    }
    current.push(line);
    previousBlank = line.trim() === '';
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
