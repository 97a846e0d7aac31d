import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFoundFile, TooManyFilesError, walkFiles } from './walk-files.ts';

describe('walkFiles', () => {
  let base: string;
  let folder: string;

  const write = async (relative: string, content = relative) => {
    const file = path.join(folder, relative);
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, content);
  };

  beforeAll(async () => {
    base = await fs.mkdtemp(path.join(os.tmpdir(), 'walk-files-'));
    folder = path.join(base, 'folder');
    await write('a.md');
    await write('docs/b.md');
    await write('docs/deep/c.txt');
    await write('drafts/d.md');
    await write('.hidden.md');
    await write('.git/config');
    await fs.writeFile(path.join(base, 'secret.md'), 'outside');
    await fs.symlink(path.join(base, 'secret.md'), path.join(folder, 'escape.md'));
    await fs.symlink(base, path.join(folder, 'up'));
    await fs.symlink(folder, path.join(folder, 'docs', 'loop'));
    await fs.symlink(path.join(folder, 'a.md'), path.join(folder, 'alias.md'));
    await fs.symlink(path.join(folder, 'missing.md'), path.join(folder, 'dangling.md'));
    folder = await fs.realpath(folder);
  });
  afterAll(() => fs.rm(base, { recursive: true, force: true }));

  const paths = async (include: string[], exclude: string[] = []) =>
    (await walkFiles(folder, { include, exclude, maxFiles: 100 })).map((file) => file.relativePath);

  it('lists every file recursively, sorted, without dotfiles, links out, directory links or dangling links', async () => {
    expect(await paths([])).toEqual(['a.md', 'alias.md', 'docs/b.md', 'docs/deep/c.txt', 'drafts/d.md']);
  });

  it('follows a link to a file inside the folder to its real path', async () => {
    const [alias] = (await walkFiles(folder, { include: ['alias.md'], exclude: [], maxFiles: 10 })).filter(
      (file) => file.relativePath === 'alias.md',
    );
    expect(alias?.realPath).toBe(path.join(folder, 'a.md'));
  });

  it('applies include and exclude globs to the relative path', async () => {
    expect(await paths(['**/*.md'], ['drafts/**'])).toEqual(['a.md', 'alias.md', 'docs/b.md']);
    expect(await paths(['docs/**'])).toEqual(['docs/b.md', 'docs/deep/c.txt']);
    expect(await paths(['**/.*', '.*/**'])).toEqual(['.git/config', '.hidden.md']);
  });

  it('stops past maxFiles', async () => {
    await expect(walkFiles(folder, { include: [], exclude: [], maxFiles: 2 })).rejects.toBeInstanceOf(
      TooManyFilesError,
    );
  });

  it('stops when its signal aborts', async () => {
    const signal = AbortSignal.abort();
    await expect(walkFiles(folder, { include: [], exclude: [], maxFiles: 10, signal })).rejects.toThrow();
  });
});

describe('readFoundFile', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'read-found-'));
  });
  afterAll(() => fs.rm(dir, { recursive: true, force: true }));

  it('reads a file up to the limit and refuses one that grew past it', async () => {
    const file = path.join(dir, 'f.txt');
    await fs.writeFile(file, 'hello');
    const found = { relativePath: 'f.txt', realPath: file, sizeBytes: 5 };
    expect((await readFoundFile(found, 5))?.toString()).toBe('hello');
    await fs.writeFile(file, 'hello, world');
    expect(await readFoundFile(found, 5)).toBeUndefined();
  });

  it('does not read through a link put in the file’s place', async () => {
    const target = path.join(dir, 'target.txt');
    const swapped = path.join(dir, 'swapped.txt');
    await fs.writeFile(target, 'secret');
    await fs.symlink(target, swapped);
    await expect(
      readFoundFile({ relativePath: 'swapped.txt', realPath: swapped, sizeBytes: 6 }, 100),
    ).rejects.toThrow();
  });
});
