import path from 'node:path/posix';
import type { LanguageId } from '../parse/types.ts';

/**
 * Which files of the project an import names, by each language's rules, from paths alone
 * (no tsconfig, go.mod or sys.path is read):
 *
 * - TypeScript/JavaScript: relative specifiers (`./x`, `../y.js`), with the extensions and
 *   `index` files Node and TypeScript try (a `.js` specifier also finds its `.ts` source);
 *   bare specifiers are packages, outside the project.
 * - Python: relative modules (`.x`, `..pkg.y`) from the importing file's package; absolute
 *   ones (`pkg.mod`) as `pkg/mod.py` or `pkg/mod/__init__.py` at the project root, or under
 *   exactly one folder of it (a `src/` layout).
 * - Go: an import path names the package folder that matches its longest tail
 *   (`github.com/acme/shop/internal/store` -> `internal/store`); paths whose first element has
 *   no dot are the standard library.
 * - Java: `a.b.C` is `a/b/C.java` at the root or under one source folder (`src/main/java`);
 *   a package (`a.b`) is the folder holding it.
 */
export interface ModulePaths {
  /** The project files `module` names, seen from `from`; empty when it is outside the project. */
  resolve(from: string, language: LanguageId, module: string): string[];
  /** The project files of `file`'s folder in the same language (a Go package, a Java package). */
  siblings(file: string): string[];
}

const SCRIPT_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.d.ts', '.js', '.jsx', '.mjs', '.cjs'];
const SCRIPT_LANGUAGES: ReadonlySet<LanguageId> = new Set(['typescript', 'tsx', 'javascript']);

export function createModulePaths(files: readonly string[]): ModulePaths {
  const present = new Set(files);
  const byFolder = new Map<string, string[]>();
  for (const file of files) {
    const folder = path.dirname(file);
    const list = byFolder.get(folder) ?? [];
    list.push(file);
    byFolder.set(folder, list);
  }
  // Tails of paths, for the languages whose imports name a path from some unknown root.
  const pythonModules = tails(
    files.filter((file) => /\.pyi?$/.test(file)).map((file) => [pythonModuleName(file), file]),
    '.',
  );
  const javaClasses = tails(
    files.filter((file) => file.endsWith('.java')).map((file) => [file.slice(0, -'.java'.length), file]),
    '/',
  );
  const folderTails = (ext: string) =>
    tails(
      [...byFolder.entries()]
        .filter(([, list]) => list.some((file) => file.endsWith(ext)))
        .map(([folder]) => [folder, folder]),
      '/',
    );
  const goFolders = folderTails('.go');
  const javaFolders = folderTails('.java');

  /** The one value under `key`, preferring the one whose whole name is `key` (the root). */
  const lookup = (map: Map<string, Array<[string, string]>>, key: string): string | undefined => {
    const found = map.get(key);
    const exact = found?.find(([name]) => name === key);
    if (exact) return exact[1];
    return found?.length === 1 ? found[0]?.[1] : undefined;
  };
  const folderFiles = (folder: string, ext: string) =>
    (byFolder.get(folder) ?? []).filter((file) => file.endsWith(ext));

  function resolveScript(from: string, module: string): string[] {
    if (!module.startsWith('.')) return [];
    const base = path.normalize(path.join(path.dirname(from), module));
    const stem = base.replace(/\.(m|c)?jsx?$/, '');
    const candidates = [
      base,
      ...SCRIPT_EXTENSIONS.map((ext) => `${stem}${ext}`),
      ...SCRIPT_EXTENSIONS.map((ext) => `${base}/index${ext}`),
    ];
    const found = candidates.find((candidate) => present.has(candidate));
    return found ? [found] : [];
  }

  function resolvePython(from: string, module: string): string[] {
    const dots = /^\.*/.exec(module)?.[0].length ?? 0;
    const rest = module.slice(dots);
    if (dots > 0) {
      let folder = path.dirname(from);
      for (let up = 1; up < dots; up++) folder = path.dirname(folder);
      const base = rest ? path.join(folder, ...rest.split('.')) : folder;
      return [`${base}.py`, `${base}/__init__.py`, `${base}.pyi`].filter((c) => present.has(c)).slice(0, 1);
    }
    const file = lookup(pythonModules, rest);
    return file === undefined ? [] : [file];
  }

  function resolveGo(module: string): string[] {
    const parts = module.split('/');
    if (!parts[0]?.includes('.')) return [];
    for (let start = 0; start < parts.length; start++) {
      const folder = lookup(goFolders, parts.slice(start).join('/'));
      if (folder !== undefined) return folderFiles(folder, '.go');
    }
    return [];
  }

  function resolveJava(module: string): string[] {
    const asPath = module.replaceAll('.', '/');
    const classFile = lookup(javaClasses, asPath);
    if (classFile !== undefined) return [classFile];
    const folder = lookup(javaFolders, asPath);
    return folder === undefined ? [] : folderFiles(folder, '.java');
  }

  return {
    resolve(from, language, module) {
      if (SCRIPT_LANGUAGES.has(language)) return resolveScript(from, module);
      if (language === 'python') return resolvePython(from, module);
      if (language === 'go') return resolveGo(module);
      return resolveJava(module);
    },
    siblings(file) {
      const ext = path.extname(file);
      return (byFolder.get(path.dirname(file)) ?? []).filter((other) => path.extname(other) === ext);
    },
  };
}

/** `pkg/mod.py` -> `pkg.mod`; `pkg/__init__.py` -> `pkg`. */
function pythonModuleName(file: string): string {
  return file
    .replace(/\.pyi?$/, '')
    .replace(/\/__init__$/, '')
    .replaceAll('/', '.');
}

/**
 * Every tail of every name (`a.b.c` -> `c`, `b.c`, `a.b.c`) mapped to the entries whose name
 * ends so, so an import written from an unknown root finds its file in one lookup.
 */
function tails(entries: Array<[string, string]>, separator: string): Map<string, Array<[string, string]>> {
  const map = new Map<string, Array<[string, string]>>();
  for (const entry of entries) {
    const parts = entry[0].split(separator);
    for (let start = 0; start < parts.length; start++) {
      const tail = parts.slice(start).join(separator);
      const list = map.get(tail) ?? [];
      list.push(entry);
      map.set(tail, list);
    }
  }
  return map;
}
