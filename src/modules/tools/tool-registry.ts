import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ToolDefinition } from './tool.ts';

/** Where the tools live: one `<name with dashes>.tool.ts` file each. */
const TOOLS_DIR = fileURLToPath(new URL('./tools/', import.meta.url));

const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * Finds every tool: each `*.tool.ts` file of `dir` whose default export is a tool definition,
 * so adding a tool is adding one file. A file whose export is not a tool, or whose tool name does
 * not match its file name (which keeps names unique), stops the start-up saying which.
 */
export async function loadToolDefinitions(dir: string = TOOLS_DIR): Promise<ToolDefinition[]> {
  const files = fs
    .readdirSync(dir)
    .filter((file) => /\.tool\.ts$/.test(file))
    .sort();
  const definitions: ToolDefinition[] = [];
  for (const file of files) {
    const loaded = (await import(pathToFileURL(path.join(dir, file)).href)) as { default?: unknown };
    const definition = loaded.default as ToolDefinition | undefined;
    if (
      !definition ||
      typeof definition.name !== 'string' ||
      typeof definition.description !== 'string' ||
      typeof definition.execute !== 'function' ||
      typeof definition.input !== 'object' ||
      typeof definition.config !== 'object'
    ) {
      throw new Error(`${file}: the default export must be a tool definition (defineTool({...}))`);
    }
    if (!TOOL_NAME.test(definition.name)) {
      throw new Error(`${file}: tool name "${definition.name}" must be lower-case letters, digits and _`);
    }
    const expected = `${definition.name.replaceAll('_', '-')}.tool.ts`;
    if (file !== expected)
      throw new Error(`${file}: the tool named ${definition.name} belongs in ${expected}`);
    definitions.push(definition);
  }
  return definitions;
}
