import { type Block, type ContentBlock, ExtractionError } from './document.ts';

/**
 * JSON as readable text, YAML-like: `key: value` lines, nested objects indented under their key,
 * array items as `- ` lines, arrays of short scalars inline (`tags: a, b, c`).
 *
 * - A top-level object gives one block of its scalar members (`name: Ada`, in order), then, for
 *   each member holding an object or an array, a level-1 heading named after the key followed by
 *   its content: one block per array element, or one block for an object.
 * - A top-level array gives one block per element, as CSV rows do.
 * - JSON Lines (`.jsonl`, `.ndjson`): one block per line.
 *
 * Nesting deeper than `MAX_RENDER_DEPTH` is shown as compact JSON; a document nested deeper than
 * `MAX_NESTING` is refused as `corrupt` (no real document nests so deep, and rendering it would
 * only exhaust the stack).
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const MAX_NESTING = 256;
const MAX_RENDER_DEPTH = 12;
/** Arrays of scalars up to this many characters stay on one line. */
const INLINE_ARRAY_CHARS = 120;

export interface JsonDocument {
  blocks: Block[];
  metadata: { structure: 'object' | 'array' | 'scalar' | 'lines'; items: number };
}

const isScalar = (value: Json): value is null | boolean | number | string =>
  value === null || typeof value !== 'object';

function scalarText(value: null | boolean | number | string): string {
  return typeof value === 'string' ? value : String(value);
}

/** The deepest bracket nesting of a JSON text, strings skipped; linear and allocation-free. */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c) index += 1;
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x7b || code === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (code === 0x7d || code === 0x5d) depth -= 1;
  }
  return deepest;
}

function parseJson(text: string, where: string): Json {
  if (nestingDepth(text) > MAX_NESTING) {
    throw new ExtractionError('corrupt', `${where} nests deeper than ${MAX_NESTING} levels`);
  }
  try {
    return JSON.parse(text) as Json;
  } catch (error) {
    const reason = error instanceof Error ? error.message.slice(0, 200) : 'unreadable';
    throw new ExtractionError('corrupt', `${where} is not valid JSON: ${reason}`, { cause: error });
  }
}

/** An array of a few short scalars as one line (`a, b, c`), else undefined. */
function inlineArray(value: Json[]): string | undefined {
  let text = '';
  for (const item of value) {
    if (!isScalar(item)) return undefined;
    text += (text === '' ? '' : ', ') + scalarText(item);
    if (text.length > INLINE_ARRAY_CHARS) return undefined;
  }
  return text.includes('\n') ? undefined : text;
}

const bullet = (lines: string[]): string[] => [
  `- ${lines[0] ?? ''}`,
  ...lines.slice(1).map((line) => `  ${line}`),
];

/** A JSON value as indented lines. */
function renderLines(value: Json, depth: number): string[] {
  if (isScalar(value)) return scalarText(value).split('\n');
  if (depth >= MAX_RENDER_DEPTH) return [JSON.stringify(value)];
  if (Array.isArray(value)) {
    if (value.length === 0) return ['[]'];
    const inline = inlineArray(value);
    if (inline !== undefined) return [inline];
    return value.flatMap((item) => bullet(renderLines(item, depth + 1)));
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return ['{}'];
  return entries.flatMap(([key, member]) => {
    const lines = renderLines(member, depth + 1);
    const inline = lines.length === 1 && (isScalar(member) || Array.isArray(member));
    return inline ? [`${key}: ${lines[0]}`] : [`${key}:`, ...lines.map((line) => `  ${line}`)];
  });
}

function valueBlock(value: Json): ContentBlock | undefined {
  const text = renderLines(value, 0).join('\n').trim();
  if (text === '') return undefined;
  return { kind: typeof value === 'string' ? 'paragraph' : 'list', text };
}

/** A member short enough for one `key: value` line. */
function isInline(member: Json): boolean {
  if (isScalar(member)) return !scalarText(member).includes('\n');
  if (Array.isArray(member)) return member.length === 0 || inlineArray(member) !== undefined;
  return Object.keys(member).length === 0;
}

function objectBlocks(object: { [key: string]: Json }): Block[] {
  const entries = Object.entries(object);
  const inline = entries.filter(([, member]) => isInline(member));
  const blocks: Block[] = [];
  const head = inline.length > 0 ? valueBlock(Object.fromEntries(inline)) : undefined;
  if (head) blocks.push(head);
  const inlineKeys = new Set(inline.map(([key]) => key));
  for (const [key, member] of entries) {
    if (inlineKeys.has(key)) continue;
    blocks.push({ kind: 'heading', level: 1, text: key });
    const parts = Array.isArray(member) ? member : [member];
    for (const part of parts) {
      const block = valueBlock(part);
      if (block) blocks.push(block);
    }
  }
  return blocks;
}

/** The blocks of a JSON document, or of JSON Lines when `lines` is set. */
export function extractJson(text: string, displayName: string, lines: boolean): JsonDocument {
  if (lines) {
    const records = text
      .split('\n')
      .map((line, index) => ({ line, number: index + 1 }))
      .filter(({ line }) => line.trim() !== '')
      .map(({ line, number }) => parseJson(line, `line ${number} of ${displayName}`));
    const blocks = records.map(valueBlock).filter((block) => block !== undefined);
    return { blocks, metadata: { structure: 'lines', items: records.length } };
  }
  const value = parseJson(text, displayName);
  if (Array.isArray(value)) {
    const blocks = value.map(valueBlock).filter((block) => block !== undefined);
    return { blocks, metadata: { structure: 'array', items: value.length } };
  }
  if (isScalar(value)) {
    const block = valueBlock(value);
    return { blocks: block ? [block] : [], metadata: { structure: 'scalar', items: 1 } };
  }
  return { blocks: objectBlocks(value), metadata: { structure: 'object', items: Object.keys(value).length } };
}
