import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import yauzl from 'yauzl';

/**
 * Reads the files of an uploaded .zip, .tar.gz (.tgz) or .tar held in memory, refusing what
 * could hurt the machine or escape a folder, without writing anything to disk:
 *
 *   bytes ─┬─ zip:  central directory ── every entry checked (name, link, declared size,
 *          │        ratio) before any is inflated ── wanted files inflated, sizes enforced
 *          └─ tar(.gz): gunzip (output counted) ── tar headers checked as they stream ──
 *                       wanted files collected, the rest drained
 *
 * An entry whose name is absolute or climbs with `..`, a symbolic or hard link, or a device is
 * refused (`unsafe_entry`): the whole archive, not only the entry, since no honest source
 * archive needs one. Bombs are refused by counting: entries, the total of uncompressed sizes
 * (declared, and then actually produced), and the compression ratio.
 */

export interface ArchiveLimits {
  /** Entries of any kind (files, folders). */
  maxEntries: number;
  /** Uncompressed bytes of all entries together. */
  maxTotalBytes: number;
  /**
   * Uncompressed over compressed size, per entry of a zip or over a whole gzip stream; a source
   * archive compresses 3 to 10 times, a bomb hundreds or thousands of times.
   */
  maxRatio: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = {
  maxEntries: 50_000,
  maxTotalBytes: 512 * 1024 * 1024,
  maxRatio: 100,
};

/** Below this many bytes, a ratio says nothing (a tar of one small file is mostly padding). */
const RATIO_FLOOR_BYTES = 1024 * 1024;

export type ArchiveErrorReason =
  | 'not_an_archive'
  | 'corrupt'
  | 'unsafe_entry'
  | 'too_many_entries'
  | 'too_large'
  | 'compression_ratio';

/** Why an archive was refused; the message is safe to show the uploader. */
export class ArchiveError extends Error {
  readonly reason: ArchiveErrorReason;

  constructor(reason: ArchiveErrorReason, message: string) {
    super(message);
    this.name = 'ArchiveError';
    this.reason = reason;
  }
}

/** A regular file of the archive, its path made safe (forward slashes, no `./`). */
export interface ArchiveEntry {
  path: string;
  /** Uncompressed size, as the archive declares it. */
  size: number;
}

export interface ReadArchiveOptions {
  limits?: Partial<ArchiveLimits>;
  /** Which files to read; the others are checked and counted but never kept. */
  select(entry: ArchiveEntry): boolean;
  /** Receives each selected file's bytes, in archive order. */
  onFile(entry: ArchiveEntry, data: Buffer): void;
  signal?: AbortSignal;
}

export type ArchiveFormat = 'zip' | 'tar.gz' | 'tar';

/** The archive's format from its first bytes, or undefined when it is none of those read here. */
export function archiveFormat(bytes: Buffer): ArchiveFormat | undefined {
  if (bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b) {
    const kind = bytes.readUInt16LE(2);
    if (kind === 0x0403 || kind === 0x0605) return 'zip';
  }
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) return 'tar.gz';
  if (bytes.length >= 262 && bytes.toString('latin1', 257, 262) === 'ustar') return 'tar';
  return undefined;
}

/** Reads the archive; rejects with `ArchiveError` when it is refused. Answers what it counted. */
export async function readArchive(
  bytes: Buffer,
  options: ReadArchiveOptions,
): Promise<{ format: ArchiveFormat; entries: number; totalBytes: number }> {
  const limits = { ...DEFAULT_ARCHIVE_LIMITS, ...options.limits };
  const format = archiveFormat(bytes);
  if (!format) throw new ArchiveError('not_an_archive', 'the upload is not a .zip, .tar.gz or .tar archive');
  const counted =
    format === 'zip' ? await readZip(bytes, limits, options) : await readTar(bytes, format, limits, options);
  return { format, ...counted };
}

/**
 * An entry's name made safe to use as a relative path, or an `unsafe_entry` error. Backslashes
 * count as separators, so `a\..\..\x` is refused like `a/../../x`.
 */
