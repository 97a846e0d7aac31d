import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { estimateTokens } from '../../lib/tokens.ts';
import {
  CHUNKING_LIMITS,
  type Chunk,
  type ChunkingOptions,
  chunkDocument,
  DEFAULT_CHUNKING,
} from './chunking.ts';
import type { Block } from './document.ts';
import { readDocument } from './read-document.ts';

const heading = (level: number, text: string): Block => ({ kind: 'heading', level, text });
const paragraph = (text: string): Block => ({ kind: 'paragraph', text });
const code = (text: string, language = 'ts'): Block => ({ kind: 'code', text, language });
const list = (text: string): Block => ({ kind: 'list', text });
const table = (text: string, headerRows = 1): Block => ({ kind: 'table', text, headerRows });

/** `count` distinct sentences of about `words` words each. */
const sentences = (count: number, words = 10, tag = 's') =>
  Array.from({ length: count }, (_, n) => {
    const body = Array.from({ length: words - 1 }, (_, w) => `${tag}${n}w${w}`).join(' ');
    return `Sentence ${body}.`;
  });

const chunk = (blocks: Block[], options: ChunkingOptions, title: string | null = null) =>
  chunkDocument({ title, blocks }, options);

/** The invariants every chunking keeps, whatever the input. */
function expectWellFormed(chunks: Chunk[], options: ChunkingOptions): void {
  chunks.forEach((piece, index) => {
    expect(piece.position).toBe(index);
    expect(piece.text.trim()).not.toBe('');
    expect(piece.tokenCount).toBe(estimateTokens(piece.text));
    expect(piece.tokenCount).toBeLessThanOrEqual(options.targetTokens);
  });
}

describe('chunkDocument options', () => {
  it('defaults to 500 tokens with 50 of overlap, as Dify does', () => {
    expect(DEFAULT_CHUNKING).toEqual({ targetTokens: 500, overlapTokens: 50 });
  });

  it('refuses a target outside its limits and an overlap above half the target', () => {
    const blocks = [paragraph('text')];
    expect(() =>
      chunk(blocks, { targetTokens: CHUNKING_LIMITS.minTargetTokens - 1, overlapTokens: 0 }),
    ).toThrow(RangeError);
    expect(() =>
      chunk(blocks, { targetTokens: CHUNKING_LIMITS.maxTargetTokens + 1, overlapTokens: 0 }),
    ).toThrow(/targetTokens/);
    expect(() => chunk(blocks, { targetTokens: 100.5, overlapTokens: 0 })).toThrow(/targetTokens/);
    expect(() => chunk(blocks, { targetTokens: 100, overlapTokens: 51 })).toThrow(/overlapTokens/);
    expect(() => chunk(blocks, { targetTokens: 100, overlapTokens: -1 })).toThrow(/overlapTokens/);
    expect(chunk(blocks, { targetTokens: 100, overlapTokens: 50 })).toHaveLength(1);
  });
});

