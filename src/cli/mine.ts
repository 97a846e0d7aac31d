/**
 * `npm run mine -- <file.dat[.gz]> --min-support <count|fraction> [--max-length N] [--closed|--maximal]
 * [--top-k K] [--out file]`: mines a FIMI file and prints the number of itemsets, the time and the peak
 * memory; with --out, writes one itemset per line as `items (support)`. A gzipped file (the committed
 * fixtures under tests/fixtures/fim) is recognised by its magic bytes and read as it is.
 */

import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { parseFimi } from '../lib/mining/fimi.ts';
import { type MiningOptions, mineTransactionTable } from '../lib/mining/fp-growth.ts';

const USAGE =
  'usage: npm run mine -- <file.dat[.gz]> --min-support <count|fraction> [--max-length N] [--closed|--maximal] [--top-k K] [--out file]';

class UsageError extends Error {}

const FLAGS = {
  'min-support': { type: 'string' },
  'max-length': { type: 'string' },
  'top-k': { type: 'string' },
  closed: { type: 'boolean' },
  maximal: { type: 'boolean' },
  out: { type: 'string' },
} as const;

function parseCommandLine(argv: string[]): { file: string; out: string | undefined; options: MiningOptions } {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof FLAGS }>>;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: FLAGS });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError('expected exactly one input file');
  const minSupportText = values['min-support'];
  if (minSupportText === undefined) throw new UsageError('--min-support is required');
  const minSupport = Number(minSupportText);
  const isCount = /^\d+$/.test(minSupportText) && minSupport >= 1;
  const isFraction = /^(0?\.\d+|0)$/.test(minSupportText) && minSupport > 0 && minSupport < 1;
  if (!isCount && !isFraction) {
    throw new UsageError(`--min-support must be a count >= 1 or a fraction in (0, 1), got ${minSupportText}`);
  }
  const positiveInteger = (name: string, text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text) || Number(text) < 1)
      throw new UsageError(`--${name} must be an integer >= 1, got ${text}`);
    return Number(text);
  };
  if (values.closed && values.maximal) throw new UsageError('--closed and --maximal exclude each other');
  const topK = positiveInteger('top-k', values['top-k']);
  if (topK !== undefined && values.maximal) throw new UsageError('--top-k cannot be combined with --maximal');
  const options: MiningOptions = {
    minSupport,
    maxLength: positiveInteger('max-length', values['max-length']),
    topK,
    mode: values.closed ? 'closed' : values.maximal ? 'maximal' : 'all',
  };
  return { file: positionals[0] as string, out: values.out, options };
}

/** Buffers output lines and writes them in 1 MB chunks: one write per line would dominate the run time. */
function createLineWriter(path: string): { line: (text: string) => void; close: () => void } {
  const fd = openSync(path, 'w');
  const buffer = Buffer.allocUnsafe(1 << 20);
  let used = 0;
  const flush = (): void => {
    let offset = 0;
    while (offset < used) offset += writeSync(fd, buffer, offset, used - offset);
    used = 0;
  };
  return {
    line(text: string): void {
      if (used + text.length * 3 + 1 > buffer.length) flush();
      used += buffer.write(text, used, 'utf8');
      buffer[used++] = 10;
    },
    close(): void {
      flush();
      closeSync(fd);
    },
  };
}

/** The file's FIMI bytes, gunzipped when the file is gzip (RFC 1952 magic bytes 1f 8b). */
function readFimiFile(file: string): Buffer {
  const bytes = readFileSync(file);
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes;
}

function main(): void {
  const { file, out, options } = parseCommandLine(process.argv.slice(2));
  const started = performance.now();
  const table = parseFimi(readFimiFile(file));
  const parsed = performance.now();
  const writer = out === undefined ? undefined : createLineWriter(out);
  const summary = mineTransactionTable(
    table,
    options,
    writer
      ? (items, length, support) => {
          let text = '';
          for (let i = 0; i < length; i++) text += `${items[i]} `;
          writer.line(`${text}(${support})`);
        }
      : () => {},
  );
  writer?.close();
  const finished = performance.now();
  const peakMb = process.resourceUsage().maxRSS / 1024;
  console.log(
    `${summary.itemsetCount} itemsets (${summary.transactionCount} transactions, min support ${summary.minSupportCount}, ` +
      `${summary.frequentItemCount} frequent items)`,
  );
  console.log(
    `time ${((finished - started) / 1000).toFixed(3)} s (parse ${((parsed - started) / 1000).toFixed(3)} s, ` +
      `mine${out === undefined ? '' : ' + write'} ${((finished - parsed) / 1000).toFixed(3)} s), peak RSS ${peakMb.toFixed(1)} MB`,
  );
}

try {
  main();
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`mine: ${error.message}\n${USAGE}`);
    process.exit(2);
  }
  const code = (error as NodeJS.ErrnoException).code;
  const unreadable = code === 'ENOENT' || code === 'EISDIR' || code?.startsWith('Z_'); // Z_*: a damaged .gz
  if (unreadable || error instanceof SyntaxError || error instanceof RangeError) {
    console.error(`mine: ${(error as Error).message}`);
    process.exit(2);
  }
  throw error;
}
