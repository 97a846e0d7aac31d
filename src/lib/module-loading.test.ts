import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

interface Loaded {
  /** Every module URL loaded, sorted. */
  urls: string[];
  /** Resolutions of drizzle-orm specifiers that reached Node's own resolver. */
  defaultResolutions: number;
  exports: string[];
}

/**
 * Loads drizzle-orm as the service does (bare imports, then its own modules), in a fresh process, with or without `prepareModuleLoading()`. A hook registered first
 * sits below it in the chain: it sees only what reaches Node's resolver.
 */
function load(prepared: boolean): Loaded {
  const code = `
import { registerHooks } from 'node:module';
const urls = [];
let defaultResolutions = 0;
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith('drizzle-orm') || context.parentURL?.includes('/node_modules/drizzle-orm/')) defaultResolutions++;
    return next(specifier, context);
  },
  load(url, context, next) {
    urls.push(url);
    return next(url, context);
  },
});
${prepared ? `const { prepareModuleLoading } = await import(${JSON.stringify(path.join(root, 'src/lib/module-loading.ts'))}); prepareModuleLoading();` : ''}
const orm = await import('drizzle-orm');
await import('drizzle-orm/pg-core');
process.stdout.write(JSON.stringify({
  urls: urls.filter((url) => !url.includes('module-loading')).sort(),
  defaultResolutions,
  exports: Object.keys(orm).sort(),
}));`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    encoding: 'utf8',
  });
  return JSON.parse(output) as Loaded;
}

describe('prepareModuleLoading', () => {
  it('loads the same drizzle-orm modules, resolving almost none of them through Node', () => {
    const plain = load(false);
    const prepared = load(true);
    expect(prepared.urls).toEqual(plain.urls);
    expect(prepared.exports).toEqual(plain.exports);
    const drizzleModules = plain.urls.filter((url) => url.includes('/node_modules/drizzle-orm/')).length;
    expect(drizzleModules).toBeGreaterThan(50);
    // Without it, every import of and inside drizzle-orm reads its 170 KB package.json again.
    expect(plain.defaultResolutions).toBeGreaterThan(drizzleModules);
    // With it, only the first import of each bare specifier from this project reaches Node.
    expect(prepared.defaultResolutions).toBeLessThan(10);
    // Two fresh processes, the first loading drizzle-orm the slow way: seconds on a busy machine.
  }, 180_000);
});
