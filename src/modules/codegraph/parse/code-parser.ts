import { createRequire } from 'node:module';
import { Language, type Node, Parser, Query, type QueryCapture, type QueryMatch } from 'web-tree-sitter';
import type { LanguageSpec } from './language-spec.ts';
import { languageOf } from './languages.ts';
import { headOf, lineOf, precedingDoc, receiverText, typeReference } from './syntax.ts';
import type { ParsedCall, ParsedFile, ParsedHeritage, ParsedSymbol, SymbolKind } from './types.ts';

/**
 * Source text -> symbols, calls, imports and base types, with tree-sitter (web-tree-sitter and
 * the grammars of `@vscode/tree-sitter-wasm`). Pure apart from loading the grammars once per
 * process: the same text always gives the same `ParsedFile`.
 *
 *   text ──parse──> syntax tree ──definitions query──> symbols (nested by range: parent, owner)
 *                              ├─calls query────────> calls, each inside its innermost symbol
 *                              ├─heritage query─────> extends / implements of classes
 *                              └─spec.imports───────> imports (top level)
 */

interface LoadedLanguage {
  spec: LanguageSpec;
  language: Language;
  /** The spec's four queries as one, so each tree is walked once. */
  query: Query;
}

const require = createRequire(import.meta.url);
const grammarPath = (file: string): string => require.resolve(`@vscode/tree-sitter-wasm/wasm/${file}`);

let runtime: Promise<Parser> | undefined;
const loaded = new Map<string, Promise<LoadedLanguage>>();

/** The WebAssembly runtime and one parser, made once per process (parsing is synchronous). */
function parserRuntime(): Promise<Parser> {
  runtime ??= Parser.init().then(() => new Parser());
  return runtime;
}

/** A grammar and its compiled queries, loaded on first use and kept for the process's life. */
function load(spec: LanguageSpec): Promise<LoadedLanguage> {
  let entry = loaded.get(spec.id);
  if (!entry) {
    entry = (async () => {
      await parserRuntime();
      const language = await Language.load(grammarPath(spec.grammar));
      const source = [spec.definitions, spec.calls, spec.heritage, spec.locals].join('\n');
      return { spec, language, query: new Query(language, source) };
    })();
    // A failed load is not cached, so a later call tries again.
    entry.catch(() => loaded.delete(spec.id));
    loaded.set(spec.id, entry);
  }
  return entry;
}

/** True when the code graph reads files named like `path`. */
export const isSourceFile = (path: string): boolean => languageOf(path) !== undefined;

/**
 * Parses one file. Undefined for a language the code graph does not read. A file with syntax
 * errors is read as far as tree-sitter recovers (`hasErrors`).
 */
export async function parseSource(path: string, text: string): Promise<ParsedFile | undefined> {
  const spec = languageOf(path);
  if (!spec) return undefined;
  const language = await load(spec);
  const parser = await parserRuntime();
  parser.setLanguage(language.language);
  const tree = parser.parse(text);
  if (!tree) throw new Error(`tree-sitter returned no tree for ${path}`);
  try {
    return extract(language, path, tree.rootNode);
  } finally {
    tree.delete();
  }
}

/** A definition found by the query, before it becomes a `ParsedSymbol`. */
interface Definition {
  node: Node;
  name: string;
  /** Where its name starts: the name of a function bound to a variable is not a local. */
  nameStart: number;
  kind: SymbolKind;
  parent: number | null;
  /** The name `this` has inside it (a Go receiver variable), when not the language's own. */
  self: string | null;
}

const CLASS_LIKE: ReadonlySet<SymbolKind> = new Set(['class', 'interface', 'enum', 'type']);

/** The query's matches sorted by what they found. */
interface Found {
  definitions: QueryMatch[];
  calls: QueryMatch[];
  heritage: QueryCapture[];
  locals: QueryCapture[];
}

