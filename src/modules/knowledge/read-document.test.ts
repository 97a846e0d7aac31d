import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Block, type ExtractedDocument, ExtractionError, type ExtractionFailure } from './document.ts';
import { readDocument } from './read-document.ts';

const fixtures = path.resolve(import.meta.dirname, '../../../tests/fixtures/knowledge');
const fixture = (name: string) => new Uint8Array(readFileSync(path.join(fixtures, name)));
const utf8 = (text: string) => new TextEncoder().encode(text);

const read = (filename: string, bytes: Uint8Array = fixture(filename), mediaType?: string) =>
  readDocument({ filename, bytes, ...(mediaType ? { mediaType } : {}) });

async function failure(
  filename: string,
  bytes: Uint8Array,
): Promise<{ reason: ExtractionFailure; message: string }> {
  try {
    await readDocument({ filename, bytes });
  } catch (error) {
    if (error instanceof ExtractionError) return { reason: error.reason, message: error.message };
    throw error;
  }
  throw new Error(`${filename} was accepted`);
}

const texts = (doc: ExtractedDocument, kind: Block['kind']) =>
  doc.blocks.filter((block) => block.kind === kind).map((block) => block.text);
const allText = (doc: ExtractedDocument) => doc.blocks.map((block) => block.text).join('\n');

describe('readDocument: PDF', () => {
  it('reads each page with text as a "Page N" heading and its paragraphs, with the PDF title', async () => {
    const doc = await read('guide.pdf');
    expect(doc.format).toBe('pdf');
    expect(doc.title).toBe('Composting at Home');
    expect(doc.metadata).toEqual({ pages: 2, pages_with_text: 2 });
    expect(doc.blocks).toEqual([
      { kind: 'heading', level: 1, text: 'Page 1' },
      {
        kind: 'paragraph',
        text: 'Composting turns kitchen scraps and garden waste into humus. A balanced heap mixes green material with brown material.',
      },
      {
        kind: 'paragraph',
        text:
          'Greens are rich in nitrogen: grass clippings, coffee grounds and vegetable peelings. ' +
          'Browns bring carbon: dry leaves, straw and shredded cardboard.',
      },
      { kind: 'heading', level: 1, text: 'Page 2' },
      {
        kind: 'paragraph',
        text: 'Turn the heap every two weeks so that air reaches the middle. A heap that smells of ammonia needs more brown material.',
      },
      { kind: 'paragraph', text: 'Finished compost is dark, crumbly and smells of forest soil.' },
    ]);
  });

  it('refuses a PDF whose pages carry no text as no_text', async () => {
    expect(await failure('scanned.pdf', fixture('scanned.pdf'))).toEqual({
      reason: 'no_text',
      message:
        '"scanned.pdf" contains no text (a scanned PDF needs text recognition before it can be indexed)',
    });
  });

  it('refuses a truncated or garbled PDF as corrupt', async () => {
    const whole = fixture('guide.pdf');
    expect(await failure('cut.pdf', whole.subarray(0, Math.floor(whole.length / 2)))).toEqual({
      reason: 'corrupt',
      message: '"cut.pdf" is not a readable PDF (truncated or damaged)',
    });
    expect((await failure('garbled.pdf', utf8('%PDF-1.7\n\u0001garbage \u0002 garbage'))).reason).toBe(
      'corrupt',
    );
    const noise = new Uint8Array(4096).map((_, index) => (index * 7919) % 251);
    noise.set(utf8('%PDF-1.4\n'), 0);
    expect((await failure('noise.pdf', noise)).reason).toBe('corrupt');
  });

  it('refuses a password-protected PDF as no_text', async () => {
    // The fixture with an /Encrypt dictionary whose user password is not empty.
    const latin = Buffer.from(fixture('guide.pdf')).toString('latin1');
    const key = 'ab'.repeat(32);
    const encrypt = `/Encrypt << /Filter /Standard /V 1 /R 2 /O <${key}> /U <${key}> /P -4 >>`;
    const id = `/ID [<${'01'.repeat(16)}> <${'01'.repeat(16)}>]`;
    const encrypted = latin.replace('/Info 3 0 R\n>>', `/Info 3 0 R\n${encrypt}\n${id}\n>>`);
    expect(encrypted).not.toBe(latin);
    expect(await failure('secret.pdf', new Uint8Array(Buffer.from(encrypted, 'latin1')))).toEqual({
      reason: 'no_text',
      message: '"secret.pdf" is an encrypted PDF: its text cannot be read',
    });
  });

  it('leaves the caller’s bytes as they were (pdf.js is handed a copy)', async () => {
    const bytes = fixture('guide.pdf');
    const before = bytes.slice();
    await read('guide.pdf', bytes);
    expect(bytes).toEqual(before);
  });
});

