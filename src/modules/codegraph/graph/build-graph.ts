import type { LanguageSpec } from '../parse/language-spec.ts';
import { languageById } from '../parse/languages.ts';
import type { LanguageId, ParsedFile, ParsedImport, ParsedSymbol, SymbolKind } from '../parse/types.ts';
import { createModulePaths, type ModulePaths } from './module-paths.ts';

/**
 * The project's graph from its parsed files: every symbol with a project-wide index, and the
 * edges between them, names resolved across files. Pure: files in, graph out.
 *
 * A call `name()` or `receiver.name()` is resolved by the first rule that finds it:
 *
 * | resolution      | rule                                                                          |
 * |-----------------|-------------------------------------------------------------------------------|
 * | `this`          | `this.name()` / `self.name()`: a method of the caller's class (or its bases)  |
 * | `scope`         | a bare `name()`: a function of the same file visible from the call (top level |
 * |                 | or an enclosing function); in Java also a method of the enclosing class       |
 * | `import`        | `name` or `receiver` is imported: the symbol the import names in its module   |
 * | `package`       | Go and Java: a top-level symbol of another file of the same package (folder)  |
 * | `unique_name`   | the only function/class (bare call) or method (`x.name()`) of that name       |
 * | `receiver_name` | several methods of that name, one of them in a file or type named like the    |
 * |                 | receiver (`agents.get()` -> `agents.service.ts`)                              |
 *
 * A name imported from outside the project (`import { sql } from 'drizzle-orm'`, `fs.read()`)
 * never falls through to the name rules: it is left unresolved, with its name.
 */

export type Resolution = 'this' | 'scope' | 'import' | 'package' | 'unique_name' | 'receiver_name';
export const EDGE_KINDS = ['defines', 'imports', 'calls', 'extends', 'implements'] as const;
export type EdgeKind = (typeof EDGE_KINDS)[number];

export interface GraphSymbol extends Omit<ParsedSymbol, 'parent'> {
  file: string;
  language: LanguageId;
  /** Project-wide index of the enclosing symbol. */
  parent: number | null;
  /** Distinct callers (symbols, or files for top-level calls) whose calls resolve to this symbol. */
  callerCount: number;
}

export interface GraphEdge {
  kind: EdgeKind;
  /** The symbol the edge starts from; null when it is the file itself (a top-level call, an import). */
  source: number | null;
  file: string;
  line: number;
  /** The symbol reached; null when unresolved (or an import of a module as a whole). */
  target: number | null;
  /** The name as written: the callee, the imported name (or module), the base type. */
  targetName: string;
  /** For imports: the module as written. */
  module: string | null;
  /** For imports: the project file the module resolved to. */
  targetFile: string | null;
  /** How the target was found; null when it was not. */
  resolution: Resolution | null;
  /** Call sites this edge stands for (calls from one symbol to one target are one edge); 1 otherwise. */
  occurrences: number;
}

export interface GraphStats {
  files: number;
  symbols: number;
  edges: Record<EdgeKind, number>;
  /** Call sites (an edge may stand for several), and those whose target was found, by rule. */
  calls: { total: number; resolved: number; by_resolution: Partial<Record<Resolution, number>> };
}

export interface CodeGraph {
  symbols: GraphSymbol[];
  edges: GraphEdge[];
  stats: GraphStats;
}

const CALLABLE: ReadonlySet<SymbolKind> = new Set(['function', 'class', 'method']);
const TYPE_KINDS: ReadonlySet<SymbolKind> = new Set(['class', 'interface', 'type', 'enum']);
/** How many `export ... from` / `from x import y` hops an imported name is followed through. */
const MAX_REEXPORT_HOPS = 4;

/** What a file's imported name stands for. */
type Binding =
  | { kind: 'symbols'; ids: number[] }
  | { kind: 'module'; files: string[] }
  /** Imported from outside the project: resolution stops here. */
  | { kind: 'external' };

