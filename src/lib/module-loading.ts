import { enableCompileCache, type ResolveFnOutput, registerHooks } from 'node:module';

/**
 * Prepares a process's module loading before an entry point (`src/main.ts`, `src/worker.ts`)
 * loads the service's ~1,000 modules with a dynamic `import()`: static imports would load
 * before this runs.
 *
 * - V8's compiled code is kept on disk (the OS temporary directory, or NODE_COMPILE_CACHE),
 *   so a restart skips compiling the modules again.
 * - drizzle-orm's modules are resolved without Node reading the package's `package.json` for
 *   each of them. Node 24 (24.21) finds a module's format from its package scope, and that
 *   lookup copies the package data with an object spread that runs the lazy `exports` getter:
 *   drizzle-orm 0.45's `exports` is 170 KB of JSON with 600 entries, so every one of the ~230
 *   drizzle modules the service loads parsed it again. That was 60% of the import's CPU and
 *   ~70 MB of resident memory (bench/RESULTS.md, "Start-up"). Inside drizzle-orm (a
 *   `"type": "module"` package whose files import one another as `./x.js`) a relative `.js`
 *   import is a module file next to its importer; a bare `drizzle-orm[/...]` import from this
 *   project resolves to the same file whichever of our files asks, so it is resolved once.
 *   drizzle-orm 1.0 ships a two-entry `exports` map; with it, this hook can go.
 */
export function prepareModuleLoading(): void {
  enableCompileCache();
  const drizzleRoot = new URL('./', import.meta.resolve('drizzle-orm')).href;
  const resolvedFromProject = new Map<string, ResolveFnOutput>();
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL;
      if (
        parent?.startsWith(drizzleRoot) &&
        (specifier.startsWith('./') || specifier.startsWith('../')) &&
        specifier.endsWith('.js')
      ) {
        return { url: new URL(specifier, parent).href, format: 'module', shortCircuit: true };
      }
      if (
        (specifier === 'drizzle-orm' || specifier.startsWith('drizzle-orm/')) &&
        parent !== undefined &&
        !parent.includes('/node_modules/')
      ) {
        const key = `${specifier}\0${context.conditions.join(',')}`;
        let resolved = resolvedFromProject.get(key);
        if (!resolved) {
          resolved = { ...nextResolve(specifier, context), shortCircuit: true };
          resolvedFromProject.set(key, resolved);
        }
        return resolved;
      }
      return nextResolve(specifier, context);
    },
  });
}
