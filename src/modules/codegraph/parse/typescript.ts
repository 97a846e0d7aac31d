import type { Node } from 'web-tree-sitter';
import type { LanguageSpec } from './language-spec.ts';
import { lineOf, stringValue } from './syntax.ts';
import type { ParsedImport } from './types.ts';

/** Definitions shared by the JavaScript and TypeScript grammars. */
const SHARED_DEFINITIONS = `
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(pair
  key: (property_identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.method
`;

const TYPESCRIPT_DEFINITIONS = `${SHARED_DEFINITIONS}
(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(abstract_method_signature name: (property_identifier) @name) @definition.method
(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method
(interface_declaration name: (type_identifier) @name) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
`;

const JAVASCRIPT_DEFINITIONS = `${SHARED_DEFINITIONS}
(class_declaration name: (identifier) @name) @definition.class
(field_definition
  property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method
`;

const CALLS = `
(call_expression function: (identifier) @name) @call
(call_expression
  function: (member_expression
    object: (_) @receiver
    property: [(property_identifier) (private_property_identifier)] @name)) @call
(new_expression constructor: (identifier) @name) @call
(new_expression
  constructor: (member_expression object: (_) @receiver property: (property_identifier) @name)) @call
`;

const TYPESCRIPT_HERITAGE = `
(class_heritage (extends_clause value: (_) @extends))
(class_heritage (implements_clause (_) @implements))
(extends_type_clause type: (_) @extends)
`;

const JAVASCRIPT_HERITAGE = `
(class_heritage (_) @extends)
`;

/** Names bound by variables and parameters: a call of such a name is not a call of a project function. */
const SHARED_LOCALS = `
(variable_declarator name: (identifier) @local)
(object_pattern (shorthand_property_identifier_pattern) @local)
(pair_pattern value: (identifier) @local)
(array_pattern (identifier) @local)
(assignment_pattern left: (identifier) @local)
(rest_pattern (identifier) @local)
(arrow_function parameter: (identifier) @local)
(catch_clause parameter: (identifier) @local)
(for_in_statement left: (identifier) @local)
`;

const TYPESCRIPT_LOCALS = `${SHARED_LOCALS}
(required_parameter pattern: (identifier) @local)
(optional_parameter pattern: (identifier) @local)
`;

const JAVASCRIPT_LOCALS = `${SHARED_LOCALS}
(formal_parameters (identifier) @local)
`;

const WRAPPERS = new Set([
  'export_statement',
  'lexical_declaration',
  'variable_declaration',
  'ambient_declaration',
]);

/**
 * ES module imports and re-exports, and CommonJS `require` bound at the top level
 * (`const x = require('./x')`, `const {a, b: c} = require('./x')`).
 */
function readImports(root: Node): ParsedImport[] {
  const imports: ParsedImport[] = [];
  for (const node of root.namedChildren) {
    if (!node) continue;
    if (node.type === 'import_statement') imports.push(...esImport(node));
    else if (node.type === 'export_statement' && node.childForFieldName('source'))
      imports.push(...reexport(node));
    else if (node.type === 'lexical_declaration' || node.type === 'variable_declaration') {
      imports.push(...requires(node));
    }
  }
  return imports;
}

function esImport(node: Node): ParsedImport[] {
  const module = stringValue(node.childForFieldName('source'));
  if (!module) return [];
  const line = lineOf(node);
  const base = { module, line, reexport: false };
  const clause = node.namedChildren.find((child) => child?.type === 'import_clause');
  if (!clause) return [{ ...base, imported: null, local: null }];
  return clause.namedChildren.flatMap((part): ParsedImport[] => {
    if (!part) return [];
    if (part.type === 'identifier') return [{ ...base, imported: 'default', local: part.text }];
    if (part.type === 'namespace_import') {
      const local = part.namedChildren[0]?.text ?? null;
      return [{ ...base, imported: null, local }];
    }
    if (part.type === 'named_imports') {
      return part.namedChildren.flatMap((specifier) => {
        if (specifier?.type !== 'import_specifier') return [];
        const name = specifier.childForFieldName('name')?.text;
        if (!name) return [];
        const local = specifier.childForFieldName('alias')?.text ?? name;
        return [{ ...base, imported: name, local }];
      });
    }
    return [];
  });
}

function reexport(node: Node): ParsedImport[] {
  const module = stringValue(node.childForFieldName('source'));
  if (!module) return [];
  const base = { module, line: lineOf(node), reexport: true };
  const clause = node.namedChildren.find(
    (child) => child?.type === 'export_clause' || child?.type === 'namespace_export',
  );
  if (!clause) return [{ ...base, imported: '*', local: null }];
  if (clause.type === 'namespace_export') {
    return [{ ...base, imported: null, local: clause.namedChildren[0]?.text ?? null }];
  }
  return clause.namedChildren.flatMap((specifier) => {
    if (specifier?.type !== 'export_specifier') return [];
    const name = specifier.childForFieldName('name')?.text;
    if (!name) return [];
    return [{ ...base, imported: name, local: specifier.childForFieldName('alias')?.text ?? name }];
  });
}

function requires(declaration: Node): ParsedImport[] {
  return declaration.namedChildren.flatMap((declarator): ParsedImport[] => {
    if (declarator?.type !== 'variable_declarator') return [];
    const value = declarator.childForFieldName('value');
    if (value?.type !== 'call_expression' || value.childForFieldName('function')?.text !== 'require')
      return [];
    const module = stringValue(value.childForFieldName('arguments')?.namedChildren[0] ?? null);
    const name = declarator.childForFieldName('name');
    if (!module || !name) return [];
    const base = { module, line: lineOf(declarator), reexport: false };
    if (name.type === 'identifier') return [{ ...base, imported: null, local: name.text }];
    if (name.type !== 'object_pattern') return [];
    return name.namedChildren.flatMap((property) => {
      if (property?.type === 'shorthand_property_identifier_pattern') {
        return [{ ...base, imported: property.text, local: property.text }];
      }
      if (property?.type === 'pair_pattern') {
        const key = property.childForFieldName('key')?.text;
        const local = property.childForFieldName('value');
        if (key && local?.type === 'identifier') return [{ ...base, imported: key, local: local.text }];
      }
      return [];
    });
  });
}

const shared = {
  calls: CALLS,
  selfNames: ['this'],
  bareMethodCalls: false,
  declarationWrappers: WRAPPERS,
  imports: readImports,
} as const;

export const typescript: LanguageSpec = {
  ...shared,
  id: 'typescript',
  extensions: ['.ts', '.mts', '.cts'],
  grammar: 'tree-sitter-typescript.wasm',
  definitions: TYPESCRIPT_DEFINITIONS,
  heritage: TYPESCRIPT_HERITAGE,
  locals: TYPESCRIPT_LOCALS,
};

export const tsx: LanguageSpec = {
  ...typescript,
  id: 'tsx',
  extensions: ['.tsx'],
  grammar: 'tree-sitter-tsx.wasm',
};

export const javascript: LanguageSpec = {
  ...shared,
  id: 'javascript',
  extensions: ['.js', '.mjs', '.cjs', '.jsx'],
  grammar: 'tree-sitter-javascript.wasm',
  definitions: JAVASCRIPT_DEFINITIONS,
  heritage: JAVASCRIPT_HERITAGE,
  locals: JAVASCRIPT_LOCALS,
};