interface FileScope {
  file: ParsedFile;
  spec: LanguageSpec;
  /** Project-wide index of the file's first symbol. */
  offset: number;
  bindings: Map<string, Binding>;
  /** Files whose every export is visible (`from m import *`, Go dot imports, Java `a.b.*`). */
  wildcards: string[];
  /** Variable and parameter names by the project-wide index of their symbol (`top` for the file). */
  locals: Map<number | 'top', Set<string>>;
}

export function buildCodeGraph(files: readonly ParsedFile[]): CodeGraph {
  const paths = createModulePaths(files.map((file) => file.path));
  const symbols: GraphSymbol[] = [];
  const scopes = new Map<string, FileScope>();
  for (const file of files) {
    const offset = symbols.length;
    for (const symbol of file.symbols) {
      symbols.push({
        ...symbol,
        file: file.path,
        language: file.language,
        parent: symbol.parent === null ? null : symbol.parent + offset,
        callerCount: 0,
      });
    }
    scopes.set(file.path, {
      file,
      spec: languageById(file.language),
      offset,
      bindings: new Map(),
      wildcards: [],
      locals: localsOf(file, offset),
    });
  }
  const index = indexSymbols(symbols);
  const exportsOf = createExportLookup(symbols, index, scopes, paths);
  for (const scope of scopes.values()) bindImports(scope, paths, exportsOf);

  const resolver = { symbols, index, scopes, paths, exportsOf };
  const edges: GraphEdge[] = [];
  const bases = new Map<number, number[]>();
  for (const scope of scopes.values()) {
    edges.push(...defineEdges(scope, symbols), ...importEdges(scope, paths, exportsOf));
    for (const heritage of scope.file.heritage) {
      const source = heritage.symbol + scope.offset;
      const target = resolveType(resolver, scope, heritage.name, heritage.qualifier);
      if (target) bases.set(source, [...(bases.get(source) ?? []), target.id]);
      edges.push({
        kind: heritage.kind,
        source,
        file: scope.file.path,
        line: heritage.line,
        target: target?.id ?? null,
        targetName: heritage.qualifier ? `${heritage.qualifier}.${heritage.name}` : heritage.name,
        module: null,
        targetFile: null,
        resolution: target?.resolution ?? null,
        occurrences: 1,
      });
    }
  }
  for (const scope of scopes.values()) {
    for (const call of scope.file.calls) {
      const caller = call.caller === null ? null : call.caller + scope.offset;
      const target = resolveCall({ ...resolver, bases }, scope, caller, call.name, call.receiver);
      edges.push({
        kind: 'calls',
        source: caller,
        file: scope.file.path,
        line: call.line,
        target: target?.id ?? null,
        targetName: call.name,
        module: null,
        targetFile: null,
        resolution: target?.resolution ?? null,
        occurrences: 1,
      });
    }
  }
  countCallers(symbols, edges);
  const merged = mergeCalls(edges);
  return { symbols, edges: merged, stats: statsOf(files.length, symbols, edges, merged) };
}

/**
 * One `calls` edge per caller, target (or unresolved name) and file, at its first line, with
 * the number of call sites: a test calling `expect` forty times is one edge, not forty.
 */
function mergeCalls(edges: GraphEdge[]): GraphEdge[] {
  const merged: GraphEdge[] = [];
  const byKey = new Map<string, GraphEdge>();
  for (const edge of edges) {
    if (edge.kind !== 'calls') {
      merged.push(edge);
      continue;
    }
    const key = `${edge.source}\u0000${edge.target ?? edge.targetName}\u0000${edge.file}`;
    const existing = byKey.get(key);
    if (existing) {
      existing.occurrences += edge.occurrences;
      existing.line = Math.min(existing.line, edge.line);
      continue;
    }
    const copy = { ...edge };
    byKey.set(key, copy);
    merged.push(copy);
  }
  return merged;
}

function localsOf(file: ParsedFile, offset: number): Map<number | 'top', Set<string>> {
  const locals = new Map<number | 'top', Set<string>>();
  for (const local of file.locals) {
    const key = local.scope === null ? 'top' : local.scope + offset;
    const names = locals.get(key) ?? new Set<string>();
    names.add(local.name);
    locals.set(key, names);
  }
  return locals;
}

