import type { Node } from 'web-tree-sitter';
import type { LanguageSpec } from './language-spec.ts';
import { docstring, lineOf } from './syntax.ts';
import type { ParsedImport } from './types.ts';

const DEFINITIONS = `
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function
`;

const CALLS = `
(call function: (identifier) @name) @call
(call function: (attribute object: (_) @receiver attribute: (identifier) @name)) @call
`;

const HERITAGE = `
(class_definition superclasses: (argument_list [(identifier) (attribute)] @extends))
`;

const LOCALS = `
(parameters (identifier) @local)
(typed_parameter (identifier) @local)
(default_parameter name: (identifier) @local)
(typed_default_parameter name: (identifier) @local)
(list_splat_pattern (identifier) @local)
(dictionary_splat_pattern (identifier) @local)
(assignment left: (identifier) @local)
(pattern_list (identifier) @local)
(for_statement left: (identifier) @local)
(as_pattern_target (identifier) @local)
`;

/**
 * `import a.b as c` binds the module `a.b` to `c` (to `a.b` without `as`); `from m import x as y`
 * binds `x` of `m` to `y`; `from m import *` takes every public name of `m`.
 */
function readImports(root: Node): ParsedImport[] {
  const imports: ParsedImport[] = [];
  for (const node of root.namedChildren) {
    if (!node) continue;
    const line = lineOf(node);
    if (node.type === 'import_statement') {
      for (const name of node.childrenForFieldName('name')) {
        const { target, alias } = aliased(name);
        imports.push({ module: target, imported: null, local: alias ?? target, line, reexport: false });
      }
    } else if (node.type === 'import_from_statement') {
      const module = node.childForFieldName('module_name')?.text.replace(/\s+/g, '');
      if (!module) continue;
      if (node.namedChildren.some((child) => child?.type === 'wildcard_import')) {
        imports.push({ module, imported: '*', local: null, line, reexport: false });
        continue;
      }
      for (const name of node.childrenForFieldName('name')) {
        const { target, alias } = aliased(name);
        imports.push({ module, imported: target, local: alias ?? target, line, reexport: false });
      }
    }
  }
  return imports;
}

function aliased(node: Node): { target: string; alias: string | null } {
  if (node.type === 'aliased_import') {
    return {
      target: node.childForFieldName('name')?.text ?? node.text,
      alias: node.childForFieldName('alias')?.text ?? null,
    };
  }
  return { target: node.text, alias: null };
}

export const python: LanguageSpec = {
  id: 'python',
  extensions: ['.py', '.pyi'],
  grammar: 'tree-sitter-python.wasm',
  definitions: DEFINITIONS,
  calls: CALLS,
  heritage: HERITAGE,
  locals: LOCALS,
  selfNames: ['self', 'cls'],
  bareMethodCalls: false,
  declarationWrappers: new Set(['decorated_definition']),
  imports: readImports,
  doc: (declaration) => docstring(declaration.childForFieldName('body')),
};
