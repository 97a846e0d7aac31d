import type { Node } from 'web-tree-sitter';
import type { LanguageSpec } from './language-spec.ts';
import { lineOf, stringValue, typeReference } from './syntax.ts';
import type { ParsedImport } from './types.ts';

const DEFINITIONS = `
(function_declaration name: (identifier) @name) @definition.function
(method_declaration name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
`;

const CALLS = `
(call_expression function: (identifier) @name) @call
(call_expression function: (selector_expression operand: (_) @receiver field: (field_identifier) @name)) @call
`;

/** Embedded types: a struct's or an interface's members named by type only. */
const HERITAGE = `
(field_declaration_list
  (field_declaration !name type: [(type_identifier) (qualified_type) (pointer_type)] @extends))
(interface_type (type_elem [(type_identifier) (qualified_type)] @extends))
`;

const LOCALS = `
(parameter_declaration name: (identifier) @local)
(short_var_declaration left: (expression_list (identifier) @local))
(var_spec name: (identifier) @local)
(range_clause left: (expression_list (identifier) @local))
`;

/**
 * A Go import binds its package to its explicit name, or to the last element of its path
 * (`github.com/acme/store/v2` binds `store`: a major-version suffix is not the package name).
 */
function readImports(root: Node): ParsedImport[] {
  const specs = root.namedChildren
    .filter((node) => node?.type === 'import_declaration')
    .flatMap((declaration) => declaration?.descendantsOfType('import_spec') ?? []);
  return specs.flatMap((spec): ParsedImport[] => {
    if (!spec) return [];
    const module = stringValue(spec.childForFieldName('path'));
    if (!module) return [];
    const explicit = spec.childForFieldName('name')?.text;
    const line = lineOf(spec);
    if (explicit === '_') return [{ module, imported: null, local: null, line, reexport: false }];
    if (explicit === '.') return [{ module, imported: '*', local: null, line, reexport: false }];
    return [{ module, imported: null, local: explicit ?? packageName(module), line, reexport: false }];
  });
}

function packageName(path: string): string {
  const parts = path.split('/');
  const last = parts.at(-1) ?? path;
  return /^v\d+$/.test(last) && parts.length > 1 ? (parts.at(-2) ?? last) : last;
}

/** `func (s *Store) Get()` belongs to `Store`, and `s` is its `this`. */
function receiver(declaration: Node): { owner: string; self: string | null } | null {
  if (declaration.type !== 'method_declaration') return null;
  const parameter = declaration
    .childForFieldName('receiver')
    ?.namedChildren.find((child) => child?.type === 'parameter_declaration');
  const type = parameter?.childForFieldName('type');
  const reference = type ? typeReference(type) : null;
  if (!reference) return null;
  return { owner: reference.name, self: parameter?.childForFieldName('name')?.text ?? null };
}

export const go: LanguageSpec = {
  id: 'go',
  extensions: ['.go'],
  grammar: 'tree-sitter-go.wasm',
  definitions: DEFINITIONS,
  calls: CALLS,
  heritage: HERITAGE,
  locals: LOCALS,
  selfNames: [],
  bareMethodCalls: false,
  declarationWrappers: new Set(['type_declaration']),
  imports: readImports,
  receiver,
};
