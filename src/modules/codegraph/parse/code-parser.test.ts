import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSource } from './code-parser.ts';
import type { ParsedFile } from './types.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../../../../tests/fixtures/codegraph');

async function parseFixture(language: string, file: string): Promise<ParsedFile> {
  const parsed = await parseSource(file, fs.readFileSync(path.join(FIXTURES, language, file), 'utf8'));
  if (!parsed) throw new Error(`${file} was not parsed`);
  return parsed;
}

/** A symbol by qualified name, with what the tests compare. */
function symbol(file: ParsedFile, qualifiedName: string) {
  const found = file.symbols.find((s) => s.qualifiedName === qualifiedName);
  if (!found) throw new Error(`no symbol ${qualifiedName} in ${file.symbols.map((s) => s.qualifiedName)}`);
  return found;
}

/** Calls as `caller -> receiver.name`, the caller by qualified name (`<file>` at the top level). */
const calls = (file: ParsedFile) =>
  file.calls.map((call) => {
    const caller = call.caller === null ? '<file>' : file.symbols[call.caller]?.qualifiedName;
    return `${caller} -> ${call.receiver ? `${call.receiver}.` : ''}${call.name}`;
  });

describe('TypeScript', () => {
  it('reads classes, methods, interfaces, functions bound to names, with signatures and docs', async () => {
    const shapes = await parseFixture('typescript', 'shapes.ts');
    expect(shapes.language).toBe('typescript');
    expect(shapes.hasErrors).toBe(false);
    expect(shapes.symbols.map((s) => `${s.kind} ${s.qualifiedName}`)).toEqual([
      'interface Shape',
      'class Polygon',
      'method Polygon.area',
      'method Polygon.describe',
      'method Polygon.name',
      'class Square',
      'method Square.constructor',
      'method Square.area',
      'function square',
    ]);
    expect(symbol(shapes, 'Polygon')).toMatchObject({
      startLine: 7,
      endLine: 18,
      signature: 'abstract class Polygon implements Shape',
      doc: 'Base of every polygon.',
      parent: null,
    });
    expect(symbol(shapes, 'Polygon.describe')).toMatchObject({
      owner: 'Polygon',
      signature: 'describe(): string',
      doc: 'Describes the polygon.',
      startLine: 11,
      endLine: 13,
    });
    expect(symbol(shapes, 'square').signature).toBe('const square = (n: number): number =>');
    expect(symbol(shapes, 'Shape').doc).toBe('A shape that can tell its area.');
    expect(shapes.heritage.map((h) => `${shapes.symbols[h.symbol]?.name} ${h.kind} ${h.name}`)).toEqual([
      'Polygon implements Shape',
      'Square extends Polygon',
    ]);
    expect(calls(shapes)).toEqual([
      'Polygon.describe -> this.name',
      'Polygon.describe -> this.area',
      'Square.area -> square',
    ]);
  });

  it('reads imports, line comments as docs, nested functions and the receivers of calls', async () => {
    const report = await parseFixture('typescript', 'report.ts');
    expect(report.imports).toEqual([
      { module: 'node:fs', imported: 'readFileSync', local: 'readFileSync', line: 1, reexport: false },
      { module: './shapes.ts', imported: null, local: 'shapes', line: 2, reexport: false },
      { module: './shapes.ts', imported: 'Square', local: 'Square', line: 3, reexport: false },
      { module: './shapes.ts', imported: 'square', local: 'sq', line: 3, reexport: false },
    ]);
    expect(symbol(report, 'report').doc).toBe('Builds the report line for one square.');
    expect(symbol(report, 'report.format').parent).toBe(0);
    expect(calls(report)).toEqual([
      'report -> Square',
      'report.format -> text.trim',
      'report -> format',
      'report -> shape.describe',
      'report -> sq',
      'report -> shapes.square',
      'main.print -> process.stdout.write',
      'main -> readFileSync',
      'main -> print',
      'main -> report',
    ]);
    // `shape` is a variable of `report`, `side` its parameter: values, not project functions.
    expect(report.locals).toEqual(
      expect.arrayContaining([
        { scope: 0, name: 'shape' },
        { scope: 0, name: 'side' },
      ]),
    );
    expect(report.locals.some((local) => local.name === 'format')).toBe(false);
  });

  it('reads re-exports, default imports, object-literal methods and .tsx files', async () => {
    const source = [
      "import View, { type Props } from './view.tsx';",
      "export { helper as assist } from './helper.ts';",
      "export * from './all.ts';",
      'export const api = {',
      '  list: (): number[] => [],',
      '  async get(id: string) { return load(id); },',
      '};',
    ].join('\n');
    const parsed = await parseSource('api.ts', source);
    expect(parsed?.imports).toEqual([
      { module: './view.tsx', imported: 'default', local: 'View', line: 1, reexport: false },
      { module: './view.tsx', imported: 'Props', local: 'Props', line: 1, reexport: false },
      { module: './helper.ts', imported: 'helper', local: 'assist', line: 2, reexport: true },
      { module: './all.ts', imported: '*', local: null, line: 3, reexport: true },
    ]);
    expect(parsed?.symbols.map((s) => `${s.kind} ${s.qualifiedName}`)).toEqual(['method list', 'method get']);
    const tsx = await parseSource(
      'view.tsx',
      'export function View() {\n  return <div>{format(1)}</div>;\n}\n',
    );
    expect(tsx?.language).toBe('tsx');
    expect(tsx?.symbols.map((s) => s.name)).toEqual(['View']);
    expect(tsx && calls(tsx)).toEqual(['View -> format']);
  });

  it('reads what it can of a file with syntax errors, and says so', async () => {
    const parsed = await parseSource('broken.ts', 'export function ok() { return 1; }\nfunction broken( {\n');
    expect(parsed?.hasErrors).toBe(true);
    expect(parsed?.symbols.map((s) => s.name)).toContain('ok');
  });
});