describe('readDocument: Markdown', () => {
  it('turns headings, paragraphs, lists, code, tables, quotes and HTML into blocks', async () => {
    const doc = await read('guide.md');
    expect(doc.format).toBe('markdown');
    expect(doc.title).toBe('Field Guide');
    expect(doc.blocks.filter((block) => block.kind === 'heading')).toEqual([
      { kind: 'heading', level: 1, text: 'Field Guide' },
      { kind: 'heading', level: 2, text: 'Install' },
      { kind: 'heading', level: 3, text: 'Linux' },
      { kind: 'heading', level: 3, text: 'macOS' },
      { kind: 'heading', level: 2, text: 'Configuration' },
    ]);
    expect(texts(doc, 'paragraph')[0]).toBe(
      'This guide explains how to install and run the field tool & its plugins. It covers Linux and macOS.',
    );
    expect(doc.blocks).toContainEqual({
      kind: 'code',
      text: 'sudo apt-get install field\nfield --version',
      language: 'bash',
    });
    expect(texts(doc, 'list')).toEqual([
      '1. Start it with field start.\n2. Open the dashboard:\n   - on port 8080 by default;\n   - or on the port in FIELD_PORT.\n3. Stop it with field stop.',
      '- [x] Homebrew installed\n- [ ] Xcode command line tools',
    ]);
    expect(doc.blocks).toContainEqual({
      kind: 'table',
      text: 'Option | Default | Meaning\nport | 8080 | The HTTP port\nlog_level | info | How much to log',
      headerRows: 1,
    });
    expect(texts(doc, 'paragraph')).toContain('Settings are read once at start-up.');
    expect(texts(doc, 'paragraph')).toContain('Made with care.');
    expect(allText(doc)).not.toMatch(/tags:|---|\*\*|&amp;|<b>/);
  });

  it('takes the title from the first H1 without front matter, and keeps hard line breaks', async () => {
    const doc = await read('a.md', utf8('Intro line  \nsecond line\n\n# Real Title\n\n## Part\n\nText'));
    expect(doc.title).toBe('Real Title');
    expect(doc.blocks[0]).toEqual({ kind: 'paragraph', text: 'Intro line\nsecond line' });
  });

  it('falls back to the file name as title', async () => {
    expect((await read('notes.md', utf8('## Only a subsection\n\ntext'))).title).toBe('notes.md');
  });

  it('reads absurdly nested Markdown as plain text instead of spending minutes parsing it', async () => {
    const quotes = `${'> '.repeat(1000)}${'deep\n'.repeat(1000)}`;
    const started = performance.now();
    const doc = await read('quotes.md', utf8(quotes));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(doc.metadata.read_as).toBe('text');
    const lists = Array.from({ length: 200 }, (_, depth) => `${'  '.repeat(depth)}- item ${depth}`).join(
      '\n',
    );
    expect((await read('lists.md', utf8(lists))).metadata.read_as).toBe('text');
    const fenced = `\`\`\`\n${' '.repeat(100)}indented code is fine\n\`\`\`\n`;
    expect((await read('fenced.md', utf8(fenced))).metadata.read_as).toBeUndefined();
  });
});

