import { type DocumentFormat, ExtractionError } from './document.ts';

/**
 * Which format a file really is, from three witnesses that may disagree:
 *
 *   bytes      magic numbers (PDF, archives, images, executables), NUL bytes, UTF-8 validity
 *   file name  its extension (`.md`, `.ts`) or a well-known name (`Dockerfile`)
 *   media type the declared `Content-Type`, parameters ignored
 *
 * The bytes decide what a file is; the name and the media type only choose between readings of
 * text (Markdown, CSV, code, ...). A name or media type that claims something the bytes are not
 * (a ZIP named `notes.md`, a text file declared `application/pdf`) is a `type_mismatch`; bytes
 * the store cannot read and nothing claimed otherwise are `unsupported_type`.
 */

/** A file recognised as one of the supported formats, decoded when it is text. */
export type DetectedFile =
  | { format: 'pdf'; bytes: Uint8Array }
  | {
      format: Exclude<DocumentFormat, 'pdf'>;
      text: string;
      /** How the bytes were decoded; `utf-8` unless a BOM or invalid UTF-8 said otherwise. */
      encoding: TextEncoding;
      /** The lower-case extension without its dot, `''` when the name has none. */
      extension: string;
      /** The programming language of a `code` file. */
      language?: string;
    };

export type TextEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252';

/** What a file name or a media type says a file is. */
type Claim =
  | { kind: 'format'; format: DocumentFormat; language?: string }
  | { kind: 'text' }
  | { kind: 'binary' };

const FORMAT_NAMES: Record<DocumentFormat, string> = {
  pdf: 'PDF',
  markdown: 'Markdown',
  html: 'HTML',
  text: 'plain text',
  json: 'JSON',
  csv: 'CSV',
  code: 'source code',
};

const SUPPORTED = 'Supported formats: PDF, Markdown, HTML, plain text, JSON, CSV and source code.';

const CODE_LANGUAGES = new Map<string, string>(
  Object.entries({
    ts: 'typescript',
    mts: 'typescript',
    cts: 'typescript',
    tsx: 'tsx',
    js: 'javascript',
    mjs: 'javascript',
    cjs: 'javascript',
    jsx: 'jsx',
    py: 'python',
    pyi: 'python',
    go: 'go',
    java: 'java',
    rs: 'rust',
    rb: 'ruby',
    c: 'c',
    h: 'c',
    cc: 'cpp',
    cpp: 'cpp',
    cxx: 'cpp',
    hpp: 'cpp',
    hh: 'cpp',
    cs: 'csharp',
    php: 'php',
    kt: 'kotlin',
    kts: 'kotlin',
    swift: 'swift',
    scala: 'scala',
    groovy: 'groovy',
    gradle: 'groovy',
    dart: 'dart',
    lua: 'lua',
    pl: 'perl',
    pm: 'perl',
    r: 'r',
    ex: 'elixir',
    exs: 'elixir',
    erl: 'erlang',
    hs: 'haskell',
    clj: 'clojure',
    ml: 'ocaml',
    fs: 'fsharp',
    zig: 'zig',
    sh: 'bash',
    bash: 'bash',
    zsh: 'bash',
    ps1: 'powershell',
    sql: 'sql',
    graphql: 'graphql',
    gql: 'graphql',
    proto: 'protobuf',
    css: 'css',
    scss: 'scss',
    less: 'less',
    vue: 'vue',
    svelte: 'svelte',
    yaml: 'yaml',
    yml: 'yaml',
    toml: 'toml',
    ini: 'ini',
    xml: 'xml',
    tf: 'hcl',
  }),
);

/** Files known by their whole name rather than an extension. */
const CODE_FILE_NAMES = new Map<string, string>(
  Object.entries({
    dockerfile: 'dockerfile',
    containerfile: 'dockerfile',
    makefile: 'makefile',
    gnumakefile: 'makefile',
  }),
);

const EXTENSION_FORMATS = new Map<string, DocumentFormat>(
  Object.entries({
    pdf: 'pdf',
    md: 'markdown',
    markdown: 'markdown',
    mdown: 'markdown',
    mkd: 'markdown',
    mkdn: 'markdown',
    mdx: 'markdown',
    html: 'html',
    htm: 'html',
    xhtml: 'html',
    txt: 'text',
    text: 'text',
    log: 'text',
    rst: 'text',
    adoc: 'text',
    asciidoc: 'text',
    org: 'text',
    json: 'json',
    jsonl: 'json',
    ndjson: 'json',
    geojson: 'json',
    csv: 'csv',
    tsv: 'csv',
  }),
);