describe('chunkDocument sections and heading paths', () => {
  const options = { targetTokens: 200, overlapTokens: 20 };

  it('labels each chunk with the trail of headings above it, a title-repeating H1 not repeated', () => {
    const chunks = chunk(
      [
        heading(1, 'Guide'),
        paragraph('Welcome.'),
        heading(2, 'Install'),
        heading(3, 'Linux'),
        paragraph('apt-get.'),
        heading(3, 'macOS'),
        paragraph('brew.'),
        heading(2, 'Use'),
        paragraph('Run it.'),
        heading(1, 'Appendix'),
        paragraph('More.'),
      ],
      options,
      'Guide',
    );
    expect(chunks.map((piece) => [piece.headingPath, piece.text])).toEqual([
      [['Guide'], 'Welcome.'],
      [['Guide', 'Install', 'Linux'], 'apt-get.'],
      [['Guide', 'Install', 'macOS'], 'brew.'],
      [['Guide', 'Use'], 'Run it.'],
      [['Guide', 'Appendix'], 'More.'],
    ]);
  });

  it('puts the document title first when it is not the first heading, and alone before any heading', () => {
    const chunks = chunk(
      [paragraph('Before.'), heading(2, 'Part'), paragraph('Inside.')],
      options,
      'Tide Tables',
    );
    expect(chunks.map((piece) => piece.headingPath)).toEqual([['Tide Tables'], ['Tide Tables', 'Part']]);
    expect(chunk([paragraph('x')], options, null)[0]?.headingPath).toEqual([]);
  });

  it('never lets a chunk span two sections, however small they are', () => {
    const chunks = chunk([heading(2, 'A'), paragraph('one'), heading(2, 'B'), paragraph('two')], options);
    expect(chunks.map((piece) => piece.text)).toEqual(['one', 'two']);
  });

  it('keeps heading text out of chunk text and skips headings without content', () => {
    const chunks = chunk(
      [heading(1, 'Lonely'), heading(2, 'Empty'), heading(2, 'Full'), paragraph('body')],
      options,
    );
    expect(chunks).toEqual([{ position: 0, text: 'body', headingPath: ['Lonely', 'Full'], tokenCount: 1 }]);
  });

  it('gives every chunk its own heading path array', () => {
    const chunks = chunk([heading(1, 'H'), paragraph(sentences(40).join(' '))], {
      targetTokens: 50,
      overlapTokens: 0,
    });
    expect(chunks.length).toBeGreaterThan(1);
    (chunks[0] as Chunk).headingPath.push('mutated');
    expect(chunks[1]?.headingPath).toEqual(['H']);
  });
});

