import fs from 'node:fs/promises';
import path from 'node:path';
import { compileGlob } from './glob.ts';
import { isInside } from './within-root.ts';

/** A file found under a folder: its path relative to the folder (with `/`), where it really is, its size. */
export interface FoundFile {
  relativePath: string;
  realPath: string;
  sizeBytes: number;
}

export interface WalkOptions {
  /** Globs (`glob.ts`) a relative path must match one of (`**\/*` when empty); hidden names only when a glob names the dot. */
  include: string[];
  /** Globs that leave a matching path out. */
  exclude: string[];
  /** Stops the walk with an error past this many matching files. */
  maxFiles: number;
  signal?: AbortSignal;
}

/** The folder holds more matching files than a walk may take. */
export class TooManyFilesError extends Error {
  constructor(maxFiles: number) {
    super(`more than ${maxFiles} files match the source's include globs; narrow them`);
    this.name = 'TooManyFilesError';
  }
}

/**
 * Lists the files under `folder` (a real, absolute path) whose relative paths match the globs,
 * sorted by path; a glob that cannot be used throws `GlobError` before anything is read. Links
 * are followed only to files that really lie inside `folder`, checked on the real path: a link
 * to `/etc/passwd` or to `../other-source` is skipped, and a link to a directory is never
 * descended (which also rules out cycles). Sockets, pipes and devices are skipped too.
 */
export async function walkFiles(folder: string, options: WalkOptions): Promise<FoundFile[]> {
  const include = (options.include.length > 0 ? options.include : ['**/*']).map(compileGlob);
  const exclude = options.exclude.map(compileGlob);
  const matches = (relative: string) =>
    include.some((glob) => glob.matches(relative)) && !exclude.some((glob) => glob.matches(relative));
  const found: FoundFile[] = [];

  const visit = async (directory: string, prefix: string): Promise<void> => {
    options.signal?.throwIfAborted();
    const entries = await fs.readdir(directory, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      const full = path.join(directory, entry.name);
      if (entry.isDirectory()) {
        await visit(full, relative);
        continue;
      }
      if (!matches(relative)) continue;
      const file = entry.isFile()
        ? full
        : entry.isSymbolicLink()
          ? await linkedFile(folder, full)
          : undefined;
      if (file === undefined) continue;
      const stat = await fs.stat(file).catch(() => undefined);
      if (!stat?.isFile()) continue;
      if (found.length >= options.maxFiles) throw new TooManyFilesError(options.maxFiles);
      found.push({ relativePath: relative, realPath: file, sizeBytes: stat.size });
    }
  };

  await visit(folder, '');
  return found;
}

/** Where a link leads when that is a file inside `folder`; undefined otherwise (outside, a directory, dangling). */
async function linkedFile(folder: string, link: string): Promise<string | undefined> {
  const real = await fs.realpath(link).catch(() => undefined);
  if (real === undefined || !isInside(folder, real)) return undefined;
  const stat = await fs.stat(real).catch(() => undefined);
  return stat?.isFile() ? real : undefined;
}

/**
 * Reads a file found by `walkFiles`, at most `maxBytes` (undefined when it is larger). Opened
 * with `O_NOFOLLOW`, so a file replaced by a link after the walk is not read through it.
 */
export async function readFoundFile(file: FoundFile, maxBytes: number): Promise<Buffer | undefined> {
  const handle = await fs.open(file.realPath, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const stat = await handle.stat();
    if (!stat.isFile() || stat.size > maxBytes) return undefined;
    const buffer = Buffer.alloc(stat.size);
    let offset = 0;
    while (offset < stat.size) {
      const { bytesRead } = await handle.read(buffer, offset, stat.size - offset, offset);
      if (bytesRead === 0) break;
      offset += bytesRead;
    }
    return buffer.subarray(0, offset);
  } finally {
    await handle.close();
  }
}
