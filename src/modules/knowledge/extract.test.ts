import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createDocumentExtractor,
  type DocumentExtractor,
  ExtractionError,
  extractDocument,
} from './extract.ts';

/**
 * The isolation around the readers (read-document.test.ts tests the readers themselves): files
 * are read in worker threads, limits turn runaway files into `corrupt`, failures arrive as
 * `ExtractionError`s, and a thread lost to a limit is replaced.
 */

const fixtures = path.resolve(import.meta.dirname, '../../../tests/fixtures/knowledge');
const fixture = (name: string) => new Uint8Array(readFileSync(path.join(fixtures, name)));
const utf8 = (text: string) => new TextEncoder().encode(text);

/** A Markdown text of about `mib` MiB that takes a while to parse. */
const bigMarkdown = (mib: number) => {
  const sections: string[] = [];
  let length = 0;
  for (let n = 0; length < mib * 1024 * 1024; n += 1) {
    const section = `## Section ${n}\n\nProse about topic ${n}. Another sentence.\n\n- a ${n}\n- b ${n}\n\n`;
    sections.push(section);
    length += section.length;
  }
  return utf8(sections.join(''));
};

const extractors: DocumentExtractor[] = [];
const extractor = (options: Parameters<typeof createDocumentExtractor>[0]) => {
  const created = createDocumentExtractor(options);
  extractors.push(created);
  return created;
};
afterAll(() => Promise.all(extractors.map((created) => created.close())));

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('the promise resolved');
}

describe('extractDocument', () => {
  it('reads files in a worker thread and returns the same document as reading in place', async () => {
    const doc = await extractDocument({ filename: 'guide.pdf', bytes: fixture('guide.pdf') });
    expect(doc).toMatchObject({ format: 'pdf', title: 'Composting at Home', metadata: { pages: 2 } });
    const md = await extractDocument({
      filename: 'guide.md',
      mediaType: 'text/markdown',
      bytes: fixture('guide.md'),
    });
    expect(md.blocks.filter((block) => block.kind === 'heading').map((block) => block.text)).toEqual([
      'Field Guide',
      'Install',
      'Linux',
      'macOS',
      'Configuration',
    ]);
  });

  it('rejects with an ExtractionError that carries the reason and the message', async () => {
    const zip = new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00]);
    const error = await rejection(extractDocument({ filename: 'notes.md', bytes: zip }));
    expect(error).toBeInstanceOf(ExtractionError);
    expect(error).toMatchObject({ reason: 'type_mismatch', message: expect.stringContaining('"notes.md"') });
    const scanned = await rejection(extractDocument({ filename: 'scan.pdf', bytes: fixture('scanned.pdf') }));
    expect(scanned).toMatchObject({ name: 'ExtractionError', reason: 'no_text' });
    const empty = await rejection(extractDocument({ filename: 'e.txt', bytes: new Uint8Array() }));
    expect(empty).toMatchObject({ reason: 'empty', message: '"e.txt" is empty' });
  });

  it('turns a file that needs more memory than allowed into corrupt, and carries on', async () => {
    const tight = extractor({ memoryMb: 16, size: 1 });
    const error = await rejection(tight.extract({ filename: 'big.md', bytes: bigMarkdown(4) }));
    expect(error).toMatchObject({
      reason: 'corrupt',
      message: '"big.md" needs more than 16 MB of memory to read',
    });
    const next = await tight.extract({ filename: 'small.md', bytes: utf8('# Small\n\nstill read') });
    expect(next.title).toBe('Small');
  });

  it('turns a file that takes longer than allowed into corrupt', async () => {
    const hasty = extractor({ timeoutMs: 100, size: 1 });
    const error = await rejection(hasty.extract({ filename: 'big.md', bytes: bigMarkdown(4) }));
    expect(error).toMatchObject({ reason: 'corrupt', message: '"big.md" took longer than 0.1 s to read' });
  });

  it('stops reading when the caller aborts, with the abort reason', async () => {
    const own = extractor({ size: 1 });
    const controller = new AbortController();
    const reading = own.extract({ filename: 'big.md', bytes: bigMarkdown(4), signal: controller.signal });
    const waiting = own.extract({
      filename: 'w.md',
      bytes: utf8('# W\n\nqueued'),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error('upload cancelled')), 100);
    expect(await rejection(reading)).toMatchObject({ message: 'upload cancelled' });
    expect(await rejection(waiting)).toMatchObject({ message: 'upload cancelled' });
    expect(
      await rejection(own.extract({ filename: 'x.md', bytes: utf8('x'), signal: controller.signal })),
    ).toMatchObject({ message: 'upload cancelled' });
    expect((await own.extract({ filename: 'after.md', bytes: utf8('# After\n\ntext') })).title).toBe('After');
  });

  it('reads files in turn beyond its size, every one answered', async () => {
    const single = extractor({ size: 1 });
    const names = ['a', 'b', 'c', 'd'];
    const docs = await Promise.all(
      names.map((name) =>
        single.extract({ filename: `${name}.md`, bytes: utf8(`# ${name}\n\ntext of ${name}`) }),
      ),
    );
    expect(docs.map((doc) => doc.title)).toEqual(names);
  });

  it('refuses work once closed', async () => {
    const closing = createDocumentExtractor({ size: 1 });
    await closing.extract({ filename: 'a.md', bytes: utf8('# A\n\ntext') });
    await closing.close();
    const error = await rejection(closing.extract({ filename: 'b.md', bytes: utf8('# B\n\ntext') }));
    expect(error).toMatchObject({ message: 'the document extraction pool is closed' });
  });
});
