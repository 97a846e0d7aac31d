import type { Node } from 'web-tree-sitter';
import type { LanguageId, ParsedImport } from './types.ts';

/**
 * How the parser reads one language: tree-sitter queries for what is uniform across
 * languages (definitions, calls, base types), and small functions for what is not (imports,
 * doc comments, a Go method's receiver).
 *
 * Capture names the queries use:
 * - definitions: `@definition.<kind>` on the declaration, `@name` on its name;
 * - calls: `@call` on the call, `@name` on the name called, `@receiver` on what it is called on;
 * - heritage: `@extends` or `@implements` on each base type;
 * - locals: `@local` on each name a variable or parameter binds.
 */
export interface LanguageSpec {
  id: LanguageId;
  /** File name endings, with the dot: `.ts`. */
  extensions: readonly string[];
  /** The grammar's file in `@vscode/tree-sitter-wasm/wasm/`. */
  grammar: string;
  definitions: string;
  calls: string;
  heritage: string;
  locals: string;
  /** Receivers that mean "this object" (`this`, `self`); calls on them are read as calls on `this`. */
  selfNames: readonly string[];
  /**
   * True when a bare call may name a method of the enclosing class (Java's `helper()` inside
   * a method); elsewhere a method is reached through `this`/`self` only.
   */
  bareMethodCalls: boolean;
  /** Nodes a declaration sits in whose preceding comment documents it (`export_statement`). */
  declarationWrappers: ReadonlySet<string>;
  /** The file's imports (top level only). */
  imports(root: Node): ParsedImport[];
  /** The doc of a declaration; by default the comment block right above it. */
  doc?(declaration: Node): string | null;
  /**
   * The type a method belongs to when nesting does not say (a Go method's receiver type), and
   * the name `this` has in it (the receiver variable).
   */
  receiver?(declaration: Node): { owner: string; self: string | null } | null;
}
