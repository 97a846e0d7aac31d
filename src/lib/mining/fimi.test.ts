import { describe, expect, it } from 'vitest';
import { parseFimi, toArrays } from './fimi.ts';

const parse = (text: string) => toArrays(parseFimi(new TextEncoder().encode(text)));

describe('parseFimi', () => {
  it('splits on any whitespace, with trailing spaces and no final newline', () => {
    expect(parse('1 2 3 \n4\t5\r\n\n6')).toEqual([[1, 2, 3], [4, 5], [], [6]]);
    expect(parse('7 8\n')).toEqual([[7, 8]]);
    expect(parse('')).toEqual([]);
  });

  it('rejects anything but digits and whitespace, naming the line', () => {
    expect(() => parse('1 2\n3 x\n')).toThrow(/line 2/);
    expect(() => parse('-1')).toThrow(SyntaxError);
    expect(() => parse('99999999999')).toThrow(RangeError);
  });
});