/** Extensions of formats the store does not read: naming a text file so is a lie. */
const BINARY_EXTENSIONS = new Set(
  (
    'png jpg jpeg gif webp bmp tif tiff ico heic avif svg mp3 wav ogg flac m4a mp4 mov avi mkv webm ' +
    'zip gz tgz tar bz2 xz zst 7z rar jar war docx xlsx pptx doc xls ppt odt ods odp epub ' +
    'exe dll so dylib bin o a class wasm woff woff2 ttf otf eot sqlite db parquet avro'
  ).split(' '),
);

const MEDIA_FORMATS = new Map<string, DocumentFormat>(
  Object.entries({
    'application/pdf': 'pdf',
    'application/x-pdf': 'pdf',
    'text/markdown': 'markdown',
    'text/x-markdown': 'markdown',
    'text/html': 'html',
    'application/xhtml+xml': 'html',
    'application/json': 'json',
    'text/json': 'json',
    'application/x-ndjson': 'json',
    'application/jsonl': 'json',
    'text/csv': 'csv',
    'application/csv': 'csv',
    'text/tab-separated-values': 'csv',
    'text/javascript': 'code',
    'application/javascript': 'code',
    'application/typescript': 'code',
    'text/x-python': 'code',
    'application/x-sh': 'code',
    'application/sql': 'code',
    'application/yaml': 'code',
    'text/yaml': 'code',
    'application/xml': 'code',
    'text/xml': 'code',
  }),
);

const BINARY_MEDIA_PREFIXES = ['image/', 'audio/', 'video/', 'font/'];
const BINARY_MEDIA_TYPES = new Set([
  'application/zip',
  'application/gzip',
  'application/x-gzip',
  'application/x-tar',
  'application/x-7z-compressed',
  'application/vnd.rar',
  'application/x-rar-compressed',
  'application/msword',
  'application/wasm',
  'application/x-executable',
  'application/java-archive',
  'application/epub+zip',
]);

/** The lower-case extension of a file name (`Guide.MD` -> `md`), `''` without one. */
export function extensionOf(filename: string): string {
  const base = baseName(filename);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

/** The last segment of a path, whichever separator it uses. */
export function baseName(filename: string): string {
  return filename.split(/[\\/]/).at(-1) ?? filename;
}

function claimOfName(filename: string): Claim | undefined {
  const extension = extensionOf(filename);
  const byName = CODE_FILE_NAMES.get(baseName(filename).toLowerCase());
  if (byName) return { kind: 'format', format: 'code', language: byName };
  const format = EXTENSION_FORMATS.get(extension);
  if (format) return { kind: 'format', format };
  const language = CODE_LANGUAGES.get(extension);
  if (language) return { kind: 'format', format: 'code', language };
  if (BINARY_EXTENSIONS.has(extension)) return { kind: 'binary' };
  return undefined;
}

function claimOfMediaType(mediaType: string | undefined): Claim | undefined {
  const essence = mediaType?.split(';')[0]?.trim().toLowerCase() ?? '';
  if (essence === '' || essence === 'application/octet-stream' || essence === 'binary/octet-stream') {
    return undefined;
  }
  const format = MEDIA_FORMATS.get(essence) ?? (essence.endsWith('+json') ? 'json' : undefined);
  if (format) return { kind: 'format', format };
  if (essence === 'text/plain') return { kind: 'text' };
  if (BINARY_MEDIA_TYPES.has(essence) || BINARY_MEDIA_PREFIXES.some((prefix) => essence.startsWith(prefix))) {
    return { kind: 'binary' };
  }
  if (essence.startsWith('application/vnd.')) return { kind: 'binary' };
  return essence.startsWith('text/') ? { kind: 'text' } : undefined;
}

/** Magic numbers of binary formats, each with the name a message uses. */
const SIGNATURES: { name: string; offset?: number; bytes: number[] }[] = [
  { name: 'a ZIP archive (or an Office document)', bytes: [0x50, 0x4b, 0x03, 0x04] },
  { name: 'a ZIP archive', bytes: [0x50, 0x4b, 0x05, 0x06] },
  { name: 'a PNG image', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { name: 'a JPEG image', bytes: [0xff, 0xd8, 0xff] },
  { name: 'a GIF image', bytes: [0x47, 0x49, 0x46, 0x38, 0x37, 0x61] },
  { name: 'a GIF image', bytes: [0x47, 0x49, 0x46, 0x38, 0x39, 0x61] },
  { name: 'a WebP image', offset: 8, bytes: [0x57, 0x45, 0x42, 0x50] },
  { name: 'a TIFF image', bytes: [0x49, 0x49, 0x2a, 0x00] },
  { name: 'a TIFF image', bytes: [0x4d, 0x4d, 0x00, 0x2a] },
  { name: 'a media file (MP4, MOV or HEIC)', offset: 4, bytes: [0x66, 0x74, 0x79, 0x70] },
  { name: 'a gzip archive', bytes: [0x1f, 0x8b] },
  { name: 'a 7-Zip archive', bytes: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c] },
  { name: 'a RAR archive', bytes: [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07] },
  { name: 'an xz archive', bytes: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00] },
  { name: 'a Zstandard archive', bytes: [0x28, 0xb5, 0x2f, 0xfd] },
  { name: 'an ELF executable', bytes: [0x7f, 0x45, 0x4c, 0x46] },
  { name: 'a legacy Office document', bytes: [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1] },
  { name: 'a WebAssembly module', bytes: [0x00, 0x61, 0x73, 0x6d] },
  { name: 'a SQLite database', bytes: [...'SQLite format 3'].map((c) => c.charCodeAt(0)).concat(0) },
];

