/**
 * Parser for the FIMI transaction format: one transaction per line, non-negative integer items separated
 * by whitespace. Lines may end with a space and the last line may lack a newline.
 */

import type { TransactionTable } from './fp-growth.ts';

/**
 * Parses FIMI bytes straight into a TransactionTable. It scans bytes instead of splitting strings and
 * writes into growing typed arrays, which keeps a 4 MB file at a few milliseconds and creates no
 * per-line garbage. Blank lines become empty transactions: they still count towards fractional supports.
 */
export function parseFimi(bytes: Uint8Array): TransactionTable {
  // An item takes at least two bytes (a digit and a separator), except possibly the last one.
  const items = new Int32Array((bytes.length >> 1) + 1);
  let offsets = new Int32Array(Math.max(1024, bytes.length >> 4));
  let count = 0;
  let rows = 0;
  const n = bytes.length;
  // Plain loops with no closure (variables a closure writes live in a heap context, which would slow
  // every access): an inner loop reads each number's digits, the outer one the separators.
  let i = 0;
  while (i < n) {
    let b = bytes[i] as number;
    if (b >= 48 && b <= 57) {
      let value = b - 48;
      i++;
      while (i < n) {
        b = bytes[i] as number;
        if (b < 48 || b > 57) break;
        value = value * 10 + (b - 48);
        i++;
      }
      if (value > 0x7fffffff) throw new RangeError(`FIMI line ${rows + 1}: item id too large`);
      items[count++] = value;
      continue;
    }
    if (b === 10) {
      rows++;
      if (rows >= offsets.length) {
        const next = new Int32Array(offsets.length * 2);
        next.set(offsets);
        offsets = next;
      }
      offsets[rows] = count;
    } else if (b !== 32 && b !== 9 && b !== 13) {
      throw new SyntaxError(
        `FIMI line ${rows + 1}: unexpected character ${JSON.stringify(String.fromCharCode(b))}`,
      );
    }
    i++;
  }
  // An unterminated last line with items is a transaction too.
  if (count > (offsets[rows] as number)) {
    rows++;
    if (rows >= offsets.length) {
      const next = new Int32Array(offsets.length + 1);
      next.set(offsets);
      offsets = next;
    }
    offsets[rows] = count;
  }
  return { items: items.slice(0, count), offsets: offsets.slice(0, rows + 1) };
}

/** Expands a TransactionTable into one array per transaction, the shape other libraries expect. */
export function toArrays(table: TransactionTable): number[][] {
  const out: number[][] = [];
  const { items, offsets } = table;
  for (let t = 0; t + 1 < offsets.length; t++) {
    out.push(Array.from(items.subarray(offsets[t] as number, offsets[t + 1] as number)));
  }
  return out;
}