/**
 * Method names of the standard libraries (JavaScript's Array, Map, Promise, streams; Python's
 * list, dict, str, files; Go's and Java's collections and I/O). `x.push()` on a receiver of
 * unknown type is far more likely one of these than the project's only method of that name.
 */
const COMMON_METHOD_NAMES: ReadonlySet<string> = new Set(
  (
    'push pop shift unshift map filter reduce forEach find findIndex findLast some every includes ' +
    'indexOf lastIndexOf slice splice concat join sort reverse keys values entries get set has ' +
    'delete clear add then catch finally toString valueOf split replace replaceAll trim trimStart ' +
    'trimEnd startsWith endsWith test exec match matchAll floor ceil max min abs round sqrt pow ' +
    'random log warn error info debug trace send status write end on once off emit close open read ' +
    'call apply bind next resolve reject parse stringify assign from of at flat flatMap fill ' +
    'padStart padEnd toLowerCase toUpperCase localeCompare charAt charCodeAt codePointAt repeat ' +
    'search substring now getTime toISOString toJSON isArray isInteger append extend insert remove ' +
    'update copy items format strip lstrip rstrip encode decode lower upper count pipe destroy ' +
    'length size equals hashCode compareTo println printf Println Printf Sprintf Errorf Error ' +
    'String Close Read Write Lock Unlock Add Done Wait Get Set Len run start stop create list ' +
    'query execute select where insert prepare release connect listen handle wrap unwrap clone ' +
    'resume pause stream flush'
  ).split(' '),
);

interface SymbolIndex {
  byName: Map<string, number[]>;
  /** `<scope>\u0000<owner>` -> methods; the scope is the file, or the folder for Go. */
  byOwner: Map<string, number[]>;
  byFile: Map<string, number[]>;
}

const ownerKey = (symbol: Pick<GraphSymbol, 'file' | 'language'>, owner: string): string =>
  `${symbol.language === 'go' ? symbol.file.slice(0, symbol.file.lastIndexOf('/') + 1) : symbol.file}\u0000${owner}`;

function indexSymbols(symbols: GraphSymbol[]): SymbolIndex {
  const byName = new Map<string, number[]>();
  const byOwner = new Map<string, number[]>();
  const byFile = new Map<string, number[]>();
  const add = (map: Map<string, number[]>, key: string, id: number) => {
    const list = map.get(key);
    if (list) list.push(id);
    else map.set(key, [id]);
  };
  symbols.forEach((symbol, id) => {
    add(byName, symbol.name, id);
    add(byFile, symbol.file, id);
    if (symbol.owner) add(byOwner, ownerKey(symbol, symbol.owner), id);
  });
  return { byName, byOwner, byFile };
}

type ExportLookup = (files: readonly string[], name: string, hops?: number) => number[];

/**
 * The symbols a module offers under `name`: its top-level symbols of that name (in Java also
 * the members of its classes, for static imports), else what it imports under that name and
 * passes on (`export { x } from`, `export * from`, a Python package's `__init__.py`).
 */
function createExportLookup(
  symbols: GraphSymbol[],
  index: SymbolIndex,
  scopes: Map<string, FileScope>,
  paths: ModulePaths,
): ExportLookup {
  const lookup: ExportLookup = (files, name, hops = 0) => {
    const found: number[] = [];
    for (const file of files) {
      const named = (index.byFile.get(file) ?? []).filter((id) => symbols[id]?.name === name);
      const topLevel = named.filter((id) => symbols[id]?.parent === null);
      const own =
        topLevel.length > 0
          ? topLevel
          : named.filter((id) => {
              const parent = symbols[id]?.parent;
              return symbols[id]?.language === 'java' && parent != null && symbols[parent]?.parent === null;
            });
      if (own.length > 0) {
        found.push(...own);
        continue;
      }
      const scope = scopes.get(file);
      if (!scope || hops >= MAX_REEXPORT_HOPS) continue;
      for (const entry of scope.file.imports) {
        const passesOn = entry.local === name || (entry.imported === '*' && entry.reexport);
        if (!passesOn) continue;
        const targets = paths.resolve(file, scope.file.language, entry.module);
        const wanted = entry.imported === '*' ? name : entry.imported;
        if (wanted && wanted !== 'default') found.push(...lookup(targets, wanted, hops + 1));
      }
    }
    return [...new Set(found)];
  };
  return lookup;
}

