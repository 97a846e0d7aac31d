import type { Node } from 'web-tree-sitter';
import type { LanguageSpec } from './language-spec.ts';
import { lineOf } from './syntax.ts';
import type { ParsedImport } from './types.ts';

const DEFINITIONS = `
(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(annotation_type_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
`;

const CALLS = `
(method_invocation !object name: (identifier) @name) @call
(method_invocation object: (_) @receiver name: (identifier) @name) @call
(object_creation_expression type: (type_identifier) @name) @call
(object_creation_expression type: (generic_type (type_identifier) @name)) @call
`;

const HERITAGE = `
(superclass (_) @extends)
(super_interfaces (type_list (_) @implements))
(extends_interfaces (type_list (_) @extends))
`;

const LOCALS = `
(variable_declarator name: (identifier) @local)
(formal_parameter name: (identifier) @local)
(catch_formal_parameter name: (identifier) @local)
(enhanced_for_statement name: (identifier) @local)
`;

/**
 * `import a.b.C;` takes `C` from package `a.b`; `import a.b.*;` every class of it;
 * `import static a.b.C.m;` the static member `m` of class `a.b.C`.
 */
function readImports(root: Node): ParsedImport[] {
  return root.namedChildren.flatMap((node): ParsedImport[] => {
    if (node?.type !== 'import_declaration') return [];
    const path = node.namedChildren.find(
      (child) => child?.type === 'scoped_identifier' || child?.type === 'identifier',
    )?.text;
    if (!path) return [];
    const line = lineOf(node);
    if (node.namedChildren.some((child) => child?.type === 'asterisk')) {
      return [{ module: path, imported: '*', local: null, line, reexport: false }];
    }
    const cut = path.lastIndexOf('.');
    const name = path.slice(cut + 1);
    return [
      { module: cut < 0 ? '' : path.slice(0, cut), imported: name, local: name, line, reexport: false },
    ];
  });
}

export const java: LanguageSpec = {
  id: 'java',
  extensions: ['.java'],
  grammar: 'tree-sitter-java.wasm',
  definitions: DEFINITIONS,
  calls: CALLS,
  heritage: HERITAGE,
  locals: LOCALS,
  selfNames: ['this'],
  bareMethodCalls: true,
  declarationWrappers: new Set(),
  imports: readImports,
};
