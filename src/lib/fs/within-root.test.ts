import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isInside, PathOutsideRootError, resolveWithinRoot, tenantSourcesRoot } from './within-root.ts';

describe('resolveWithinRoot', () => {
  let base: string;
  let root: string;

  beforeAll(async () => {
    base = await fs.mkdtemp(path.join(os.tmpdir(), 'within-root-'));
    root = path.join(base, 'root');
    await fs.mkdir(path.join(root, 'docs', 'guide'), { recursive: true });
    await fs.writeFile(path.join(root, 'docs', 'readme.md'), '# hi');
    await fs.writeFile(path.join(base, 'secret.txt'), 'outside');
    await fs.symlink(path.join(base, 'secret.txt'), path.join(root, 'docs', 'escape.txt'));
    await fs.symlink(base, path.join(root, 'up'));
    await fs.symlink(path.join(root, 'docs', 'guide'), path.join(root, 'inside-link'));
  });
  afterAll(() => fs.rm(base, { recursive: true, force: true }));

  const refused = async (
    requested: string,
    reason: PathOutsideRootError['reason'],
    kind?: 'file' | 'directory',
  ) => {
    const error = await resolveWithinRoot(root, requested, kind).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PathOutsideRootError);
    expect((error as PathOutsideRootError).reason).toBe(reason);
    expect((error as Error).message).not.toContain(base);
  };

  it('resolves relative paths inside the root to their real path', async () => {
    const real = await fs.realpath(root);
    expect(await resolveWithinRoot(root, 'docs')).toBe(path.join(real, 'docs'));
    expect(await resolveWithinRoot(root, 'docs/guide/../readme.md', 'file')).toBe(
      path.join(real, 'docs', 'readme.md'),
    );
    expect(await resolveWithinRoot(root, '.', 'directory')).toBe(real);
    expect(await resolveWithinRoot(root, 'inside-link', 'directory')).toBe(path.join(real, 'docs', 'guide'));
  });

  it('refuses absolute paths, .. escapes and links that lead out', async () => {
    await refused('/etc/passwd', 'absolute');
    await refused('C:\\Windows', 'absolute');
    await refused('../secret.txt', 'outside_root');
    await refused('docs/../../secret.txt', 'outside_root');
    await refused('docs/escape.txt', 'outside_root');
    await refused('up/secret.txt', 'outside_root');
  });

  it('tells a missing path and the wrong kind apart', async () => {
    await refused('nothing-here', 'not_found');
    await refused('docs/readme.md', 'not_a_directory', 'directory');
    await refused('docs', 'not_a_file', 'file');
  });

  it('says when the root itself is missing (a tenant folder not provisioned), naming no path', async () => {
    const error = await resolveWithinRoot(path.join(base, 'not-provisioned'), '.', 'directory').catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(PathOutsideRootError);
    expect(error.reason).toBe('no_root');
    expect(error.message).not.toContain(base);
  });

  it('isInside compares whole segments', () => {
    expect(isInside('/a/b', '/a/b')).toBe(true);
    expect(isInside('/a/b', '/a/b/c')).toBe(true);
    expect(isInside('/a/b', '/a/bc')).toBe(false);
    expect(isInside('/a/b', '/a')).toBe(false);
  });
});

describe('tenantSourcesRoot', () => {
  it('is one folder directly below the root, named by the tenant id', () => {
    const tenant = '0b9a3c1e-5f0d-4c5e-9d47-2f1e8a6b7c90';
    expect(tenantSourcesRoot('/srv/sources', tenant)).toBe(`/srv/sources/${tenant}`);
    expect(tenantSourcesRoot('/srv/sources', tenant.toUpperCase())).toBe(`/srv/sources/${tenant}`);
  });

  it('refuses anything but a UUID, so no id can name a path', () => {
    for (const id of ['', '..', '../x', 'a/b', '/etc', `${'0'.repeat(8)}-0000-0000-0000-00000000000/`]) {
      expect(() => tenantSourcesRoot('/srv/sources', id), id).toThrow('a tenant id is a UUID');
    }
  });
});
