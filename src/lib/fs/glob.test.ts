import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileGlob, GlobError, MAX_EXPANSIONS } from './glob.ts';

const PATHS = [
  'a.md',
  'b.txt',
  'README',
  'docs/a.md',
  'docs/guide/install.md',
  'docs/guide/img/logo.png',
  'drafts/wip.md',
  '.hidden.md',
  '.git/config',
  'docs/.secret/key.md',
  'src/main.ts',
  'src/lib/util.test.ts',
  'x/y/z/deep.MD',
  'name with spaces.md',
  'ünïcödé/ファイル.md',
];

const PATTERNS = [
  '**/*',
  '*',
  '*.md',
  '**/*.md',
  'docs/**',
  'docs/**/*.md',
  'docs/*/install.md',
  '**/guide/**',
  'src/**/*.ts',
  '**/*.test.ts',
  '?.md',
  '[ab].*',
  '[!a]*.md',
  '[a-c]*',
  '**/.*',
  '.*/**',
  '**/*.{md,txt}',
  '{docs,src}/**',
  'docs/{guide/*,*}.md',
  '**/*.MD',
  'name with spaces.md',
  '**/ファイル.md',
];

describe('compileGlob', () => {
  it('agrees with Node’s path.matchesGlob on ordinary patterns', () => {
    for (const pattern of PATTERNS) {
      const glob = compileGlob(pattern);
      for (const file of PATHS) {
        expect(glob.matches(file), `${pattern} ~ ${file}`).toBe(path.matchesGlob(file, pattern));
      }
    }
  });

  it('keeps hidden files and folders out of * and ** unless the pattern names the dot', () => {
    expect(compileGlob('**/*').matches('.git/config')).toBe(false);
    expect(compileGlob('**/*.md').matches('docs/.secret/key.md')).toBe(false);
    expect(compileGlob('.git/*').matches('.git/config')).toBe(true);
    expect(compileGlob('docs/.*/*.md').matches('docs/.secret/key.md')).toBe(true);
  });

  it('reads a leading ./ as the folder itself (minimatch would match nothing)', () => {
    expect(compileGlob('./docs/*.md').matches('docs/a.md')).toBe(true);
  });

  it('takes escapes, classes and literal braces', () => {
    expect(compileGlob('a\\*b').matches('a*b')).toBe(true);
    expect(compileGlob('a\\*b').matches('axb')).toBe(false);
    expect(compileGlob('[]]x').matches(']x')).toBe(true);
    expect(compileGlob('[^a]x').matches('bx')).toBe(true);
    expect(compileGlob('{a}.md').matches('{a}.md')).toBe(true);
    expect(compileGlob('{1..3}.md').matches('{1..3}.md')).toBe(true);
    expect(compileGlob('+(a|b)').matches('+(a|b)')).toBe(true);
  });

  it('refuses empty patterns, unclosed classes and brace bombs', () => {
    for (const bad of ['', '  ', 'a[bc', '{a,b}'.repeat(7)]) {
      expect(() => compileGlob(bad), JSON.stringify(bad)).toThrow(GlobError);
    }
    // Six groups of two are exactly MAX_EXPANSIONS (64) alternatives: still allowed.
    expect(2 ** 6).toBe(MAX_EXPANSIONS);
    expect(compileGlob('{a,b}'.repeat(6)).matches('abbaab')).toBe(true);
    expect(compileGlob('{a,b}'.repeat(6)).matches('abbaa')).toBe(false);
  });

  it('matches patterns that make backtracking matchers explode in well under a second', () => {
    const long = 'a'.repeat(250);
    const deep = `${'a/'.repeat(60)}${'a'.repeat(100)}`;
    const hostile = [
      `${'*a'.repeat(30)}b`,
      `${'**/'.repeat(30)}${'*a'.repeat(20)}b`,
      `${'?'.repeat(100)}*b`,
      '*(a|aa)*(a|aa)b',
      `${'[a-z]*'.repeat(40)}b`,
    ];
    const started = performance.now();
    for (const pattern of hostile) {
      const glob = compileGlob(pattern);
      for (let i = 0; i < 20; i++) {
        glob.matches(long);
        glob.matches(deep);
      }
    }
    expect(performance.now() - started).toBeLessThan(500);
  });
});