/** What each imported name of the file stands for. */
function bindImports(scope: FileScope, paths: ModulePaths, exportsOf: ExportLookup): void {
  const { file } = scope;
  for (const entry of file.imports) {
    const targets = paths.resolve(file.path, file.language, entry.module);
    if (entry.imported === '*') {
      scope.wildcards.push(...targets);
      continue;
    }
    if (entry.local === null) continue;
    if (targets.length === 0) {
      scope.bindings.set(entry.local, { kind: 'external' });
      continue;
    }
    if (entry.imported === null) {
      scope.bindings.set(entry.local, { kind: 'module', files: targets });
      continue;
    }
    scope.bindings.set(entry.local, importedBinding(file, entry, targets, paths, exportsOf));
  }
}

function importedBinding(
  file: ParsedFile,
  entry: ParsedImport,
  targets: string[],
  paths: ModulePaths,
  exportsOf: ExportLookup,
): Binding {
  // A default import is known by the name the exporting file gives it, which is usually the local one.
  const name = entry.imported === 'default' ? (entry.local as string) : (entry.imported as string);
  const ids = exportsOf(targets, name);
  if (ids.length > 0) return { kind: 'symbols', ids };
  // `from pkg import mod`: the name may be a module of the package rather than a symbol in it.
  const submodule = file.language === 'python' ? paths.resolve(file.path, 'python', joinModule(entry)) : [];
  return submodule.length > 0 ? { kind: 'module', files: submodule } : { kind: 'symbols', ids: [] };
}

const joinModule = (entry: ParsedImport): string =>
  entry.module.endsWith('.') ? `${entry.module}${entry.imported}` : `${entry.module}.${entry.imported}`;

function defineEdges(scope: FileScope, symbols: GraphSymbol[]): GraphEdge[] {
  return scope.file.symbols.map((symbol, local) => ({
    kind: 'defines' as const,
    source: symbol.parent === null ? null : symbol.parent + scope.offset,
    file: scope.file.path,
    line: symbol.startLine,
    target: local + scope.offset,
    targetName: (symbols[local + scope.offset] as GraphSymbol).qualifiedName,
    module: null,
    targetFile: null,
    resolution: null,
    occurrences: 1,
  }));
}

function importEdges(scope: FileScope, paths: ModulePaths, exportsOf: ExportLookup): GraphEdge[] {
  const { file } = scope;
  return file.imports.map((entry) => {
    const targets = paths.resolve(file.path, file.language, entry.module);
    const named = entry.imported !== null && entry.imported !== '*' ? entry.imported : null;
    const lookupName = named === 'default' ? entry.local : named;
    const ids = lookupName && targets.length > 0 ? exportsOf(targets, lookupName) : [];
    // `from pkg import mod` names a module of the package: point at its file.
    const submodule =
      ids.length === 0 && named && file.language === 'python'
        ? paths.resolve(file.path, 'python', joinModule(entry))
        : [];
    return {
      kind: 'imports' as const,
      source: null,
      file: file.path,
      line: entry.line,
      target: ids.length === 1 ? (ids[0] as number) : null,
      targetName: named ?? entry.local ?? entry.module,
      module: entry.module,
      targetFile: submodule[0] ?? targets[0] ?? null,
      resolution: ids.length === 1 ? ('import' as const) : null,
      occurrences: 1,
    };
  });
}

interface Resolver {
  symbols: GraphSymbol[];
  index: SymbolIndex;
  scopes: Map<string, FileScope>;
  paths: ModulePaths;
  exportsOf: ExportLookup;
}

