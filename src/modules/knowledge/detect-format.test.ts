import { describe, expect, it } from 'vitest';
import { detectFormat, extensionOf } from './detect-format.ts';
import { ExtractionError, type ExtractionFailure } from './document.ts';

const utf8 = (text: string) => new TextEncoder().encode(text);
const bytesOf = (...parts: (number[] | string)[]) =>
  new Uint8Array(parts.flatMap((part) => (typeof part === 'string' ? [...utf8(part)] : part)));

const ZIP = bytesOf([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00], 'word/document.xml');
const PNG = bytesOf([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d], 'IHDR');
const ELF = bytesOf([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00]);
const PDF = utf8('%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n');

function failure(input: { filename: string; mediaType?: string; bytes: Uint8Array }): {
  reason: ExtractionFailure;
  message: string;
} {
  try {
    detectFormat(input);
  } catch (error) {
    if (error instanceof ExtractionError) return { reason: error.reason, message: error.message };
    throw error;
  }
  throw new Error(`${input.filename} was accepted`);
}

describe('detectFormat', () => {
  it('reads the format from the extension, case-insensitively, and the language of code', () => {
    const cases: [string, string, string | undefined][] = [
      ['Guide.MD', 'markdown', undefined],
      ['page.htm', 'html', undefined],
      ['notes.txt', 'text', undefined],
      ['data.json', 'json', undefined],
      ['events.ndjson', 'json', undefined],
      ['people.tsv', 'csv', undefined],
      ['src/app.ts', 'code', 'typescript'],
      ['main.py', 'code', 'python'],
      ['lib.rs', 'code', 'rust'],
      ['deploy.sh', 'code', 'bash'],
      ['Dockerfile', 'code', 'dockerfile'],
      ['query.sql', 'code', 'sql'],
    ];
    for (const [filename, format, language] of cases) {
      const detected = detectFormat({ filename, bytes: utf8('select 1;\n') });
      expect({ filename, format: detected.format }).toEqual({ filename, format });
      if (detected.format !== 'pdf') expect(detected.language).toBe(language);
    }
    expect(extensionOf('archive.tar.GZ')).toBe('gz');
    expect(extensionOf('.gitignore')).toBe('');
  });

  it('uses the media type when the name has no known extension, ignoring its parameters', () => {
    const detected = detectFormat({
      filename: 'upload',
      mediaType: 'text/markdown; charset=utf-8',
      bytes: utf8('# A'),
    });
    expect(detected.format).toBe('markdown');
    expect(detectFormat({ filename: 'x', mediaType: 'application/ld+json', bytes: utf8('{}') }).format).toBe(
      'json',
    );
  });

  it('lets the extension choose between readings of text when the media type says another', () => {
    expect(detectFormat({ filename: 'a.csv', mediaType: 'text/plain', bytes: utf8('a,b\n1,2') }).format).toBe(
      'csv',
    );
    expect(detectFormat({ filename: 'a.md', mediaType: 'text/html', bytes: utf8('# A') }).format).toBe(
      'markdown',
    );
  });

  it('sniffs JSON and HTML in text that nothing names, and takes the rest as plain text', () => {
    expect(detectFormat({ filename: 'LICENSE', bytes: utf8('MIT License\n\nCopyright') }).format).toBe(
      'text',
    );
    expect(detectFormat({ filename: 'dump', bytes: utf8(' {"a": [1, 2]}') }).format).toBe('json');
    expect(detectFormat({ filename: 'dump', bytes: utf8('{not json') }).format).toBe('text');
    expect(detectFormat({ filename: 'saved', bytes: utf8('<!DOCTYPE html><p>x') }).format).toBe('html');
  });

  it('recognises a PDF by its bytes, even with junk before the header, when nothing claims otherwise', () => {
    expect(detectFormat({ filename: 'report.pdf', bytes: PDF }).format).toBe('pdf');
    expect(
      detectFormat({ filename: 'download', mediaType: 'application/octet-stream', bytes: PDF }).format,
    ).toBe('pdf');
    expect(detectFormat({ filename: 'x.pdf', bytes: bytesOf('\n\n  ', [...PDF]) }).format).toBe('pdf');
  });

  it('refuses empty and whitespace-only files as empty', () => {
    expect(failure({ filename: 'a.md', bytes: new Uint8Array() }).reason).toBe('empty');
    expect(failure({ filename: 'a.txt', bytes: utf8(' \n\t\r\n ') }).reason).toBe('empty');
    expect(failure({ filename: 'a.txt', bytes: bytesOf([0xef, 0xbb, 0xbf], '  ') }).reason).toBe('empty');
  });

  it('refuses a file whose bytes contradict its name as type_mismatch, naming both', () => {
    const zip = failure({ filename: 'notes.md', bytes: ZIP });
    expect(zip).toEqual({ reason: 'type_mismatch', message: expect.stringContaining('ZIP archive') });
    expect(zip.message).toContain('"notes.md" is named as Markdown');
    expect(failure({ filename: 'photo.html', bytes: PNG }).message).toMatch(/HTML but is a PNG image/);
    expect(failure({ filename: 'notes.txt', bytes: ELF }).message).toMatch(/ELF executable/);
    expect(failure({ filename: 'notes.md', bytes: PDF })).toEqual({
      reason: 'type_mismatch',
      message: '"notes.md" is named as Markdown but is a PDF document',
    });
    expect(failure({ filename: 'fake.pdf', bytes: utf8('just text, no header') })).toEqual({
      reason: 'type_mismatch',
      message: '"fake.pdf" is named as PDF but is text (a PDF starts with "%PDF-")',
    });
    expect(failure({ filename: 'fake.pdf', bytes: ZIP }).reason).toBe('type_mismatch');
    expect(failure({ filename: 'logo.png', bytes: utf8('plain words') }).reason).toBe('type_mismatch');
  });

  it('refuses a file whose bytes contradict its declared media type as type_mismatch', () => {
    expect(failure({ filename: 'upload', mediaType: 'application/pdf', bytes: utf8('hello') })).toEqual({
      reason: 'type_mismatch',
      message: '"upload" is declared as application/pdf but is text (a PDF starts with "%PDF-")',
    });
    expect(failure({ filename: 'upload', mediaType: 'text/plain', bytes: PDF }).reason).toBe('type_mismatch');
    expect(failure({ filename: 'upload', mediaType: 'text/csv', bytes: PNG }).reason).toBe('type_mismatch');
  });

  it('refuses binary formats it does not read as unsupported_type when nothing claims otherwise', () => {
    const zip = failure({ filename: 'slides.pptx', bytes: ZIP });
    expect(zip.reason).toBe('unsupported_type');
    expect(zip.message).toContain(
      'Supported formats: PDF, Markdown, HTML, plain text, JSON, CSV and source code.',
    );
    expect(failure({ filename: 'photo.png', mediaType: 'image/png', bytes: PNG }).reason).toBe(
      'unsupported_type',
    );
    expect(failure({ filename: 'blob', bytes: bytesOf([0x00, 0x01, 0x02, 0x03, 0xfe, 0x80]) })).toEqual({
      reason: 'unsupported_type',
      message: expect.stringContaining('binary data, not text'),
    });
  });

  it('treats NUL bytes or control characters in a named text file as binary', () => {
    expect(failure({ filename: 'notes.txt', bytes: bytesOf('abc', [0x00], 'def') }).reason).toBe(
      'type_mismatch',
    );
    const noisy = new Uint8Array(400).map((_, index) => (index % 3 === 0 ? 0x01 : 0x41));
    expect(failure({ filename: 'notes.txt', bytes: noisy }).reason).toBe('type_mismatch');
  });

  it('decodes a UTF-8 BOM, UTF-16 with a BOM, and legacy Windows-1252 text', () => {
    const bom = detectFormat({ filename: 'a.txt', bytes: bytesOf([0xef, 0xbb, 0xbf], 'café') });
    expect(bom).toMatchObject({ text: 'café', encoding: 'utf-8' });
    const utf16 = new Uint8Array([0xff, 0xfe, ...[...'hé'].flatMap((c) => [c.charCodeAt(0), 0])]);
    expect(detectFormat({ filename: 'a.txt', bytes: utf16 })).toMatchObject({
      text: 'hé',
      encoding: 'utf-16le',
    });
    const latin = bytesOf('na', [0xef], 've caf', [0xe9], ' ', [0x80], '5');
    expect(detectFormat({ filename: 'a.csv', bytes: latin })).toMatchObject({
      text: 'naïve café €5',
      encoding: 'windows-1252',
    });
  });
});