describe('readDocument: HTML', () => {
  it('keeps headings, paragraphs, lists, tables and code, entities decoded', async () => {
    const doc = await read('page.html');
    expect(doc).toMatchObject({
      format: 'html',
      title: 'Tide Tables & Moon Phases',
      metadata: { language: 'en' },
    });
    expect(doc.blocks).toEqual([
      { kind: 'heading', level: 1, text: 'Tides' },
      {
        kind: 'paragraph',
        text: 'Tides are the rise and fall of sea levels caused by the Moon’s gravity. Most coasts see two high tides a day.',
      },
      { kind: 'heading', level: 2, text: 'Spring and neap tides' },
      { kind: 'paragraph', text: 'Spring tides happen at new and full moon — the range is largest.' },
      {
        kind: 'list',
        text: '- Spring tide: largest range\n- Neap tide: smallest range\n  - at first and last quarter',
      },
      { kind: 'heading', level: 2, text: 'Tide table' },
      {
        kind: 'table',
        text: 'Port | High water | Low water\nBrest | 06:12 | 12:30\nDover | 07:45 | 13:58',
        headerRows: 1,
      },
      { kind: 'code', text: 'def tide(hour):\n    return amplitude * cos(hour)', language: 'python' },
    ]);
  });

  it('drops scripts, styles, navigation, noscript and hidden elements', async () => {
    const text = allText(await read('page.html'));
    for (const dropped of [
      'do-not-index',
      'also not indexed',
      'font-family',
      'About us',
      'hidden text',
      'Enable',
    ]) {
      expect(text).not.toContain(dropped);
    }
  });

  it('refuses a page that is all script as no_text, and absurd nesting as corrupt', async () => {
    const scripts = '<html><head><script>var a = 1;</script></head><body><script>go()</script></body></html>';
    expect((await failure('app.html', utf8(scripts))).reason).toBe('no_text');
    expect(await failure('deep.html', utf8(`${'<div>'.repeat(5000)}x`))).toEqual({
      reason: 'corrupt',
      message: '"deep.html" could not be read as HTML (nested too deeply or too large)',
    });
  });

  it('reads ordered lists with their numbers and tables without a header row', async () => {
    const doc = await read(
      'x.html',
      utf8('<ol start="3"><li>three<li>four</ol><table><tr><td>a<td>b<tr><td>c<td>d</table>'),
    );
    expect(doc.blocks).toEqual([
      { kind: 'list', text: '3. three\n4. four' },
      { kind: 'table', text: 'a | b\nc | d', headerRows: 0 },
    ]);
  });
});