describe('JavaScript', () => {
  it('reads functions, classes and CommonJS requires', async () => {
    const math = await parseFixture('javascript', 'lib/math.js');
    expect(math.language).toBe('javascript');
    expect(math.symbols.map((s) => `${s.kind} ${s.qualifiedName}`)).toEqual([
      'function add',
      'class Counter',
      'method Counter.constructor',
      'method Counter.increment',
    ]);
    expect(symbol(math, 'add')).toMatchObject({ signature: 'function add(a, b)', doc: 'Adds two numbers.' });
    const index = await parseFixture('javascript', 'index.js');
    expect(index.imports).toEqual([
      { module: './lib/math', imported: 'add', local: 'add', line: 1, reexport: false },
      { module: './lib/math.js', imported: null, local: 'math', line: 2, reexport: false },
    ]);
    expect(calls(index)).toContain('<file> -> math.Counter');
  });
});

describe('Python', () => {
  it('reads classes, methods (def in class), docstrings, bases and self calls', async () => {
    const cart = await parseFixture('python', 'shop/cart.py');
    expect(cart.symbols.map((s) => `${s.kind} ${s.qualifiedName}`)).toEqual([
      'class Base',
      'method Base.size',
      'class Cart',
      'method Cart.__init__',
      'method Cart.total',
      'method Cart.check',
    ]);
    expect(symbol(cart, 'Cart')).toMatchObject({ signature: 'class Cart(Base)', doc: 'A cart of items.' });
    expect(symbol(cart, 'Cart.total')).toMatchObject({
      owner: 'Cart',
      signature: 'def total(self)',
      doc: 'Sum of the prices,\ntax included.',
      startLine: 17,
      endLine: 20,
    });
    expect(cart.heritage).toEqual([{ symbol: 2, kind: 'extends', name: 'Base', qualifier: null, line: 11 }]);
    expect(cart.imports).toEqual([
      { module: '.', imported: 'pricing', local: 'pricing', line: 2, reexport: false },
      { module: '.pricing', imported: 'total', local: 'compute_total', line: 3, reexport: false },
    ]);
    // `self` is read as `this`, so every language's "call on this object" looks alike.
    expect(calls(cart)).toEqual([
      'Cart.total -> compute_total',
      'Cart.total -> pricing.tax',
      'Cart.total -> this.size',
      'Cart.check -> this.total',
    ]);
  });

  it('reads module imports and star imports', async () => {
    const main = await parseFixture('python', 'main.py');
    expect(main.imports).toEqual([
      { module: 'os', imported: null, local: 'os', line: 1, reexport: false },
      { module: 'shop', imported: 'Cart', local: 'Cart', line: 3, reexport: false },
      { module: 'shop.pricing', imported: '*', local: null, line: 4, reexport: false },
    ]);
    expect(calls(main)).toContain('run -> os.path.join');
  });
});