function sortMatches(matches: QueryMatch[]): Found {
  const found: Found = { definitions: [], calls: [], heritage: [], locals: [] };
  for (const match of matches) {
    const first = match.captures[0];
    if (!first) continue;
    if (match.captures.some((capture) => capture.name.startsWith('definition.')))
      found.definitions.push(match);
    else if (match.captures.some((capture) => capture.name === 'call')) found.calls.push(match);
    else if (first.name === 'extends' || first.name === 'implements') found.heritage.push(first);
    else if (first.name === 'local') found.locals.push(first);
  }
  return found;
}

function extract(loaded: LoadedLanguage, path: string, root: Node): ParsedFile {
  const { spec } = loaded;
  const found = sortMatches(loaded.query.matches(root));
  const definitions = findDefinitions(spec, found.definitions);
  const symbols = definitions.map((definition) => toSymbol(spec, definitions, definition));
  // Qualified names follow nesting; parents come before their children in `definitions`.
  for (const symbol of symbols) {
    const parent = symbol.parent === null ? undefined : symbols[symbol.parent];
    symbol.qualifiedName = parent
      ? `${parent.qualifiedName}.${symbol.name}`
      : symbol.owner
        ? `${symbol.owner}.${symbol.name}`
        : symbol.name;
  }
  const enclosing = (node: Node) => innermost(definitions, node.startIndex);
  return {
    path,
    language: spec.id,
    symbols,
    calls: findCalls(spec, found.calls, definitions, enclosing),
    imports: spec.imports(root),
    heritage: findHeritage(found.heritage, definitions, enclosing),
    locals: findLocals(found.locals, definitions, enclosing),
    hasErrors: root.hasError,
  };
}

function findDefinitions(spec: LanguageSpec, matches: QueryMatch[]): Definition[] {
  const byNode = new Map<number, Omit<Definition, 'parent'>>();
  for (const match of matches) {
    const declaration = match.captures.find((capture) => capture.name.startsWith('definition.'));
    const name = match.captures.find((capture) => capture.name === 'name');
    if (!declaration || !name) continue;
    const kind = declaration.name.slice('definition.'.length) as SymbolKind;
    const existing = byNode.get(declaration.node.id);
    // Where two patterns match one node (a Go interface is also a type spec), the specific one wins.
    if (existing && existing.kind !== 'type') continue;
    byNode.set(declaration.node.id, {
      node: declaration.node,
      name: name.node.text,
      nameStart: name.node.startIndex,
      kind,
      self: spec.receiver?.(declaration.node)?.self ?? null,
    });
  }
  const sorted = [...byNode.values()].sort(
    (a, b) => a.node.startIndex - b.node.startIndex || b.node.endIndex - a.node.endIndex,
  );
  // Nesting from ranges: a stack of the definitions still open at each start.
  const open: number[] = [];
  return sorted.map((definition, index) => {
    while (
      open.length > 0 &&
      (sorted[open.at(-1) as number]?.node.endIndex ?? 0) <= definition.node.startIndex
    ) {
      open.pop();
    }
    const parent = open.at(-1) ?? null;
    open.push(index);
    return { ...definition, parent };
  });
}

function toSymbol(spec: LanguageSpec, definitions: Definition[], definition: Definition): ParsedSymbol {
  const { node, parent } = definition;
  const parentDefinition = parent === null ? undefined : definitions[parent];
  const inType = parentDefinition !== undefined && CLASS_LIKE.has(parentDefinition.kind);
  // A function declared in a class body is a method (Python's `def` inside `class`).
  const kind: SymbolKind = definition.kind === 'function' && inType ? 'method' : definition.kind;
  const owner =
    spec.receiver?.(node)?.owner ?? (kind === 'method' && inType ? (parentDefinition?.name ?? null) : null);
  return {
    kind,
    name: definition.name,
    qualifiedName: definition.name,
    parent,
    owner,
    startLine: lineOf(node),
    endLine: node.endPosition.row + 1,
    signature: signatureOf(node),
    doc: spec.doc ? spec.doc(node) : precedingDoc(node, spec.declarationWrappers),
  };
}

