import { describe, expect, it } from 'vitest';
import { buildTar, buildZip, SAMPLE_PROJECT, sampleZipEntries } from '../../../tests/helpers/archives.ts';
import {
  type ArchiveEntry,
  ArchiveError,
  archiveFormat,
  readArchive,
  safeEntryPath,
} from './read-archive.ts';

/** Reads every `.ts`/`.py` file of the archive into a map, with the limits given. */
async function readSources(bytes: Buffer, limits = {}) {
  const files: Record<string, string> = {};
  const seen: ArchiveEntry[] = [];
  const counted = await readArchive(bytes, {
    limits,
    select: (entry) => {
      seen.push(entry);
      return /\.(ts|py)$/.test(entry.path);
    },
    onFile: (entry, data) => {
      files[entry.path] = data.toString('utf8');
    },
  });
  return { files, seen, counted };
}

async function refusal(bytes: Buffer | Promise<Buffer>, limits = {}): Promise<ArchiveError> {
  const error = await readSources(await bytes, limits).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  if (!(error instanceof ArchiveError)) throw new Error(`expected an ArchiveError, got ${String(error)}`);
  return error;
}

const sources = Object.fromEntries(
  Object.entries(SAMPLE_PROJECT).filter(([name]) => /\.(ts|py)$/.test(name)),
);

describe('reading archives', () => {
  it('reads the selected files of a zip, a tar.gz and a tar', async () => {
    for (const bytes of [
      buildZip([{ name: 'src/' }, ...sampleZipEntries()]),
      await buildTar([{ name: 'src', type: 'directory' }, ...sampleZipEntries()]),
      await buildTar(sampleZipEntries(), false),
    ]) {
      const { files, seen, counted } = await readSources(bytes);
      expect(files).toEqual(sources);
      expect(seen.map((entry) => entry.path)).toContain('README.md');
      expect(counted.totalBytes).toBe(
        Object.values(SAMPLE_PROJECT).reduce((sum, text) => sum + text.length, 0),
      );
    }
  });

  it('names the format from the first bytes', async () => {
    expect(archiveFormat(buildZip([]))).toBe('zip');
    expect(archiveFormat(await buildTar([]))).toBe('tar.gz');
    expect(archiveFormat(await buildTar([{ name: 'a' }], false))).toBe('tar');
    expect(archiveFormat(Buffer.from('plain text, not an archive'))).toBeUndefined();
    expect((await refusal(Buffer.from('%PDF-1.4'))).reason).toBe('not_an_archive');
  });

  it('refuses paths that climb out or are absolute, in zips and tars', async () => {
    for (const name of [
      '../evil.ts',
      'a/../../evil.ts',
      '/etc/passwd',
      'C:/windows/x.ts',
      'a\\..\\..\\x.ts',
    ]) {
      const zip = await refusal(buildZip([{ name, data: 'x' }]));
      expect(zip.reason, name).toBe('unsafe_entry');
      expect(zip.message).toMatch(/absolute|leads out/);
    }
    expect((await refusal(buildTar([{ name: '../../evil.ts', data: 'x' }]))).reason).toBe('unsafe_entry');
    // tar-stream keeps a leading slash as written.
    expect((await refusal(buildTar([{ name: '/abs.ts', data: 'x' }]))).reason).toBe('unsafe_entry');
  });

  it('refuses links and special files', async () => {
    const zipLink = await refusal(buildZip([{ name: 'link.ts', data: '/etc/passwd', mode: 0o120777 }]));
    expect(zipLink).toMatchObject({
      reason: 'unsafe_entry',
      message: expect.stringMatching(/symbolic link/),
    });
    const tarLink = await refusal(buildTar([{ name: 'link.ts', type: 'symlink', linkname: '/etc/passwd' }]));
    expect(tarLink).toMatchObject({ reason: 'unsafe_entry', message: expect.stringMatching(/is a link/) });
    expect((await refusal(buildTar([{ name: 'hard.ts', type: 'link', linkname: 'x' }]))).reason).toBe(
      'unsafe_entry',
    );
    expect((await refusal(buildTar([{ name: 'pipe', type: 'fifo' }]))).reason).toBe('unsafe_entry');
  });

  it('refuses a zip bomb by its ratio before inflating it', async () => {
    const bomb = buildZip([{ name: 'zeros.txt', data: Buffer.alloc(16 * 1024 * 1024) }]);
    expect(bomb.length).toBeLessThan(100_000);
    const error = await refusal(bomb);
    expect(error).toMatchObject({ reason: 'compression_ratio', message: expect.stringMatching(/zip bomb/) });
  });

  it('refuses a gzip bomb while gunzip runs, without expanding it further', async () => {
    const bomb = await buildTar([{ name: 'zeros.ts', data: Buffer.alloc(16 * 1024 * 1024) }]);
    expect((await refusal(bomb)).reason).toBe('compression_ratio');
    // The total limit applies as well, whatever the ratio.
    expect((await refusal(bomb, { maxRatio: 1_000_000, maxTotalBytes: 4 * 1024 * 1024 })).reason).toBe(
      'too_large',
    );
  });

  it('refuses declared sizes over the total, and entries that inflate past what they declare', async () => {
    const declared = await refusal(
      buildZip([{ name: 'big.ts', data: 'x', declaredSize: 600 * 1024 * 1024 }]),
    );
    expect(declared.reason).toBe('too_large');
    const lying = await refusal(buildZip([{ name: 'lies.ts', data: 'x'.repeat(10_000), declaredSize: 10 }]));
    expect(lying.reason).toBe('corrupt');
  });

  it('refuses too many entries, and corrupt archives', async () => {
    const many = buildZip(Array.from({ length: 30 }, (_, index) => ({ name: `f${index}.ts`, data: 'x' })));
    expect((await refusal(many, { maxEntries: 20 })).reason).toBe('too_many_entries');
    const tarMany = await buildTar(Array.from({ length: 30 }, (_, index) => ({ name: `f${index}.ts` })));
    expect((await refusal(tarMany, { maxEntries: 20 })).reason).toBe('too_many_entries');
    const zip = buildZip(sampleZipEntries());
    expect((await refusal(zip.subarray(0, zip.length - 30))).reason).toBe('corrupt');
    const gz = await buildTar(sampleZipEntries());
    expect((await refusal(gz.subarray(0, gz.length / 2))).reason).toBe('corrupt');
  });
});

describe('safe entry paths', () => {
  it('normalises what is harmless', () => {
    expect(safeEntryPath('./src//a.ts')).toBe('src/a.ts');
    expect(safeEntryPath('src\\win\\a.ts')).toBe('src/win/a.ts');
    expect(safeEntryPath('dir/')).toBe('dir');
  });
});