interface Resolved {
  id: number;
  resolution: Resolution;
}

/** The first candidate when they are all one symbol (Java overloads share a qualified name). */
function single(resolver: Resolver, ids: number[], resolution: Resolution): Resolved | null {
  if (ids.length === 0) return null;
  const names = new Set(
    ids.map((id) => `${resolver.symbols[id]?.file}\u0000${resolver.symbols[id]?.qualifiedName}`),
  );
  return names.size === 1 ? { id: ids[0] as number, resolution } : null;
}

function resolveCall(
  resolver: Resolver & { bases: Map<number, number[]> },
  scope: FileScope,
  caller: number | null,
  name: string,
  receiver: string | null,
): Resolved | null {
  const { symbols } = resolver;
  if (receiver === 'this' || receiver === 'super') {
    const owner = enclosingType(resolver, scope, caller);
    if (owner === null) return null;
    const own = receiver === 'this' ? methodsOf(resolver, owner, name) : [];
    if (own.length > 0) return single(resolver, own, 'this');
    return single(resolver, inheritedMethods(resolver, owner, name), 'this');
  }
  if (receiver === null) {
    const lexical = inScope(resolver, scope, caller, name, CALLABLE);
    if (lexical === 'local') return null;
    if (lexical) return lexical;
    const bound = scope.bindings.get(name);
    if (bound) return bound.kind === 'symbols' ? single(resolver, bound.ids, 'import') : null;
    if (scope.locals.get('top')?.has(name)) return null;
    return (
      inPackage(resolver, scope, name, CALLABLE) ??
      single(resolver, resolver.exportsOf(scope.wildcards, name), 'import') ??
      single(
        resolver,
        // Nested functions are reached from their own scope only, which `inScope` searched.
        reachableByName(resolver, scope, name).filter((id) => {
          const symbol = symbols[id] as GraphSymbol;
          return (symbol.kind === 'function' || symbol.kind === 'class') && symbol.parent === null;
        }),
        'unique_name',
      )
    );
  }
  const head = receiver.split('.')[0] as string;
  const bound = scope.bindings.get(receiver) ?? scope.bindings.get(head);
  if (bound?.kind === 'external') return null;
  if (bound?.kind === 'module') {
    return receiver.includes('.') && !scope.bindings.has(receiver)
      ? null
      : single(resolver, resolver.exportsOf(bound.files, name), 'import');
  }
  if (bound?.kind === 'symbols' && receiver === head) {
    // `Imported.method()`: a static member of an imported class.
    const members = bound.ids.flatMap((id) => childrenNamed(resolver, id, name));
    if (members.length > 0) return single(resolver, members, 'import');
  }
  if (receiver === head) {
    const lexical = inScope(resolver, scope, caller, head, TYPE_KINDS);
    const type = lexical === 'local' ? null : (lexical ?? inPackage(resolver, scope, head, TYPE_KINDS));
    if (type) {
      const members = childrenNamed(resolver, type.id, name);
      if (members.length > 0) return single(resolver, members, type.resolution);
    }
  }
  return byMethodName(resolver, scope, receiver, name);
}

/**
 * Symbols named `name` that a call found by name alone may reach: a test's helpers and fakes
 * are only reached from tests.
 */
function reachableByName(resolver: Resolver, scope: FileScope, name: string): number[] {
  const all = resolver.index.byName.get(name) ?? [];
  if (isTestFile(scope.file.path)) return all;
  return all.filter((id) => !isTestFile(resolver.symbols[id]?.file ?? ''));
}

/** Test files by the conventions of the four languages (`x.test.ts`, `x_test.go`, `test_x.py`, `tests/`). */
export const isTestFile = (path: string): boolean =>
  /(^|\/)(tests?|__tests__|spec)\//.test(path) ||
  /\.(test|spec)\.[cm]?[jt]sx?$/.test(path) ||
  /_test\.(go|py)$/.test(path) ||
  /(^|\/)test_[^/]*\.py$/.test(path) ||
  /Tests?\.java$/.test(path);