export function safeEntryPath(name: string): string {
  const normal = name.replaceAll('\\', '/');
  if (normal.includes('\0') || normal.length > 1024) {
    throw new ArchiveError('unsafe_entry', 'an archive entry has an invalid name');
  }
  if (normal.startsWith('/') || /^[A-Za-z]:/.test(normal)) {
    throw new ArchiveError('unsafe_entry', `archive entry "${printable(normal)}" is an absolute path`);
  }
  const parts = normal.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) {
    throw new ArchiveError(
      'unsafe_entry',
      `archive entry "${printable(normal)}" leads out of the archive (..)`,
    );
  }
  return parts.join('/');
}

const printable = (name: string): string => name.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);

interface Counter {
  entries: number;
  totalBytes: number;
}

function countEntry(counter: Counter, limits: ArchiveLimits, declaredSize: number): void {
  counter.entries++;
  if (counter.entries > limits.maxEntries) {
    throw new ArchiveError('too_many_entries', `the archive has more than ${limits.maxEntries} entries`);
  }
  counter.totalBytes += declaredSize;
  if (counter.totalBytes > limits.maxTotalBytes) {
    throw new ArchiveError(
      'too_large',
      `the archive expands to more than ${limits.maxTotalBytes} bytes (the limit of an upload's content)`,
    );
  }
}

/** Unix file type bits of a zip entry made on Unix (`external attributes >> 16`). */
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;

async function readZip(bytes: Buffer, limits: ArchiveLimits, options: ReadArchiveOptions): Promise<Counter> {
  let zip: yauzl.ZipFile;
  try {
    // Names are checked here (`safeEntryPath`), so yauzl hands them over undecoded.
    zip = await yauzl.fromBufferPromise(bytes, {
      lazyEntries: true,
      decodeStrings: false,
      validateEntrySizes: true,
    });
  } catch {
    throw new ArchiveError('corrupt', 'the .zip archive cannot be read (corrupt or truncated)');
  }
  try {
    if (zip.entryCount > limits.maxEntries) {
      throw new ArchiveError('too_many_entries', `the archive has more than ${limits.maxEntries} entries`);
    }
    const counter: Counter = { entries: 0, totalBytes: 0 };
    const entries: Array<{ entry: yauzl.Entry; path: string; directory: boolean }> = [];
    // First every entry's header, so nothing is inflated from an archive that is refused.
    for (let entry = await nextEntry(zip); entry; entry = await nextEntry(zip)) {
      options.signal?.throwIfAborted();
      const raw = yauzl.getFileNameLowLevel(
        entry.generalPurposeBitFlag,
        entry.fileName as unknown as Buffer,
        entry.extraFields,
        false,
      );
      const path = safeEntryPath(raw);
      const mode = (entry.externalFileAttributes >>> 16) & S_IFMT;
      if (mode === S_IFLNK) {
        throw new ArchiveError('unsafe_entry', `archive entry "${printable(path)}" is a symbolic link`);
      }
      if (mode !== 0 && mode !== S_IFREG && mode !== S_IFDIR) {
        throw new ArchiveError(
          'unsafe_entry',
          `archive entry "${printable(path)}" is not a file or a folder`,
        );
      }
      if (entry.isEncrypted()) throw new ArchiveError('corrupt', 'the archive has encrypted entries');
      countEntry(counter, limits, entry.uncompressedSize);
      if (
        entry.uncompressedSize > RATIO_FLOOR_BYTES &&
        entry.uncompressedSize / Math.max(entry.compressedSize, 1) > limits.maxRatio
      ) {
        throw new ArchiveError(
          'compression_ratio',
          `archive entry "${printable(path)}" expands more than ${limits.maxRatio} times (a zip bomb?)`,
        );
      }
      entries.push({ entry, path, directory: raw.endsWith('/') || mode === S_IFDIR });
    }
    for (const { entry, path, directory } of entries) {
      if (directory || path === '') continue;
      const file = { path, size: entry.uncompressedSize };
      if (!options.select(file)) continue;
      options.signal?.throwIfAborted();
      options.onFile(file, await inflate(zip, entry));
    }
    return counter;
  } finally {
    zip.close();
  }
}

function nextEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | undefined> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      zip.off('entry', onEntry);
      zip.off('end', onEnd);
      zip.off('error', onError);
    };
    const onEntry = (entry: yauzl.Entry) => {
      cleanup();
      resolve(entry);
    };
    const onEnd = () => {
      cleanup();
      resolve(undefined);
    };
    const onError = () => {
      cleanup();
      reject(new ArchiveError('corrupt', 'the .zip archive cannot be read (corrupt or truncated)'));
    };
    zip.on('entry', onEntry);
    zip.on('end', onEnd);
    zip.on('error', onError);
    zip.readEntry();
  });
}

/** One entry's bytes; yauzl fails the stream if it yields more than the entry declares. */
async function inflate(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Buffer> {
  try {
    const stream = await zip.openReadStreamPromise(entry);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  } catch {
    throw new ArchiveError(
      'corrupt',
      'an entry of the .zip archive cannot be read (corrupt, or larger than declared)',
    );
  }
}

async function readTar(
  bytes: Buffer,
  format: 'tar' | 'tar.gz',
  limits: ArchiveLimits,
  options: ReadArchiveOptions,
): Promise<Counter> {
  const counter: Counter = { entries: 0, totalBytes: 0 };
  const extract = tar.extract();
  let refusal: ArchiveError | undefined;
  extract.on('entry', (header, stream, next) => {
    // A refusal destroys the pipeline and, with it, the entry being read: the pipeline reports it.
    stream.on('error', () => {});
    try {
      options.signal?.throwIfAborted();
      const path = safeEntryPath(header.name);
      if (header.type === 'symlink' || header.type === 'link') {
        throw new ArchiveError('unsafe_entry', `archive entry "${printable(path)}" is a link`);
      }
      const regular = header.type === 'file' || header.type === 'contiguous-file';
      if (!regular && header.type !== 'directory') {
        throw new ArchiveError(
          'unsafe_entry',
          `archive entry "${printable(path)}" is not a file or a folder`,
        );
      }
      const size = header.size ?? 0;
      countEntry(counter, limits, size);
      const file = { path, size };
      if (!regular || path === '' || !options.select(file)) {
        stream.on('end', () => next());
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: unknown) => {
        chunks.push(chunk as Buffer);
      });
      stream.on('end', () => {
        try {
          options.onFile(file, Buffer.concat(chunks));
          next();
        } catch (error) {
          next(error as Error);
        }
      });
    } catch (error) {
      if (error instanceof ArchiveError) refusal ??= error;
      stream.resume();
      next(error as Error);
    }
  });
  const source = Readable.from([bytes]);
  const signal = options.signal ?? new AbortController().signal;
  try {
    if (format === 'tar.gz') {
      await pipeline(source, createGunzip(), countOutput(bytes.length, limits), extract, { signal });
    } else {
      await pipeline(source, extract, { signal });
    }
  } catch (error) {
    options.signal?.throwIfAborted();
    if (refusal) throw refusal;
    if (error instanceof ArchiveError) throw error;
    throw new ArchiveError('corrupt', `the .${format} archive cannot be read (corrupt or truncated)`);
  }
  return counter;
}

/**
 * Counts what gunzip produces and stops it past the total limit or the ratio limit, so a gzip
 * bomb is never expanded further than that (and never to disk).
 */
function countOutput(compressedBytes: number, limits: ArchiveLimits): Transform {
  let produced = 0;
  const byRatio = Math.max(RATIO_FLOOR_BYTES, compressedBytes * limits.maxRatio);
  return new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      produced += chunk.length;
      if (produced > limits.maxTotalBytes) {
        done(
          new ArchiveError(
            'too_large',
            `the archive expands to more than ${limits.maxTotalBytes} bytes (the limit of an upload's content)`,
          ),
        );
      } else if (produced > byRatio) {
        done(
          new ArchiveError(
            'compression_ratio',
            `the archive expands more than ${limits.maxRatio} times its size (a gzip bomb?)`,
          ),
        );
      } else done(null, chunk);
    },
  });
}