describe('Go', () => {
  it('reads functions, methods by receiver type, structs, interfaces and comment docs', async () => {
    const store = await parseFixture('go', 'store/store.go');
    expect(store.symbols.map((s) => `${s.kind} ${s.qualifiedName}`)).toEqual([
      'type Store',
      'interface Getter',
      'function New',
      'method Store.Get',
    ]);
    expect(symbol(store, 'Store.Get')).toMatchObject({
      owner: 'Store',
      parent: null,
      signature: 'func (s *Store) Get(key string) (string, error)',
      doc: 'Get reads one item.\nIt fails when the key is missing.',
    });
    expect(symbol(store, 'Store').doc).toBe('Store keeps items by key.');
    // The receiver variable `s` is read as `this`.
    expect(calls(store)).toEqual(['Store.Get -> errors.New', 'Store.Get -> this.normalize']);
  });

  it('reads imports (package names from paths) and embedded types', async () => {
    const main = await parseFixture('go', 'cmd/main.go');
    expect(main.imports).toEqual([
      { module: 'fmt', imported: null, local: 'fmt', line: 4, reexport: false },
      { module: 'example.com/shop/store', imported: null, local: 'store', line: 6, reexport: false },
    ]);
    expect(main.heritage).toEqual([
      { symbol: 0, kind: 'extends', name: 'Getter', qualifier: 'store', line: 10 },
    ]);
  });
});

describe('Java', () => {
  it('reads classes, interfaces, methods, constructors, Javadoc and heritage', async () => {
    const circle = await parseFixture('java', 'src/main/java/com/acme/shapes/Circle.java');
    expect(circle.symbols.map((s) => `${s.kind} ${s.qualifiedName}`)).toEqual([
      'class Circle',
      'method Circle.Circle',
      'method Circle.area',
    ]);
    expect(symbol(circle, 'Circle.area')).toMatchObject({
      signature: '@Override public double area()',
      doc: 'The area of the circle.',
    });
    expect(circle.heritage).toEqual([
      { symbol: 0, kind: 'implements', name: 'Shape', qualifier: null, line: 4 },
    ]);
    expect(calls(circle)).toEqual(['Circle.area -> Geometry.square']);
  });

  it('reads class imports and static imports', async () => {
    const app = await parseFixture('java', 'src/main/java/com/acme/app/App.java');
    expect(app.imports).toEqual([
      { module: 'com.acme.shapes', imported: 'Circle', local: 'Circle', line: 3, reexport: false },
      { module: 'com.acme.shapes.Geometry', imported: 'square', local: 'square', line: 4, reexport: false },
    ]);
    expect(calls(app)).toEqual([
      'App.main -> Circle',
      'App.main -> System.out.println',
      'App.main -> circle.area',
      'App.main -> square',
      'App.main -> helper',
    ]);
  });
});

it('leaves files of other languages alone', async () => {
  expect(await parseSource('README.md', '# title')).toBeUndefined();
  expect(await parseSource('style.css', 'a {}')).toBeUndefined();
});
