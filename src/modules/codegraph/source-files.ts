import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { type ArchiveLimits, readArchive } from '../../lib/archive/read-archive.ts';
import { isSourceFile } from './parse/code-parser.ts';

/**
 * Which files of a directory or an archive the code graph reads, within documented caps:
 * files of the languages it parses, outside folders of dependencies, builds and tools, not
 * generated, not huge. Directories are walked without following links (a link inside the
 * sources root could lead anywhere); archives are read in memory through `lib/archive`.
 */

export interface SourceLimits {
  /** A larger file is skipped (`too_large`): minified or generated code, data in code. */
  maxFileBytes: number;
  /** More source files than this and the project is refused (`too_many_files`). */
  maxFiles: number;
  /** More source bytes than this and the project is refused (`too_much_source`). */
  maxSourceBytes: number;
  /** Directory entries looked at while walking; past it the walk is refused (`too_many_files`). */
  maxWalkEntries: number;
  /** Limits of an uploaded archive (entries, expanded size, compression ratio). */
  archive: ArchiveLimits;
}

export const DEFAULT_SOURCE_LIMITS: SourceLimits = {
  maxFileBytes: 512 * 1024,
  maxFiles: 20_000,
  maxSourceBytes: 64 * 1024 * 1024,
  maxWalkEntries: 200_000,
  archive: { maxEntries: 50_000, maxTotalBytes: 512 * 1024 * 1024, maxRatio: 100 },
};

/**
 * Folders never read: dependencies (`node_modules`, `vendor`, virtual environments), build
 * output, caches. Folders whose name starts with a dot (`.git`, `.venv`, `.next`) neither.
 */
export const SKIPPED_FOLDERS: ReadonlySet<string> = new Set([
  'node_modules',
  'bower_components',
  'jspm_packages',
  'vendor',
  'third_party',
  'dist',
  'build',
  'out',
  'target',
  'coverage',
  '__pycache__',
  'venv',
  'env',
  'site-packages',
  'Pods',
]);

/** Names of generated files: minified bundles, protobuf and gRPC stubs. */
const GENERATED_NAME = /(\.min\.[cm]?js|\.bundle\.js|\.pb\.go|_pb2(_grpc)?\.pyi?|\.pb\.(ts|js))$/i;
/** The marker generators write at the top of a file (`// Code generated ... DO NOT EDIT.`, `@generated`). */
const GENERATED_MARK = /\bDO NOT EDIT\b|@generated\b/;

export type SkipReason = 'too_large' | 'generated' | 'not_text';

export interface SourceFile {
  /** Relative to the project root, with forward slashes. */
  path: string;
  text: string;
}

/** The files a project will be read from: counted first, read when parsed. */
export interface SourceSet {
  files: number;
  bytes: number;
  /** Files left out, by reason; filled while reading for what only the text tells (generated). */
  skipped: Record<SkipReason, number>;
  read(signal?: AbortSignal): AsyncIterable<SourceFile>;
}

export type SourceErrorReason = 'too_many_files' | 'too_much_source' | 'no_source_files';

/** Why a project cannot be indexed from what was given; the message is safe to show. */
export class SourceError extends Error {
  readonly reason: SourceErrorReason;

  constructor(reason: SourceErrorReason, message: string) {
    super(message);
    this.name = 'SourceError';
    this.reason = reason;
  }
}

/** True when `relativePath` (forward slashes) is a file the code graph reads, by its name. */
export function isWantedPath(relativePath: string): boolean {
  const parts = relativePath.split('/');
  const folders = parts.slice(0, -1);
  if (folders.some((folder) => folder.startsWith('.') || SKIPPED_FOLDERS.has(folder))) return false;
  const name = parts.at(-1) ?? '';
  return !name.startsWith('.') && isSourceFile(name) && !GENERATED_NAME.test(name);
}

const emptySkips = (): Record<SkipReason, number> => ({ too_large: 0, generated: 0, not_text: 0 });

/**
 * The text of a source file, or why it is skipped: not UTF-8 text (a NUL byte, invalid UTF-8)
 * or generated (a marker in its first lines).
 */
function asSource(data: Buffer): { text: string } | { skip: SkipReason } {
  if (data.includes(0)) return { skip: 'not_text' };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    return { skip: 'not_text' };
  }
  const head = text.slice(0, 2000).split('\n').slice(0, 5).join('\n');
  return GENERATED_MARK.test(head) ? { skip: 'generated' } : { text };
}