/** `x.name()` on a receiver of unknown type: the one method of that name, or the one named like `x`. */
function byMethodName(resolver: Resolver, scope: FileScope, receiver: string, name: string): Resolved | null {
  const methods = reachableByName(resolver, scope, name).filter(
    (id) => resolver.symbols[id]?.kind === 'method',
  );
  if (methods.length === 0) return null;
  // A name every standard library has (`push`, `get`, `close`) says nothing on an unknown receiver.
  const unique = COMMON_METHOD_NAMES.has(name) ? null : single(resolver, methods, 'unique_name');
  if (unique) return unique;
  const last = receiver.split('.').at(-1) ?? receiver;
  const stem = last.replace(/^_+/, '').replace(/s$/, '').toLowerCase();
  if (stem.length < 3 || last === '<expr>') return null;
  const named = methods.filter((id) => {
    const symbol = resolver.symbols[id] as GraphSymbol;
    const fileName = symbol.file.slice(symbol.file.lastIndexOf('/') + 1).toLowerCase();
    const container = symbol.qualifiedName.slice(0, -name.length - 1).toLowerCase();
    return fileName.startsWith(stem) || container.includes(stem);
  });
  return single(resolver, named, 'receiver_name');
}

/** The class (or Go receiver type) a call is made in: the owner of the nearest enclosing method. */
function enclosingType(
  resolver: Resolver,
  scope: FileScope,
  caller: number | null,
): { file: string; language: LanguageId; owner: string } | null {
  for (let at = caller; at !== null; at = resolver.symbols[at]?.parent ?? null) {
    const symbol = resolver.symbols[at] as GraphSymbol;
    if (symbol.owner) return { file: scope.file.path, language: scope.file.language, owner: symbol.owner };
    if (TYPE_KINDS.has(symbol.kind))
      return { file: scope.file.path, language: scope.file.language, owner: symbol.name };
  }
  return null;
}

function methodsOf(
  resolver: Resolver,
  type: { file: string; language: LanguageId; owner: string },
  name: string,
) {
  return (resolver.index.byOwner.get(ownerKey(type, type.owner)) ?? []).filter(
    (id) => resolver.symbols[id]?.name === name,
  );
}

/** Methods named `name` of the resolved bases of `type`, breadth first, a few levels up. */
function inheritedMethods(
  resolver: Resolver & { bases: Map<number, number[]> },
  type: { file: string; language: LanguageId; owner: string },
  name: string,
): number[] {
  const scope = ownerKey(type, '');
  let level = (resolver.index.byName.get(type.owner) ?? []).filter((id) => {
    const symbol = resolver.symbols[id] as GraphSymbol;
    return TYPE_KINDS.has(symbol.kind) && ownerKey(symbol, '') === scope;
  });
  const seen = new Set(level);
  for (let depth = 0; depth < 5 && level.length > 0; depth++) {
    const next = level.flatMap((id) => resolver.bases.get(id) ?? []).filter((id) => !seen.has(id));
    for (const base of next) {
      seen.add(base);
      const methods = childrenNamed(resolver, base, name);
      if (methods.length > 0) return methods;
    }
    level = next;
  }
  return [];
}

/** Direct members of a symbol named `name` (nesting, or a Go method's receiver type). */
function childrenNamed(resolver: Resolver, parent: number, name: string): number[] {
  const type = resolver.symbols[parent] as GraphSymbol;
  const nested = (resolver.index.byFile.get(type.file) ?? []).filter(
    (id) => resolver.symbols[id]?.parent === parent && resolver.symbols[id]?.name === name,
  );
  return nested.length > 0 ? nested : methodsOf(resolver, { ...type, owner: type.name }, name);
}

/**
 * A symbol of the caller's file visible at the call: nested in a symbol that encloses the
 * call (nearest first), or at the top level. `local` when a variable or parameter of that
 * name is nearer: the call is of a value (`const scrub = scrubber(); scrub(text)`). Methods
 * only where a bare call reaches them (Java).
 */
