import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import zlib from 'node:zlib';
import tar from 'tar-stream';

/**
 * Archives built byte by byte for tests, honest or hostile: names with `..` or absolute paths,
 * symbolic links, sizes that lie, bombs. A real archiver refuses to write most of these, which
 * is why the zip writer is here rather than a library.
 */

export interface ZipEntrySpec {
  name: string;
  data?: Buffer | string;
  /** Unix mode stored in the external attributes (`0o120777` makes a symbolic link). */
  mode?: number;
  /** The uncompressed size the headers declare, when it should lie. */
  declaredSize?: number;
  /** Stored as is instead of deflated. */
  stored?: boolean;
}

/** A .zip of `entries` (UTF-8 names, deflated unless `stored`), made on "Unix" so modes count. */
export function buildZip(entries: ZipEntrySpec[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const spec of entries) {
    const name = Buffer.from(spec.name, 'utf8');
    const data = Buffer.isBuffer(spec.data) ? spec.data : Buffer.from(spec.data ?? '', 'utf8');
    const body = spec.stored ? data : zlib.deflateRawSync(data);
    const method = spec.stored ? 0 : 8;
    const crc = zlib.crc32(data);
    const size = spec.declaredSize ?? data.length;
    const mode = spec.mode ?? (spec.name.endsWith('/') ? 0o040755 : 0o100644);

    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, body);

    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE((3 << 8) | 20, 4);
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(0x0800, 8);
    header.writeUInt16LE(method, 10);
    header.writeUInt32LE(crc, 16);
    header.writeUInt32LE(body.length, 20);
    header.writeUInt32LE(size, 24);
    header.writeUInt16LE(name.length, 28);
    header.writeUInt32LE((mode << 16) >>> 0, 38);
    header.writeUInt32LE(offset, 42);
    central.push(header, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

export interface TarEntrySpec {
  name: string;
  data?: string | Buffer;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'fifo';
  linkname?: string;
}

/** A .tar.gz (or a plain .tar) of `entries`, written by tar-stream. */
export async function buildTar(entries: TarEntrySpec[], gzip = true): Promise<Buffer> {
  const pack = tar.pack();
  for (const spec of entries) {
    const type = spec.type ?? 'file';
    if (type === 'file') pack.entry({ name: spec.name }, spec.data ?? '');
    else pack.entry({ name: spec.name, type, linkname: spec.linkname });
  }
  pack.finalize();
  const bytes = await buffer(pack as unknown as Readable);
  return gzip ? zlib.gzipSync(bytes) : bytes;
}

/** A small source project as a map of path -> text, for archives and directories alike. */
export const SAMPLE_PROJECT: Record<string, string> = {
  'src/math.ts':
    '/** Adds two numbers. */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n',
  'src/main.ts':
    "import { add } from './math.ts';\n\nexport function main(): number {\n  return add(1, 2);\n}\n",
  'tools/build.py': 'def build():\n    """Builds it."""\n    return run()\n\n\ndef run():\n    return 1\n',
  'README.md': '# sample\n',
};

/** `SAMPLE_PROJECT` as zip entries. */
export const sampleZipEntries = (files: Record<string, string | Buffer> = SAMPLE_PROJECT): ZipEntrySpec[] =>
  Object.entries(files).map(([name, data]) => ({ name, data }));

/** A multipart/form-data body (as a browser's FormData would send it) and its content type. */
export async function formBody(
  fields: Record<string, string>,
  files: Record<string, { data: Buffer; filename: string }> = {},
): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  for (const [name, file] of Object.entries(files)) form.set(name, new Blob([file.data]), file.filename);
  const encoded = new Response(form);
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type') as string },
  };
}
