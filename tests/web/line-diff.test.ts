import { describe, expect, it } from 'vitest';
import { lineDiff } from '../../web/src/lib/line-diff.ts';

/** The console's side-by-side line diff (the policy page compares two versions with it). */
describe('lineDiff', () => {
  it('keeps equal text as same rows', () => {
    expect(lineDiff('a\nb', 'a\nb')).toEqual([
      { kind: 'same', leftNumber: 1, left: 'a', rightNumber: 1, right: 'a' },
      { kind: 'same', leftNumber: 2, left: 'b', rightNumber: 2, right: 'b' },
    ]);
  });

  it('pairs a replaced line beside its replacement and numbers each side', () => {
    expect(lineDiff('a\nold\nc', 'a\nnew\nc')).toEqual([
      { kind: 'same', leftNumber: 1, left: 'a', rightNumber: 1, right: 'a' },
      { kind: 'changed', leftNumber: 2, left: 'old', rightNumber: 2, right: 'new' },
      { kind: 'same', leftNumber: 3, left: 'c', rightNumber: 3, right: 'c' },
    ]);
  });

  it('shows lines only on the side that has them', () => {
    expect(lineDiff('a\nc', 'a\nb\nc')).toEqual([
      { kind: 'same', leftNumber: 1, left: 'a', rightNumber: 1, right: 'a' },
      { kind: 'added', rightNumber: 2, right: 'b' },
      { kind: 'same', leftNumber: 2, left: 'c', rightNumber: 3, right: 'c' },
    ]);
    expect(lineDiff('a\nb\nc', 'c')).toEqual([
      { kind: 'removed', leftNumber: 1, left: 'a' },
      { kind: 'removed', leftNumber: 2, left: 'b' },
      { kind: 'same', leftNumber: 3, left: 'c', rightNumber: 1, right: 'c' },
    ]);
  });

  it('keeps the longest common part: both texts can be rebuilt from the rows', () => {
    const before = ['{', '  "a": 1,', '  "b": 2,', '  "c": 3', '}'].join('\n');
    const after = ['{', '  "b": 2,', '  "c": 4,', '  "d": 5', '}'].join('\n');
    const rows = lineDiff(before, after);
    expect(rows.filter((row) => row.kind === 'same')).toHaveLength(3);
    const left = rows.flatMap((row) => (row.left === undefined ? [] : [row.left])).join('\n');
    const right = rows.flatMap((row) => (row.right === undefined ? [] : [row.right])).join('\n');
    expect(left).toBe(before);
    expect(right).toBe(after);
  });
});