/** The declaration's head; a function bound to a name shows the binding (`const f = (a) =>`). */
function signatureOf(node: Node): string {
  const value = node.childForFieldName('value');
  const body = node.childForFieldName('body') ?? value?.childForFieldName('body') ?? null;
  const head = headOf(node, body);
  if (node.type === 'variable_declarator') {
    const keyword = node.parent?.firstChild?.text;
    return keyword && ['const', 'let', 'var'].includes(keyword) ? `${keyword} ${head}` : head;
  }
  if (node.type === 'type_spec' || node.type === 'type_alias') return `type ${head}`;
  return head;
}

/** Index of the innermost definition whose range holds `position`; null at the top level. */
function innermost(definitions: Definition[], position: number): number | null {
  // The last definition starting at or before the position, then up its parents.
  let low = 0;
  let high = definitions.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if ((definitions[middle]?.node.startIndex ?? 0) <= position) {
      found = middle;
      low = middle + 1;
    } else high = middle - 1;
  }
  let candidate: number | null = found < 0 ? null : found;
  while (candidate !== null) {
    const definition = definitions[candidate] as Definition;
    if (definition.node.endIndex > position) return candidate;
    candidate = definition.parent;
  }
  return null;
}

function findCalls(
  spec: LanguageSpec,
  matches: QueryMatch[],
  definitions: Definition[],
  enclosing: (node: Node) => number | null,
): ParsedCall[] {
  const calls: ParsedCall[] = [];
  for (const match of matches) {
    const call = match.captures.find((capture) => capture.name === 'call');
    const name = match.captures.find((capture) => capture.name === 'name');
    if (!call || !name) continue;
    const receiverNode = match.captures.find((capture) => capture.name === 'receiver')?.node;
    const caller = enclosing(call.node);
    calls.push({
      caller,
      name: name.node.text,
      receiver: receiverNode ? asSelf(spec, definitions, caller, receiverText(receiverNode)) : null,
      line: lineOf(name.node),
    });
  }
  return calls;
}

/** Rewrites the language's name for "this object" (`self`, a Go receiver) to `this`. */
function asSelf(
  spec: LanguageSpec,
  definitions: Definition[],
  caller: number | null,
  receiver: string,
): string {
  const [head, ...rest] = receiver.split('.');
  if (head === undefined) return receiver;
  let isSelf = spec.selfNames.includes(head);
  for (let at = caller; !isSelf && at !== null; at = definitions[at]?.parent ?? null) {
    if (definitions[at]?.self === head) isSelf = true;
  }
  return isSelf ? ['this', ...rest].join('.') : receiver;
}

function findHeritage(
  captures: QueryCapture[],
  definitions: Definition[],
  enclosing: (node: Node) => number | null,
): ParsedHeritage[] {
  const heritage: ParsedHeritage[] = [];
  for (const capture of captures) {
    const symbol = enclosing(capture.node);
    const reference = typeReference(capture.node);
    if (symbol === null || !reference) continue;
    if (!CLASS_LIKE.has(definitions[symbol]?.kind as SymbolKind)) continue;
    heritage.push({
      symbol,
      kind: capture.name === 'implements' ? 'implements' : 'extends',
      name: reference.name,
      qualifier: reference.qualifier,
      line: lineOf(capture.node),
    });
  }
  return heritage;
}

function findLocals(
  captures: QueryCapture[],
  definitions: Definition[],
  enclosing: (node: Node) => number | null,
): ParsedFile['locals'] {
  const definitionNames = new Set(definitions.map((definition) => definition.nameStart));
  const seen = new Set<string>();
  const locals: ParsedFile['locals'] = [];
  for (const capture of captures) {
    if (definitionNames.has(capture.node.startIndex)) continue;
    const scope = enclosing(capture.node);
    const name = capture.node.text;
    const key = `${scope}:${name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    locals.push({ scope, name });
  }
  return locals;
}
