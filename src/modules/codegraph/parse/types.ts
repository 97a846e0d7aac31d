/**
 * What the parser makes of one source file, before anything is resolved across files: the
 * symbols it defines, the calls, imports and base types it names. Everything here is plain
 * data (no tree-sitter objects), so a file's result can be kept, tested and resolved alone.
 */

/** The languages the code graph reads; TypeScript covers .ts/.mts/.cts and .tsx. */
export type LanguageId = 'typescript' | 'tsx' | 'javascript' | 'python' | 'go' | 'java';

/**
 * Kinds of symbol. Go structs and type definitions, TypeScript type aliases and Java records
 * are `type`s; constructors are `method`s named as their class.
 */
export const SYMBOL_KINDS = ['function', 'class', 'method', 'interface', 'type', 'enum'] as const;
export type SymbolKind = (typeof SYMBOL_KINDS)[number];

export interface ParsedSymbol {
  kind: SymbolKind;
  name: string;
  /** Names of the enclosing symbols and this one, joined by dots: `RunEngine.execute`. */
  qualifiedName: string;
  /** Index (in the file's `symbols`) of the symbol this one is nested in; null at the top level. */
  parent: number | null;
  /**
   * The type whose member this is, for methods (the enclosing class, or a Go method's receiver
   * type, which may be declared in another file of its package); what `this.x()` calls reach.
   */
  owner: string | null;
  /** 1-based, inclusive. */
  startLine: number;
  endLine: number;
  /** The declaration up to its body, whitespace collapsed: `function foo(a: number): string`. */
  signature: string;
  /** The doc comment (JSDoc, Javadoc, Go comment lines, a Python docstring), markers removed. */
  doc: string | null;
}

export interface ParsedCall {
  /** Index of the innermost symbol around the call; null for a call at the top level of the file. */
  caller: number | null;
  /** The name called: `bar` in `foo.bar()`, `Foo` in `new Foo()`. */
  name: string;
  /** What the name was called on, as written (`this`, `self`, `agents`, `pkg.sub`); null for a bare call. */
  receiver: string | null;
  line: number;
}

export interface ParsedImport {
  /** The module as written: `./run-engine.ts`, `..pkg.mod`, `github.com/x/y`, `com.acme.util`. */
  module: string;
  /**
   * The name taken from the module: a symbol (`createRunEngine`), `default`, `*` for every
   * exported name (Python `from m import *`, Java `import a.b.*`, `export * from`), or null when
   * the module itself is bound to `local` (`import * as ns`, `import os`, a Go package).
   */
  imported: string | null;
  /** The name it is bound to in this file; null when nothing is bound (`import './x'`, `*`). */
  local: string | null;
  line: number;
  /** `export { x } from './y'`: the name is also an export of this file. */
  reexport: boolean;
}

export interface ParsedHeritage {
  /** Index of the class or interface that extends or implements. */
  symbol: number;
  kind: 'extends' | 'implements';
  /** The base type's name, without type arguments: `Base` for `Base<T>`, `Base` for `pkg.Base`. */
  name: string;
  /** What qualifies the name, as written: `pkg` in `pkg.Base`; null when bare. */
  qualifier: string | null;
  line: number;
}

export interface ParsedFile {
  /** Path relative to the project root, with forward slashes. */
  path: string;
  language: LanguageId;
  symbols: ParsedSymbol[];
  calls: ParsedCall[];
  imports: ParsedImport[];
  heritage: ParsedHeritage[];
  /**
   * Names bound by variables and parameters, by the symbol they are bound in (null: the file's
   * top level). A bare call of such a name calls a value, not a project function of that name.
   */
  locals: Array<{ scope: number | null; name: string }>;
  /** Parse errors tree-sitter recovered from (the file is still read as far as it goes). */
  hasErrors: boolean;
}