describe('chunkDocument packing', () => {
  it('packs small blocks together, separated by blank lines', () => {
    const chunks = chunk([paragraph('One.'), list('- a\n- b'), code('x = 1')], {
      targetTokens: 100,
      overlapTokens: 10,
    });
    const text = 'One.\n\n- a\n- b\n\nx = 1';
    expect(chunks).toEqual([{ position: 0, text, headingPath: [], tokenCount: estimateTokens(text) }]);
  });

  it('never splits a code block, list or table that fits in a chunk: it moves whole to the next one', () => {
    const options = { targetTokens: 60, overlapTokens: 10 };
    const block = code('function f() {\n  return 1;\n}\n\nfunction g() {\n  return 2;\n}');
    const table_ = table('name | value\nfirst | 1\nsecond | 2\nthird | 3\nfourth | 4');
    const items = list('- first item\n- second item\n- third item\n- fourth item');
    for (const whole of [block, table_, items]) {
      // Fillers of every size put the block at every position relative to a chunk's end.
      for (let words = 1; words <= 40; words += 3) {
        const filler = paragraph(sentences(1, words).join(' '));
        const chunks = chunk([filler, whole, filler], options);
        expectWellFormed(chunks, options);
        const first = chunks.findIndex((piece) => piece.text.includes(whole.text.split('\n')[0] as string));
        expect(chunks[first]?.text).toContain(whole.text);
      }
    }
  });

  it('splits a code block too long for a chunk at line boundaries, every line kept in order', () => {
    const options = { targetTokens: 40, overlapTokens: 0 };
    const lines = Array.from({ length: 30 }, (_, n) => `  const value${n} = compute(${n});`);
    const chunks = chunk([code(lines.join('\n'))], options);
    expectWellFormed(chunks, options);
    expect(chunks.length).toBeGreaterThan(3);
    const seen = chunks.flatMap((piece) => piece.text.split('\n'));
    expect(seen.map((line) => line.trim())).toEqual(lines.map((line) => line.trim()));
    expect(chunks[1]?.text.startsWith('  const')).toBe(true);
  });

  it('repeats the header row in every piece of a table too long for a chunk, without overlap', () => {
    const options = { targetTokens: 40, overlapTokens: 15 };
    const rows = Array.from({ length: 40 }, (_, n) => `row ${n} | ${n * 2}`);
    const chunks = chunk([table(['Name | Value', ...rows].join('\n'))], options);
    expectWellFormed(chunks, options);
    expect(chunks.length).toBeGreaterThan(3);
    for (const piece of chunks) expect(piece.text.split('\n')[0]).toBe('Name | Value');
    const dataRows = chunks.flatMap((piece) => piece.text.split('\n').slice(1));
    expect(dataRows).toEqual(rows);
  });

  it('cuts a table whose rows name their own columns (CSV) at row boundaries, no header added', () => {
    const options = { targetTokens: 50, overlapTokens: 10 };
    const rows = Array.from({ length: 30 }, (_, n) => `name: person ${n} | age: ${20 + n}`);
    const chunks = chunk([table(rows.join('\n'), 0)], options);
    expectWellFormed(chunks, options);
    expect(chunks.flatMap((piece) => piece.text.split('\n'))).toEqual(rows);
  });

  it('splits a long paragraph at sentence boundaries', () => {
    const options = { targetTokens: 60, overlapTokens: 0 };
    const all = sentences(20);
    const chunks = chunk([paragraph(all.join(' '))], options);
    expectWellFormed(chunks, options);
    for (const piece of chunks) {
      expect(piece.text.startsWith('Sentence ')).toBe(true);
      expect(piece.text.endsWith('.')).toBe(true);
    }
    expect(chunks.map((piece) => piece.text).join(' ')).toBe(all.join(' '));
  });

  it('keeps an abbreviation with its sentence', () => {
    const options = { targetTokens: 32, overlapTokens: 0 };
    const text =
      'Dr. Alvarez measured the tide at dawn on the pier. It rose fast. Then the wind turned and the sea calmed.';
    const chunks = chunk([paragraph(text)], options);
    expect(chunks.every((piece) => !piece.text.endsWith('Dr.'))).toBe(true);
    expect(chunks[0]?.text.startsWith('Dr. Alvarez')).toBe(true);
  });

  it('splits a sentence too long for a chunk at word boundaries', () => {
    const options = { targetTokens: 32, overlapTokens: 0 };
    const words = Array.from({ length: 120 }, (_, n) => `word${n}`);
    const chunks = chunk([paragraph(`${words.join(' ')}.`)], options);
    expectWellFormed(chunks, options);
    const seen = chunks.flatMap((piece) => piece.text.split(' '));
    expect(seen.join(' ')).toBe(`${words.join(' ')}.`);
  });

  it('cuts a single word longer than a chunk into slices that fit and join back into it', () => {
    const options = { targetTokens: 32, overlapTokens: 8 };
    const word = `${'x'.repeat(700)}😀${'y'.repeat(300)}`;
    const chunks = chunk([paragraph(word)], options);
    expectWellFormed(chunks, options);
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunks.map((piece) => piece.text).join('')).toBe(word);
    expect(chunks.every((piece) => !/[\uD800-\uDBFF]$|^[\uDC00-\uDFFF]/.test(piece.text))).toBe(true);
  });

  it('splits CJK text without spaces between words', () => {
    const options = { targetTokens: 32, overlapTokens: 0 };
    const text = '東京は日本の首都であり、世界で最も人口の多い都市圏の一つとして知られている場所です'.repeat(
      8,
    );
    const chunks = chunk([paragraph(text)], options);
    expectWellFormed(chunks, options);
    expect(chunks.map((piece) => piece.text).join('')).toBe(text);
  });
});