const PDF_MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d]; // %PDF-
/** PDF readers accept the header anywhere in the first kilobyte (ISO 32000 implementation note). */
const PDF_HEADER_WINDOW = 1024;

function startsWithAt(bytes: Uint8Array, signature: number[], offset = 0): boolean {
  if (bytes.length < offset + signature.length) return false;
  return signature.every((byte, index) => bytes[offset + index] === byte);
}

function isPdf(bytes: Uint8Array): boolean {
  const window = bytes.subarray(0, PDF_HEADER_WINDOW + PDF_MAGIC.length);
  for (let index = window.indexOf(0x25); index !== -1; index = window.indexOf(0x25, index + 1)) {
    if (startsWithAt(window, PDF_MAGIC, index)) return true;
  }
  return false;
}

function binarySignature(bytes: Uint8Array): string | undefined {
  return SIGNATURES.find((signature) => startsWithAt(bytes, signature.bytes, signature.offset))?.name;
}

/** C0 control characters that do not occur in text (all but tab, line feed, form feed, CR, ESC). */
const isStrayControl = (code: number): boolean =>
  code < 0x20 &&
  code !== 0x09 &&
  code !== 0x0a &&
  code !== 0x0b &&
  code !== 0x0c &&
  code !== 0x0d &&
  code !== 0x1b;

/** Share of stray control characters above which decoded "text" is really binary data. */
const MAX_STRAY_CONTROL_SHARE = 0.01;
const TEXT_SAMPLE_CHARS = 64 * 1024;

function looksLikeText(text: string): boolean {
  const sample = text.length > TEXT_SAMPLE_CHARS ? text.slice(0, TEXT_SAMPLE_CHARS) : text;
  if (sample.includes('\0')) return false;
  let stray = 0;
  for (let index = 0; index < sample.length; index += 1) {
    if (isStrayControl(sample.charCodeAt(index))) stray += 1;
  }
  return stray <= sample.length * MAX_STRAY_CONTROL_SHARE;
}

/**
 * The bytes as text, or undefined when they are not text. A BOM chooses UTF-8 or UTF-16; without
 * one, valid UTF-8 is UTF-8, and bytes that are not UTF-8 but carry no control characters are
 * read as Windows-1252 (the usual encoding of spreadsheet exports and old text files).
 */
function decodeText(bytes: Uint8Array): { text: string; encoding: TextEncoding } | undefined {
  const bom = (encoding: TextEncoding, skip: number) => ({
    text: new TextDecoder(encoding).decode(bytes.subarray(skip)),
    encoding,
  });
  let decoded: { text: string; encoding: TextEncoding };
  if (startsWithAt(bytes, [0xef, 0xbb, 0xbf])) decoded = bom('utf-8', 3);
  else if (startsWithAt(bytes, [0xff, 0xfe])) decoded = bom('utf-16le', 2);
  else if (startsWithAt(bytes, [0xfe, 0xff])) decoded = bom('utf-16be', 2);
  else if (bytes.includes(0)) return undefined;
  else {
    try {
      decoded = { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), encoding: 'utf-8' };
    } catch {
      if (bytes.some(isStrayControl)) return undefined;
      decoded = { text: new TextDecoder('windows-1252').decode(bytes), encoding: 'windows-1252' };
    }
  }
  return looksLikeText(decoded.text) ? decoded : undefined;
}