describe('readDocument: plain text, code, JSON and CSV', () => {
  it('splits plain text into paragraphs at blank lines, whatever the line endings', async () => {
    const doc = await read('notes.txt', utf8('First line\r\nsame paragraph\r\n\r\n\r\nSecond paragraph\r\n'));
    expect(doc).toMatchObject({ format: 'text', title: 'notes.txt', metadata: { lines: 5 } });
    expect(doc.blocks).toEqual([
      { kind: 'paragraph', text: 'First line\nsame paragraph' },
      { kind: 'paragraph', text: 'Second paragraph' },
    ]);
  });

  it('cuts source code into top-level units, keeping blank lines inside a function', async () => {
    const doc = await read('sample.ts');
    expect(doc).toMatchObject({
      format: 'code',
      title: 'sample.ts',
      metadata: { language: 'typescript', lines: 26 },
    });
    expect(doc.blocks.every((block) => block.kind === 'code' && block.language === 'typescript')).toBe(true);
    expect(doc.blocks.map((block) => block.text.split('\n')[0])).toEqual([
      "import { readFile } from 'node:fs/promises';",
      '/** A tide reading at one port. */',
      '/** Reads the readings of a file, one `port,height` a line. */',
      'export const highest = (readings: TideReading[]): TideReading | undefined =>',
    ]);
    expect(doc.blocks[2]?.text).toContain("utf8');\n\n  return text");
  });

  it('renders JSON readably: scalars first, then a heading per nested member', async () => {
    const doc = await read('config.json');
    expect(doc).toMatchObject({
      format: 'json',
      title: 'config.json',
      metadata: { structure: 'object', items: 6 },
    });
    expect(doc.blocks).toEqual([
      { kind: 'list', text: 'name: tide-service\nversion: 3\nenabled: true\ntags: ocean, tides' },
      { kind: 'heading', level: 1, text: 'database' },
      { kind: 'list', text: 'host: db.internal\nport: 5432\npool:\n  min: 1\n  max: 10' },
      { kind: 'heading', level: 1, text: 'ports' },
      { kind: 'list', text: 'name: Brest\ntimezone: Europe/Paris' },
      { kind: 'list', text: 'name: Dover\ntimezone: Europe/London' },
    ]);
  });

  it('reads a top-level JSON array and JSON Lines as one block per item', async () => {
    const array = await read('a.json', utf8('[{"q": "why?", "a": ["because", {"k": null}]}, "plain words"]'));
    expect(array.blocks).toEqual([
      { kind: 'list', text: 'q: why?\na:\n  - because\n  - k: null' },
      { kind: 'paragraph', text: 'plain words' },
    ]);
    const lines = await read('events.jsonl', utf8('{"event": "start"}\n\n{"event": "stop"}\n'));
    expect(lines.metadata).toEqual({ structure: 'lines', items: 2 });
    expect(lines.blocks.map((block) => block.text)).toEqual(['event: start', 'event: stop']);
  });

  it('refuses invalid or absurdly nested JSON as corrupt', async () => {
    const invalid = await failure('config.json', utf8('{"name": "x",}'));
    expect(invalid.reason).toBe('corrupt');
    expect(invalid.message).toMatch(/^"config.json" is not valid JSON: /);
    expect((await failure('e.jsonl', utf8('{"ok": 1}\n{oops}\n'))).message).toMatch(/^line 2 of "e.jsonl"/);
    const deep = await failure('deep.json', utf8(`${'['.repeat(10_000)}${']'.repeat(10_000)}`));
    expect(deep).toEqual({ reason: 'corrupt', message: '"deep.json" nests deeper than 256 levels' });
  });

  it('renders CSV rows as lines that name their columns, quoting and line breaks honoured', async () => {
    const doc = await read('people.csv');
    expect(doc).toMatchObject({
      format: 'csv',
      title: 'people.csv',
      metadata: { rows: 4, columns: 4, delimiter: 'comma' },
    });
    expect(doc.blocks).toEqual([
      {
        kind: 'table',
        headerRows: 0,
        text: [
          'name: Ada Lovelace | born: 1815 | field: mathematics | notes: Wrote the first program, for the Analytical Engine',
          'name: Alan Turing | born: 1912 | field: computer science',
          'name: Grace Hopper | born: 1906 | field: computer science | notes: Built the first compiler; said "It\'s easier to ask forgiveness"',
          'name: Katherine Johnson | born: 1918 | field: mathematics | notes: Orbital mechanics for NASA',
        ].join('\n'),
      },
    ]);
  });

  it('finds the delimiter of semicolon and tab separated files, and names unnamed columns', async () => {
    const semicolons = await read('prices.csv', utf8('item;price\n"a;b";1,50\nc;2\n'));
    expect(semicolons.metadata.delimiter).toBe('semicolon');
    expect(semicolons.blocks[0]?.text).toBe('item: a;b | price: 1,50\nitem: c | price: 2');
    const tabs = await read('t.tsv', utf8(',x\tb\n1\t2\t3\n'));
    expect(tabs.blocks[0]?.text).toBe(',x: 1 | b: 2 | column 3: 3');
  });

  it('refuses CSV with an unterminated quote as corrupt', async () => {
    const broken = await failure('broken.csv', utf8('a,b\n"open,1\n2,3\n'));
    expect(broken.reason).toBe('corrupt');
    expect(broken.message).toMatch(/^"broken.csv" is not valid CSV: /);
  });
});

describe('readDocument: large files', () => {
  it('reads a few MiB of Markdown and of CSV in bounded time', async () => {
    const section = (n: number) =>
      `## Section ${n}\n\nProse about topic ${n}. A second sentence.\n\n- item ${n}\n- item ${n + 1}\n\n` +
      `\`\`\`js\nconst x${n} = ${n};\n\`\`\`\n\n| a | b |\n|---|---|\n| ${n} | ${2 * n} |\n\n`;
    const markdown = Array.from({ length: 25_000 }, (_, n) => section(n)).join('');
    expect(markdown.length).toBeGreaterThan(3 * 1024 * 1024);
    let started = performance.now();
    const md = await read('big.md', utf8(markdown));
    const markdownMs = performance.now() - started;
    expect(md.blocks.filter((block) => block.kind === 'heading')).toHaveLength(25_000);

    const csv = `id,name,comment\n${Array.from({ length: 60_000 }, (_, n) => `${n},name ${n},"a, b ${n}"`).join('\n')}`;
    expect(csv.length).toBeGreaterThan(1.5 * 1024 * 1024);
    started = performance.now();
    const table = await read('big.csv', utf8(csv));
    const csvMs = performance.now() - started;
    expect(table.metadata.rows).toBe(60_000);
    expect(table.blocks[0]?.text.split('\n')[59_999]).toBe(
      'id: 59999 | name: name 59999 | comment: a, b 59999',
    );
    // Generous bounds (the machine is shared): the point is linear work, not a benchmark.
    expect(markdownMs).toBeLessThan(60_000);
    expect(csvMs).toBeLessThan(30_000);
  });
});