describe('chunkDocument overlap', () => {
  it('opens the next chunk of a section with the previous chunk’s last whole sentences', () => {
    const options = { targetTokens: 80, overlapTokens: 20 };
    const chunks = chunk([paragraph(sentences(30, 8).join(' '))], options);
    expectWellFormed(chunks, options);
    expect(chunks.length).toBeGreaterThan(3);
    for (let index = 1; index < chunks.length; index += 1) {
      const previous = (chunks[index - 1] as Chunk).text;
      const current = (chunks[index] as Chunk).text;
      const previousSentences = previous.split(/(?<=\.) /);
      const repeated = previousSentences.filter((sentence) => current.includes(sentence));
      expect(repeated.length).toBeGreaterThan(0);
      const overlap = repeated.join(' ');
      expect(current.startsWith(overlap)).toBe(true);
      expect(previous.endsWith(overlap)).toBe(true);
      expect(estimateTokens(overlap)).toBeLessThanOrEqual(options.overlapTokens);
    }
  });

  it('falls back to trailing words when the last sentence is longer than the overlap', () => {
    const options = { targetTokens: 60, overlapTokens: 6 };
    const long = Array.from({ length: 50 }, (_, n) => `w${n}`).join(' ');
    const chunks = chunk([paragraph(`${long}. ${long}.`)], options);
    expect(chunks.length).toBeGreaterThan(1);
    const overlap = (chunks[1] as Chunk).text.split(' ').slice(0, 3).join(' ');
    expect((chunks[0] as Chunk).text).toContain(overlap);
  });

  it('does not carry overlap across a heading, and none at all when overlap is 0', () => {
    const text = sentences(12, 8, 'a').join(' ');
    const across = chunk([heading(2, 'A'), paragraph(text), heading(2, 'B'), paragraph('Fresh start.')], {
      targetTokens: 60,
      overlapTokens: 20,
    });
    expect(across.at(-1)).toMatchObject({ text: 'Fresh start.', headingPath: ['A', 'B'].slice(1) });
    const none = chunk([paragraph(text)], { targetTokens: 60, overlapTokens: 0 });
    expect(none.map((piece) => piece.text).join(' ')).toBe(text);
  });

  it('carries lines, not sentences, across a cut in code', () => {
    const options = { targetTokens: 40, overlapTokens: 10 };
    const lines = Array.from({ length: 60 }, (_, n) => `let v${n} = ${n};`);
    const chunks = chunk([code(lines.join('\n'))], options);
    expectWellFormed(chunks, options);
    expect(chunks.length).toBeGreaterThan(2);
    for (let index = 1; index < chunks.length; index += 1) {
      const previous = (chunks[index - 1] as Chunk).text.split('\n');
      const current = (chunks[index] as Chunk).text.split('\n');
      for (const line of current) expect(lines).toContain(line);
      // The chunk opens with the previous chunk's last whole lines, within the overlap.
      const carried = current.slice(0, current.indexOf(previous.at(-1) as string) + 1);
      expect(carried.length).toBeGreaterThan(0);
      expect(previous.slice(-carried.length)).toEqual(carried);
      expect(estimateTokens(carried.join('\n'))).toBeLessThanOrEqual(options.overlapTokens);
    }
  });

  it('shrinks the overlap to leave room for a whole block', () => {
    const options = { targetTokens: 60, overlapTokens: 30 };
    const block = 'x'.repeat(228);
    const chunks = chunk(
      [paragraph('First one is here. Second one is here. Third one is here.'), code(block)],
      options,
    );
    expectWellFormed(chunks, options);
    expect(chunks).toHaveLength(2);
    const carried = (chunks[1] as Chunk).text.slice(0, -block.length - 2);
    // "Third one is here." would not leave room for the block: its last words are carried instead.
    expect(carried).toBe('is here.');
  });

  it('never repeats a whole chunk as overlap: at most half of it', () => {
    const options = { targetTokens: 60, overlapTokens: 30 };
    const chunks = chunk([paragraph('Short intro.'), code('x'.repeat(232))], options);
    expect(chunks.map((piece) => piece.text)).toEqual(['Short intro.', 'x'.repeat(232)]);
  });
});

