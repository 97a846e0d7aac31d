/**
 * `npm run web:build` (run by `npm ci` and `npm install`): generates the console's API types
 * from the committed openapi.json, then builds the console into web/dist, which the service
 * serves at `/`. `--types-only` stops after the types (the type check runs it).
 *
 * An install without development dependencies (`npm ci --omit=dev`) has no Vite: the console
 * already in web/dist is kept, and without one the service serves the API alone.
 */
import fs from 'node:fs';
import path from 'node:path';

const webDir = import.meta.dirname;
const root = path.resolve(webDir, '..');

async function optional<T>(name: string): Promise<T | undefined> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

async function generateTypes(): Promise<boolean> {
  const generator = await optional<typeof import('openapi-typescript')>('openapi-typescript');
  if (!generator) return false;
  const document = JSON.parse(fs.readFileSync(path.join(root, 'openapi.json'), 'utf8'));
  const types = await generator.default(document, { alphabetize: false });
  const target = path.join(webDir, 'src/api/schema.d.ts');
  const text = `// Generated from openapi.json by web/build.ts: do not edit.\n${types}`;
  if (!fs.existsSync(target) || fs.readFileSync(target, 'utf8') !== text) fs.writeFileSync(target, text);
  return true;
}

async function main(): Promise<void> {
  const typesOnly = process.argv.includes('--types-only');
  const generated = await generateTypes();
  if (typesOnly) {
    if (!generated) throw new Error('openapi-typescript is not installed: run npm ci');
    return;
  }
  const vite = await optional<typeof import('vite')>('vite');
  if (!generated || !vite) {
    const built = fs.existsSync(path.join(webDir, 'dist/index.html'));
    console.warn(
      `web console: not built (development dependencies are not installed)${built ? '; keeping the existing build' : '; the service will serve the API only'}`,
    );
    return;
  }
  const started = performance.now();
  await vite.build({ configFile: path.join(webDir, 'vite.config.ts'), logLevel: 'warn' });
  console.log(`web console: built into web/dist in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
