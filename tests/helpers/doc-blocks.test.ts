import { describe, expect, it } from 'vitest';
import { commandLines, type DocBlock, extractBlocks } from './doc-blocks.ts';

describe('extractBlocks', () => {
  it('reads each fenced block with its language, line and skip reason', () => {
    const { blocks, problems } = extractBlocks(
      'a.md',
      [
        'text',
        '```sh',
        'echo one',
        '```',
        '<!-- docs-test: skip (needs Redis) -->',
        '',
        '```bash',
        'redis-cli ping',
        '```',
        '- a list item',
        '  ```json',
        '  {"a": 1}',
        '  ```',
        '```',
        'plain',
        '```',
      ].join('\n'),
    );
    expect(problems).toEqual([]);
    expect(blocks).toEqual([
      { file: 'a.md', line: 2, language: 'sh', body: ['echo one'] },
      { file: 'a.md', line: 7, language: 'bash', body: ['redis-cli ping'], skip: 'needs Redis' },
      { file: 'a.md', line: 11, language: 'json', body: ['{"a": 1}'] },
      { file: 'a.md', line: 14, language: '', body: ['plain'] },
    ]);
  });

  it('reports a marker without a reason, a marker not before a block, and a fence never closed', () => {
    const { problems } = extractBlocks(
      'b.md',
      [
        '<!-- docs-test: skip -->',
        '```sh',
        'true',
        '```',
        '<!-- docs-test: skip (reason) -->',
        'prose',
        '```sh',
        'echo swallowed',
      ].join('\n'),
    );
    expect(problems.map((p) => p.line)).toEqual([1, 5, 7]);
    expect(problems[2]?.text).toBe('```sh is never closed');
  });
});

describe('commandLines', () => {
  it('keeps the commands of a console block, line for line, and blanks its output', () => {
    const [block] = extractBlocks(
      'c.md',
      [
        '```console',
        '$ curl -s \\',
        '  localhost:8080/api/health',
        '{"status":"ok"}',
        '$ echo done',
        '```',
      ].join('\n'),
    ).blocks;
    expect(commandLines(block as DocBlock)).toEqual([
      'curl -s \\',
      '  localhost:8080/api/health',
      '',
      'echo done',
    ]);
  });
});
