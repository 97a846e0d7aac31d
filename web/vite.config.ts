import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);

/**
 * Writes a `.br` and a `.gz` beside every compressible asset, so the service sends them
 * (`@fastify/static`'s `preCompressed`) without compressing at each request.
 */
function precompress(): Plugin {
  return {
    name: 'precompress',
    apply: 'build',
    // After writing: the files as served (Vite rewrites chunks up to generateBundle's end).
    async writeBundle(options, bundle) {
      const dir = options.dir ?? path.resolve(import.meta.dirname, 'dist');
      await Promise.all(
        Object.keys(bundle)
          .filter((name) => /\.(js|css|svg|json)$/.test(name))
          .map(async (name) => {
            const file = path.join(dir, name);
            const bytes = await fs.promises.readFile(file);
            if (bytes.length < 1024) return;
            const [gz, br] = await Promise.all([
              gzip(bytes, { level: 9 }),
              brotli(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9 } }),
            ]);
            await Promise.all([
              fs.promises.writeFile(`${file}.gz`, gz),
              fs.promises.writeFile(`${file}.br`, br),
            ]);
          }),
      );
    },
  };
}

type JsonSchema = { [key: string]: unknown };
const KEPT = [
  'type',
  'required',
  'properties',
  'items',
  'anyOf',
  'enum',
  'const',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'format',
  'default',
  'additionalProperties',
  'pattern',
];

/**
 * `virtual:request-schemas`: the JSON Schema of each operation's JSON request body, by
 * operationId, taken from the committed openapi.json at build time (references resolved,
 * descriptions dropped), so the console's forms check what the API will check.
 */
function requestSchemas(): Plugin {
  const id = 'virtual:request-schemas';
  const resolved = `\0${id}`;
  return {
    name: 'request-schemas',
    resolveId: (source) => (source === id ? resolved : undefined),
    load(source) {
      if (source !== resolved) return undefined;
      const file = path.resolve(import.meta.dirname, '../openapi.json');
      this.addWatchFile(file);
      const document = JSON.parse(fs.readFileSync(file, 'utf8'));
      const components: Record<string, JsonSchema> = document.components?.schemas ?? {};
      const slim = (schema: unknown, depth = 0): unknown => {
        if (!schema || typeof schema !== 'object' || depth > 12) return schema;
        if (Array.isArray(schema)) return schema.map((item) => slim(item, depth + 1));
        const ref = (schema as { $ref?: string }).$ref;
        if (ref) return slim(components[ref.split('/').pop() ?? ''], depth + 1);
        const out: JsonSchema = {};
        for (const [key, value] of Object.entries(schema)) {
          if (!KEPT.includes(key)) continue;
          out[key] =
            key === 'properties'
              ? Object.fromEntries(
                  Object.entries(value as JsonSchema).map(([k, v]) => [k, slim(v, depth + 1)]),
                )
              : slim(value, depth + 1);
        }
        return out;
      };
      const bodies: Record<string, unknown> = {};
      for (const item of Object.values(document.paths as Record<string, Record<string, JsonSchema>>)) {
        for (const operation of Object.values(item)) {
          const schema = (operation.requestBody as JsonSchema | undefined)?.content as JsonSchema | undefined;
          const json = (schema?.['application/json'] as JsonSchema | undefined)?.schema;
          if (json && typeof operation.operationId === 'string') bodies[operation.operationId] = slim(json);
        }
      }
      return `export default ${JSON.stringify(bodies)};`;
    },
  };
}

/**
 * The web console: built into web/dist by `npm run web:build` (which `npm ci` runs), served by
 * the service at `/`. `npm run web:dev` serves it with hot reload, the API proxied to PORT.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    // Every page is its own chunk (React.lazy); the shell stays small.
    chunkSizeWarningLimit: 300,
    rolldownOptions: {
      // React Router's "use client" marks are for server components, which this app has none of.
      onLog(level, log, handler) {
        // (and the build's own timing report, which says only that compression takes a moment).
        if (log.code === 'MODULE_LEVEL_DIRECTIVE' || log.code === 'PLUGIN_TIMINGS') return;
        handler(level, log);
      },
    },
  },
  plugins: [requestSchemas(), precompress()],
  server: {
    proxy: {
      '/api': { target: `http://127.0.0.1:${process.env.PORT ?? 8080}`, ws: true },
    },
  },
});