/** A text format guessed from the content, when neither the name nor the media type said one. */
function sniffTextFormat(text: string): Exclude<DocumentFormat, 'pdf'> {
  const head = text.slice(0, 512).trimStart().toLowerCase();
  if (head.startsWith('<!doctype html') || head.startsWith('<html')) return 'html';
  if (head.startsWith('{') || head.startsWith('[')) {
    try {
      JSON.parse(text);
      return 'json';
    } catch {
      return 'text';
    }
  }
  return 'text';
}

const describeClaim = (claim: Claim): string =>
  claim.kind === 'format' ? FORMAT_NAMES[claim.format] : claim.kind === 'text' ? 'text' : 'a binary format';

/** Who claimed what, for messages: `"notes.md" (Markdown)` or `declared as application/pdf`. */
function claimant(filename: string, mediaType: string | undefined, nameClaim: Claim | undefined): string {
  return nameClaim
    ? `"${baseName(filename)}" is named as ${describeClaim(nameClaim)}`
    : `"${baseName(filename)}" is declared as ${mediaType}`;
}

/**
 * Recognises a file as one of the supported formats, or throws the `ExtractionError` that says
 * why not: `empty`, `unsupported_type` or `type_mismatch`.
 */
export function detectFormat(input: {
  filename: string;
  mediaType?: string;
  bytes: Uint8Array;
}): DetectedFile {
  const { filename, mediaType, bytes } = input;
  const shown = `"${baseName(filename)}"`;
  if (bytes.length === 0) throw new ExtractionError('empty', `${shown} is empty`);
  const nameClaim = claimOfName(filename);
  const mediaClaim = claimOfMediaType(mediaType);
  const claims = [nameClaim, mediaClaim].filter((claim): claim is Claim => claim !== undefined);

  if (isPdf(bytes)) {
    const contradiction = claims.find((claim) => !(claim.kind === 'format' && claim.format === 'pdf'));
    if (contradiction) {
      const who = contradiction === nameClaim ? nameClaim : undefined;
      throw new ExtractionError(
        'type_mismatch',
        `${claimant(filename, mediaType, who)} but is a PDF document`,
      );
    }
    return { format: 'pdf', bytes };
  }

  const binary = binarySignature(bytes);
  const decoded = binary ? undefined : decodeText(bytes);
  if (!decoded) {
    const what = binary ?? 'binary data, not text';
    const readable = claims.find((claim) => claim.kind !== 'binary');
    if (readable) {
      const who = readable === nameClaim ? nameClaim : undefined;
      throw new ExtractionError('type_mismatch', `${claimant(filename, mediaType, who)} but is ${what}`);
    }
    throw new ExtractionError(
      'unsupported_type',
      `${shown} is ${what}, which cannot be indexed. ${SUPPORTED}`,
    );
  }

  const lie = claims.find(
    (claim) => claim.kind === 'binary' || (claim.kind === 'format' && claim.format === 'pdf'),
  );
  if (lie) {
    const who = lie === nameClaim ? nameClaim : undefined;
    const expected = lie.kind === 'format' ? ' (a PDF starts with "%PDF-")' : '';
    throw new ExtractionError(
      'type_mismatch',
      `${claimant(filename, mediaType, who)} but is text${expected}`,
    );
  }
  if (decoded.text.trim() === '') throw new ExtractionError('empty', `${shown} contains only whitespace`);

  const chosen = [nameClaim, mediaClaim].find((claim) => claim?.kind === 'format');
  const format = chosen?.kind === 'format' ? chosen.format : sniffTextFormat(decoded.text);
  const extension = extensionOf(filename);
  const language = chosen?.kind === 'format' && chosen.format === 'code' ? chosen.language : undefined;
  return {
    format: format as Exclude<DocumentFormat, 'pdf'>,
    text: decoded.text,
    encoding: decoded.encoding,
    extension,
    ...(language ? { language } : {}),
  };
}
