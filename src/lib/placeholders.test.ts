import { describe, expect, it } from 'vitest';
import { fillPlaceholders, PLACEHOLDER_NAME_PATTERN, placeholdersOf } from './placeholders.ts';

const upper = (name: string) => name.toUpperCase();

describe('placeholders', () => {
  it('finds the names a text uses, each once, in order of first use', () => {
    expect(placeholdersOf('{{b}} and {{a}} then {{b}} again')).toEqual(['b', 'a']);
    expect(placeholdersOf('no placeholders here')).toEqual([]);
  });

  it('allows letters, digits, underscore, hyphen and dots in a name', () => {
    expect(placeholdersOf('{{base_url}} {{api-key}} {{variables.user.name}} {{2fa}} {{X_1}}')).toEqual([
      'base_url',
      'api-key',
      'variables.user.name',
      '2fa',
      'X_1',
    ]);
    const name = new RegExp(PLACEHOLDER_NAME_PATTERN);
    for (const ok of ['a', 'a.b', 'A-b_9', '9']) expect(name.test(ok), ok).toBe(true);
    for (const bad of ['', 'a b', 'a/b', 'a}', 'ä']) expect(name.test(bad), bad).toBe(false);
  });

  it('allows white space inside the braces, around the name only', () => {
    expect(placeholdersOf('{{ topic }} {{\ttopic\n}} {{topic}}')).toEqual(['topic']);
    expect(fillPlaceholders('[{{  a  }}]', upper)).toBe('[A]');
  });

  it('leaves what is not a placeholder as it is', () => {
    const text = '{{}} {{ }} {{a b}} {{a/b}} {a} { {a} } {{ä}}';
    expect(placeholdersOf(text)).toEqual([]);
    expect(fillPlaceholders(text, upper)).toBe(text);
  });

  it('has no escape: braces around a placeholder stay, the placeholder inside is filled', () => {
    expect(fillPlaceholders('{{{a}}}', upper)).toBe('{A}');
    expect(fillPlaceholders('\\{{a}}', upper)).toBe('\\A');
  });

  it('fills in one pass, so a value holding a placeholder is not filled again', () => {
    const values: Record<string, string> = { a: '{{b}}', b: 'B' };
    expect(fillPlaceholders('{{a}}/{{b}}', (name) => values[name] as string)).toBe('{{b}}/B');
  });

  it('tells the filler where each placeholder starts, and lets it refuse an unknown name', () => {
    const seen: [string, number][] = [];
    fillPlaceholders('{{base}}/x/{{id}}', (name, offset) => {
      seen.push([name, offset]);
      return '';
    });
    expect(seen).toEqual([
      ['base', 0],
      ['id', 11],
    ]);
    const known: Record<string, string> = { a: '1' };
    expect(() =>
      fillPlaceholders('{{a}} {{missing}}', (name) => {
        const value = known[name];
        if (value === undefined) throw new Error(`no ${name}`);
        return value;
      }),
    ).toThrow('no missing');
  });

  it('is not confused by a previous call (the global pattern keeps no state between calls)', () => {
    expect(placeholdersOf('{{a}}')).toEqual(['a']);
    expect(placeholdersOf('{{a}}')).toEqual(['a']);
    expect(fillPlaceholders('{{a}}', upper)).toBe('A');
    expect(fillPlaceholders('{{a}}', upper)).toBe('A');
  });
});