describe('chunkDocument on extracted documents', () => {
  const fixtures = path.resolve(import.meta.dirname, '../../../tests/fixtures/knowledge');
  const fixture = (name: string) => new Uint8Array(readFileSync(path.join(fixtures, name)));

  it('chunks the Markdown guide by section, code and table whole', async () => {
    const doc = await readDocument({ filename: 'guide.md', bytes: fixture('guide.md') });
    const chunks = chunkDocument(doc, DEFAULT_CHUNKING);
    expect(chunks.map((piece) => piece.headingPath)).toEqual([
      ['Field Guide'],
      ['Field Guide', 'Install', 'Linux'],
      ['Field Guide', 'Install', 'macOS'],
      ['Field Guide', 'Configuration'],
    ]);
    expect(chunks[1]?.text).toContain('sudo apt-get install field\nfield --version');
    expect(chunks[3]?.text).toContain('Option | Default | Meaning\nport | 8080 | The HTTP port');
  });

  it('chunks the PDF page by page under the document title', async () => {
    const doc = await readDocument({ filename: 'guide.pdf', bytes: fixture('guide.pdf') });
    const chunks = chunkDocument(doc, DEFAULT_CHUNKING);
    expect(chunks.map((piece) => piece.headingPath)).toEqual([
      ['Composting at Home', 'Page 1'],
      ['Composting at Home', 'Page 2'],
    ]);
  });

  it('is deterministic', async () => {
    const doc = await readDocument({ filename: 'page.html', bytes: fixture('page.html') });
    const options = { targetTokens: 40, overlapTokens: 10 };
    expect(chunkDocument(doc, options)).toEqual(chunkDocument(structuredClone(doc), options));
  });
});

describe('chunkDocument properties', () => {
  const word = fc.stringMatching(/^[a-zA-Z0-9]{1,12}$/);
  const sentence = fc.array(word, { minLength: 1, maxLength: 30 }).map((words) => `${words.join(' ')}.`);
  const prose = fc.array(sentence, { minLength: 1, maxLength: 12 }).map((parts) => parts.join(' '));
  const lines = fc.array(fc.array(word, { minLength: 0, maxLength: 20 }), { minLength: 1, maxLength: 40 });
  const block: fc.Arbitrary<Block> = fc.oneof(
    prose.map(paragraph),
    fc
      .record({ level: fc.integer({ min: 1, max: 4 }), text: word })
      .map(({ level, text }) => heading(level, text)),
    lines.map((rows) => code(rows.map((row) => `  ${row.join(' ')}`).join('\n'))),
    lines.map((rows) => list(rows.map((row) => `- ${row.join(' ')}`).join('\n'))),
    lines.map((rows) => table(['h1 | h2', ...rows.map((row) => row.join(' | '))].join('\n'))),
    fc.stringMatching(/^[a-z]{200,900}$/).map(paragraph),
  );
  const optionsArbitrary = fc
    .integer({ min: CHUNKING_LIMITS.minTargetTokens, max: 300 })
    .chain((targetTokens) =>
      fc
        .integer({ min: 0, max: Math.floor(targetTokens / 2) })
        .map((overlapTokens) => ({ targetTokens, overlapTokens })),
    );

  it('never exceeds the target, keeps every word of the content, and numbers chunks in order', () => {
    fc.assert(
      fc.property(fc.array(block, { maxLength: 25 }), optionsArbitrary, (blocks, options) => {
        const chunks = chunkDocument({ title: 'Doc', blocks }, options);
        expectWellFormed(chunks, options);
        const chunked = new Set(chunks.flatMap((piece) => piece.text.split(/[\s|.]+/)));
        for (const content of blocks) {
          if (content.kind === 'heading') continue;
          for (const token of content.text.split(/[\s|.]+/)) {
            if (token === '' || token === '-' || token.length > 4 * options.targetTokens) continue;
            expect(chunked.has(token)).toBe(true);
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
