import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSource } from '../parse/code-parser.ts';
import type { ParsedFile } from '../parse/types.ts';
import { buildCodeGraph, type CodeGraph, isTestFile } from './build-graph.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../../../../tests/fixtures/codegraph');

async function graphOf(language: string): Promise<CodeGraph> {
  const root = path.join(FIXTURES, language);
  const files = (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((file) => fs.statSync(path.join(root, file)).isFile())
    .sort();
  const parsed: ParsedFile[] = [];
  for (const file of files) {
    const result = await parseSource(file, fs.readFileSync(path.join(root, file), 'utf8'));
    if (result) parsed.push(result);
  }
  return buildCodeGraph(parsed);
}

async function graphOfSources(sources: Record<string, string>): Promise<CodeGraph> {
  const parsed: ParsedFile[] = [];
  for (const [file, text] of Object.entries(sources)) {
    const result = await parseSource(file, text);
    if (result) parsed.push(result);
  }
  return buildCodeGraph(parsed);
}

/**
 * Edges of one kind as `source -> target [resolution]`, unresolved targets as `?name`, and
 * `×n` when one edge stands for several call sites.
 */
function edges(graph: CodeGraph, kind: string): string[] {
  const name = (id: number | null) => (id === null ? '<file>' : graph.symbols[id]?.qualifiedName);
  return graph.edges
    .filter((edge) => edge.kind === kind)
    .map((edge) => {
      const target = edge.target === null ? `?${edge.targetName}` : name(edge.target);
      const times = edge.occurrences > 1 ? ` ×${edge.occurrences}` : '';
      return `${name(edge.source)} -> ${target} [${edge.resolution}]${times}`;
    });
}

describe('call resolution', () => {
  it('TypeScript: scope, imports (named, renamed, namespace), this, unique method names, externals', async () => {
    const graph = await graphOf('typescript');
    expect(edges(graph, 'calls')).toEqual([
      'report -> Square [import]',
      'report.format -> ?trim [null]',
      'report -> report.format [scope]',
      'report -> Polygon.describe [unique_name]',
      // sq(2) and shapes.square(3): two call sites, one edge.
      'report -> square [import] ×2',
      'main.print -> ?write [null]',
      'main -> ?readFileSync [null]',
      'main -> main.print [scope]',
      'main -> report [scope]',
      'Polygon.describe -> Polygon.name [this]',
      'Polygon.describe -> Polygon.area [this]',
      'Square.area -> square [scope]',
    ]);
    expect(edges(graph, 'extends')).toEqual(['Square -> Polygon [scope]']);
    expect(edges(graph, 'implements')).toEqual(['Polygon -> Shape [scope]']);
    expect(edges(graph, 'imports')).toEqual([
      '<file> -> ?readFileSync [null]',
      '<file> -> ?shapes [null]',
      '<file> -> Square [import]',
      '<file> -> square [import]',
    ]);
    const namespace = graph.edges.find((edge) => edge.kind === 'imports' && edge.targetName === 'shapes');
    expect(namespace).toMatchObject({ module: './shapes.ts', targetFile: 'shapes.ts' });
    const square = graph.symbols.find((symbol) => symbol.qualifiedName === 'square');
    // Called from report (twice, one caller) and from Square.area.
    expect(square?.callerCount).toBe(2);
  });

  it('defines edges join files to their top-level symbols and symbols to their members', async () => {
    const graph = await graphOf('typescript');
    expect(edges(graph, 'defines')).toEqual(
      expect.arrayContaining([
        '<file> -> report [null]',
        'report -> report.format [null]',
        'Polygon -> Polygon.describe [null]',
      ]),
    );
    expect(edges(graph, 'defines')).toHaveLength(graph.symbols.length);
  });

  it('JavaScript: CommonJS requires bind names and modules', async () => {
    const graph = await graphOf('javascript');
    expect(edges(graph, 'calls')).toEqual([
      '<file> -> ?require [null] ×2',
      '<file> -> Counter [import]',
      '<file> -> Counter.increment [unique_name]',
      '<file> -> ?log [null]',
      '<file> -> add [import]',
      'Counter.increment -> add [scope]',
    ]);
  });

  it('Python: relative imports, package re-exports, submodules, star imports, self and bases', async () => {
    const graph = await graphOf('python');
    expect(edges(graph, 'calls')).toEqual([
      'run -> Cart [import]',
      'run -> ?print [null]',
      'run -> ?join [null]',
      'run -> Cart.check [unique_name]',
      'run -> price [import]',
      'Cart.total -> total [import]',
      'Cart.total -> tax [import]',
      'Cart.total -> Base.size [this]',
      'Cart.check -> Cart.total [this]',
      'total -> ?sum [null]',
      'total -> price [scope]',
    ]);
    expect(edges(graph, 'extends')).toEqual(['Cart -> Base [scope]']);
    const submodule = graph.edges.find((edge) => edge.kind === 'imports' && edge.targetName === 'pricing');
    expect(submodule?.targetFile).toBe('shop/pricing.py');
  });

  it('Go: packages by import path, methods by receiver type across files, same-package calls', async () => {
    const graph = await graphOf('go');
    expect(edges(graph, 'calls')).toEqual([
      'main -> New [import]',
      // `s` is a variable of unknown type and `Get` a name every library has: left unresolved.
      'main -> ?Get [null]',
      'main -> ?Println [null]',
      'Store.normalize -> ?TrimSpace [null]',
      'Store.normalize -> clean [scope]',
      'Store.Get -> ?New [null]',
      'Store.Get -> Store.normalize [this]',
    ]);
    expect(edges(graph, 'extends')).toEqual(['cached -> Getter [import]']);
  });

  it('Java: imported classes, static imports, same-package classes, bare method calls', async () => {
    const graph = await graphOf('java');
    expect(edges(graph, 'calls')).toEqual([
      'App.main -> Circle [import]',
      'App.main -> ?println [null]',
      'App.main -> Circle.area [receiver_name]',
      'App.main -> Geometry.square [import]',
      'App.main -> App.helper [scope]',
      'Circle.area -> Geometry.square [package]',
    ]);
    expect(edges(graph, 'implements')).toEqual(['Circle -> Shape [package]']);
  });
});

describe('what is left unresolved', () => {
  it('a call of a variable or parameter never reaches a project function of that name', async () => {
    const graph = await graphOfSources({
      'a.ts': 'export function scrub(text: string) { return text; }\n',
      'b.ts': [
        'export function run(check: () => void) {',
        '  const scrub = (x: string) => x;',
        '  check();',
        "  return scrub('x');",
        '}',
        'export function other() {',
        "  return scrub('y');",
        '}',
      ].join('\n'),
    });
    expect(edges(graph, 'calls')).toEqual([
      'run -> ?check [null]',
      'run -> run.scrub [scope]',
      'other -> scrub [unique_name]',
    ]);
  });

  it('names imported from outside the project, ambiguous names and common method names', async () => {
    const graph = await graphOfSources({
      'a.ts': 'export function parse() {}\nexport class List { push() {} get() {} }\n',
      'b.ts': 'export function parse() {}\nexport class Map2 { get() {} }\n',
      'c.ts': [
        "import { join } from 'node:path';",
        'export function go(items: number[]) {',
        "  join('a');",
        '  parse();',
        '  items.push(1);',
        '}',
      ].join('\n'),
    });
    expect(edges(graph, 'calls')).toEqual([
      'go -> ?join [null]',
      'go -> ?parse [null]',
      'go -> ?push [null]',
    ]);
  });

  it("a test's helpers are reached by name from tests only", async () => {
    const graph = await graphOfSources({
      'helpers.test.ts': 'export function fixture() {}\n',
      'app.ts': 'export function main() { fixture(); }\n',
      'other.test.ts': 'export function t() { fixture(); }\n',
    });
    expect(edges(graph, 'calls')).toEqual(['main -> ?fixture [null]', 't -> fixture [unique_name]']);
  });

  it('counts resolved calls by rule', async () => {
    const graph = await graphOf('typescript');
    expect(graph.stats).toEqual({
      files: 2,
      symbols: 13,
      edges: { defines: 13, imports: 4, calls: 12, extends: 1, implements: 1 },
      calls: { total: 13, resolved: 10, by_resolution: { import: 3, scope: 4, unique_name: 1, this: 2 } },
    });
  });
});

it('recognises test files of the four languages', () => {
  for (const file of [
    'a.test.ts',
    'x/b.spec.js',
    'c_test.go',
    'test_d.py',
    'e_test.py',
    'tests/f.ts',
    'GTest.java',
  ]) {
    expect(isTestFile(file), file).toBe(true);
  }
  for (const file of ['latest.ts', 'contest.py', 'testing.go', 'Tester.java']) {
    expect(isTestFile(file), file).toBe(false);
  }
});