function checkTotals(files: number, bytes: number, limits: SourceLimits): void {
  if (files > limits.maxFiles) {
    throw new SourceError('too_many_files', `the project has more than ${limits.maxFiles} source files`);
  }
  if (bytes > limits.maxSourceBytes) {
    throw new SourceError(
      'too_much_source',
      `the project has more than ${limits.maxSourceBytes} bytes of source`,
    );
  }
}

/**
 * The source files under `root` (an absolute, already vetted directory). Symbolic links are
 * not followed, files or folders that vanish while walking are passed over.
 */
export async function directorySources(
  root: string,
  limits: SourceLimits = DEFAULT_SOURCE_LIMITS,
  signal?: AbortSignal,
): Promise<SourceSet> {
  const wanted: Array<{ path: string; size: number }> = [];
  const skipped = emptySkips();
  let bytes = 0;
  let seen = 0;
  const pending = [''];
  while (pending.length > 0) {
    signal?.throwIfAborted();
    const folder = pending.pop() as string;
    let entries: Dirent[];
    try {
      entries = await fs.readdir(path.join(root, folder), { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      seen++;
      if (seen > limits.maxWalkEntries) {
        throw new SourceError(
          'too_many_files',
          `the directory has more than ${limits.maxWalkEntries} entries`,
        );
      }
      const relative = folder === '' ? entry.name : `${folder}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!entry.name.startsWith('.') && !SKIPPED_FOLDERS.has(entry.name)) pending.push(relative);
        continue;
      }
      if (!entry.isFile() || !isWantedPath(relative)) continue;
      const size = await fs.stat(path.join(root, relative)).then(
        (stat) => stat.size,
        () => undefined,
      );
      if (size === undefined) continue;
      if (size > limits.maxFileBytes) {
        skipped.too_large++;
        continue;
      }
      wanted.push({ path: relative, size });
      bytes += size;
      checkTotals(wanted.length, bytes, limits);
    }
  }
  wanted.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    files: wanted.length,
    bytes,
    skipped,
    async *read(readSignal) {
      for (const file of wanted) {
        readSignal?.throwIfAborted();
        const data = await readCapped(path.join(root, file.path), limits.maxFileBytes);
        if (data === undefined) continue;
        if (data === 'too_large') {
          skipped.too_large++;
          continue;
        }
        const source = asSource(data);
        if ('skip' in source) skipped[source.skip]++;
        else yield { path: file.path, text: source.text };
      }
    },
  };
}

/** A file's bytes, `too_large` if it grew past the cap since it was counted, undefined if gone. */
async function readCapped(file: string, maxBytes: number): Promise<Buffer | 'too_large' | undefined> {
  let handle: fs.FileHandle;
  try {
    // O_NOFOLLOW: a file replaced by a link since the walk is not followed.
    handle = await fs.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return bytesRead > maxBytes ? 'too_large' : buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * The source files of an uploaded archive, read in memory. Rejects with `ArchiveError` when
 * the archive is refused (see `lib/archive`), `SourceError` when the sources are over the caps.
 */
export async function archiveSources(
  bytes: Buffer,
  limits: SourceLimits = DEFAULT_SOURCE_LIMITS,
  signal?: AbortSignal,
): Promise<SourceSet> {
  const files = new Map<string, string>();
  const skipped = emptySkips();
  let total = 0;
  await readArchive(bytes, {
    limits: limits.archive,
    signal,
    select(entry) {
      if (!isWantedPath(entry.path)) return false;
      if (entry.size > limits.maxFileBytes) {
        skipped.too_large++;
        return false;
      }
      return true;
    },
    onFile(entry, data) {
      const source = asSource(data);
      if ('skip' in source) {
        skipped[source.skip]++;
        return;
      }
      total += data.length - Buffer.byteLength(files.get(entry.path) ?? '');
      files.set(entry.path, source.text);
      checkTotals(files.size, total, limits);
    },
  });
  const sorted = [...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    files: sorted.length,
    bytes: total,
    skipped,
    async *read(readSignal) {
      for (const [file, text] of sorted) {
        readSignal?.throwIfAborted();
        yield { path: file, text };
      }
    },
  };
}