function inScope(
  resolver: Resolver,
  scope: FileScope,
  caller: number | null,
  name: string,
  kinds: ReadonlySet<SymbolKind>,
): Resolved | 'local' | null {
  const candidates = (resolver.index.byName.get(name) ?? []).filter((id) => {
    const symbol = resolver.symbols[id] as GraphSymbol;
    if (symbol.file !== scope.file.path || !kinds.has(symbol.kind)) return false;
    return symbol.kind !== 'method' || scope.spec.bareMethodCalls;
  });
  for (let at = caller; at !== null; at = resolver.symbols[at]?.parent ?? null) {
    const visible = candidates.filter((id) => resolver.symbols[id]?.parent === at);
    if (visible.length > 0) return single(resolver, visible, 'scope');
    if (scope.locals.get(at)?.has(name)) return 'local';
  }
  const topLevel = candidates.filter((id) => resolver.symbols[id]?.parent === null);
  return single(resolver, topLevel, 'scope');
}

/** Go and Java: a top-level symbol of another file of the caller's package (folder). */
function inPackage(resolver: Resolver, scope: FileScope, name: string, kinds: ReadonlySet<SymbolKind>) {
  if (scope.file.language !== 'go' && scope.file.language !== 'java') return null;
  const siblings = resolver.paths.siblings(scope.file.path).filter((file) => file !== scope.file.path);
  const ids = resolver
    .exportsOf(siblings, name)
    .filter(
      (id) => kinds.has(resolver.symbols[id]?.kind as SymbolKind) && resolver.symbols[id]?.parent === null,
    );
  return single(resolver, ids, 'package');
}

/** A base type named in `extends`/`implements`, resolved like a call's name but among types. */
function resolveType(
  resolver: Resolver,
  scope: FileScope,
  name: string,
  qualifier: string | null,
): Resolved | null {
  if (qualifier) {
    const bound = scope.bindings.get(qualifier);
    if (bound?.kind === 'module') return single(resolver, resolver.exportsOf(bound.files, name), 'import');
    return null;
  }
  const lexical = inScope(resolver, scope, null, name, TYPE_KINDS);
  if (lexical && lexical !== 'local') return lexical;
  const bound = scope.bindings.get(name);
  if (bound) return bound.kind === 'symbols' ? single(resolver, bound.ids, 'import') : null;
  return (
    inPackage(resolver, scope, name, TYPE_KINDS) ??
    single(resolver, resolver.exportsOf(scope.wildcards, name), 'import') ??
    single(
      resolver,
      (resolver.index.byName.get(name) ?? []).filter((id) =>
        TYPE_KINDS.has(resolver.symbols[id]?.kind as SymbolKind),
      ),
      'unique_name',
    )
  );
}

function countCallers(symbols: GraphSymbol[], edges: GraphEdge[]): void {
  const callers = new Map<number, Set<string>>();
  for (const edge of edges) {
    if (edge.kind !== 'calls' || edge.target === null) continue;
    const set = callers.get(edge.target) ?? new Set<string>();
    set.add(edge.source === null ? `file:${edge.file}` : String(edge.source));
    callers.set(edge.target, set);
  }
  for (const [id, set] of callers) (symbols[id] as GraphSymbol).callerCount = set.size;
}

function statsOf(files: number, symbols: GraphSymbol[], sites: GraphEdge[], edges: GraphEdge[]): GraphStats {
  const byKind = Object.fromEntries(EDGE_KINDS.map((kind) => [kind, 0])) as Record<EdgeKind, number>;
  for (const edge of edges) byKind[edge.kind]++;
  const byResolution: Partial<Record<Resolution, number>> = {};
  let total = 0;
  let resolved = 0;
  for (const edge of sites) {
    if (edge.kind !== 'calls') continue;
    total++;
    if (edge.resolution) {
      resolved++;
      byResolution[edge.resolution] = (byResolution[edge.resolution] ?? 0) + 1;
    }
  }
  return {
    files,
    symbols: symbols.length,
    edges: byKind,
    calls: { total, resolved, by_resolution: byResolution },
  };
}
