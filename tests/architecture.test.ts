import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** Checks the layering of CONVENTIONS.md over the import lines of src/. */
const src = path.resolve(import.meta.dirname, '../src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm;

/** Import specifiers of a file: relative ones as src-relative paths, packages by name. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((match) => {
    const spec = (match[1] ?? match[2]) as string;
    return spec.startsWith('.') ? path.relative(src, path.resolve(path.dirname(file), spec)) : `pkg:${spec}`;
  });
}

const files = sourceFiles(src).map((file) => ({ file: path.relative(src, file), imports: importsOf(file) }));
const moduleOf = (file: string) => /^modules\/([^/]+)\//.exec(file)?.[1];

type Rule = {
  applies: (file: string) => boolean;
  forbids: (target: string, file: string) => boolean;
  why: string;
};

const rules: Rule[] = [
  {
    applies: (f) => f.endsWith('.routes.ts'),
    forbids: (t) => t.endsWith('.repository.ts') || t.startsWith('db/'),
    why: 'routes never import a repository or db/',
  },
  {
    applies: (f) => f.endsWith('.service.ts'),
    forbids: (t, f) =>
      t === 'pkg:fastify' ||
      t.startsWith('pkg:@fastify/') ||
      t.startsWith('http/') ||
      (t.startsWith('db/') && t !== 'db/transaction.ts') ||
      (t.endsWith('.repository.ts') && moduleOf(t) !== moduleOf(f)),
    why: 'services never import fastify, http/, db/ (but db/transaction.ts) or another module’s repository',
  },
  {
    applies: (f) => f.endsWith('.repository.ts'),
    forbids: (t) => !t.startsWith('pkg:') && !t.startsWith('db/') && !t.startsWith('lib/'),
    why: 'repositories import db/ and lib/ only',
  },
  {
    applies: (f) => f.endsWith('.repository.ts'),
    forbids: (t, f) => t.startsWith('db/schema/') && t !== `db/schema/${moduleOf(f)}.ts`,
    why: 'a repository touches only its own module’s tables (db/schema/<module>.ts)',
  },
  {
    applies: (f) => f.startsWith('db/') || f.startsWith('lib/') || f === 'config.ts' || f === 'errors.ts',
    forbids: (t) => t.startsWith('modules/') || t.startsWith('http/'),
    why: 'db/, lib/, config and errors import nothing from modules/ or http/',
  },
  {
    applies: (f) => f.startsWith('jobs/') || f.startsWith('events/'),
    forbids: (t) => t.startsWith('modules/') || t.startsWith('http/') || t.startsWith('db/'),
    why: 'jobs/ and events/ are infrastructure: no module, no HTTP, no database (modules bring their jobs)',
  },
  {
    applies: (f) => f.startsWith('http/'),
    forbids: (t) => t.startsWith('modules/') || t.startsWith('db/'),
    why: 'http/ is Fastify glue: no modules, no database',
  },
  {
    applies: (f) => f.startsWith('lib/'),
    forbids: (t) => t === 'pkg:fastify' || t.startsWith('pkg:pg') || t.startsWith('pkg:drizzle-orm'),
    why: 'lib/ is pure: no HTTP, no database',
  },
];

/**
 * The module graph: module A depends on module B when any file of A imports any file of B.
 * Type-only imports count: a type names the other module's shape, so the two cannot be read,
 * changed or split apart alone, and a type edge becomes a value edge with one edit. A port a
 * consumer declares and its provider checks with `satisfies` is, rightly, an edge from the
 * provider to the consumer. Each edge keeps one import that makes it, for the failure message.
 */
function moduleGraph(sources: { file: string; imports: string[] }[]): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const { file, imports } of sources) {
    const from = moduleOf(file);
    if (!from) continue;
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const target of imports) {
      const to = moduleOf(target);
      if (to && to !== from && !edges.has(to)) edges.set(to, `${file} -> ${target}`);
    }
  }
  return graph;
}

/** Every cycle a depth-first walk meets, as `a -> b -> a` with the import behind each step. */
function moduleCycles(graph: Map<string, Map<string, string>>): string[] {
  const state = new Map<string, 'visiting' | 'done'>();
  const cycles: string[] = [];
  const visit = (node: string, trail: string[]) => {
    if (state.get(node) === 'done') return;
    if (state.get(node) === 'visiting') {
      const loop = [...trail.slice(trail.indexOf(node)), node];
      const why = loop.slice(1).map((to, index) => graph.get(loop[index] as string)?.get(to));
      cycles.push(`${loop.join(' -> ')} (${why.join('; ')})`);
      return;
    }
    state.set(node, 'visiting');
    for (const next of graph.get(node)?.keys() ?? []) visit(next, [...trail, node]);
    state.set(node, 'done');
  };
  for (const node of graph.keys()) visit(node, []);
  return cycles;
}

const moduleFolders = fs
  .readdirSync(path.join(src, 'modules'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const pascal = (name: string) =>
  name.replace(/(^|-)([a-z])/g, (_match, _dash, letter: string) => letter.toUpperCase());
/** Source text without comments, so a comment that mentions `=>` or an import counts for nothing. */
const code = (file: string) =>
  fs
    .readFileSync(path.join(src, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');

describe('architecture', () => {
  it('finds the source files and their imports', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(files.find((f) => f.file === 'modules/agents/agents.module.ts')?.imports).toContain(
      'modules/agents/agents.routes.ts',
    );
  });

  it('keeps imports flowing routes -> service -> repository -> db', () => {
    const violations = files.flatMap(({ file, imports }) =>
      rules.flatMap((rule) =>
        rule.applies(file)
          ? imports.filter((t) => rule.forbids(t, file)).map((t) => `${file} -> ${t}: ${rule.why}`)
          : [],
      ),
    );
    expect(violations).toEqual([]);
  });

  it('imports across modules only from the composition roots', () => {
    const roots = new Set(['app.ts', 'services.ts', 'main.ts', 'server.ts', 'boot.ts']);
    const violations = files.flatMap(({ file, imports }) => {
      if (roots.has(file) || file.startsWith('cli/')) return [];
      const own = moduleOf(file);
      return imports
        .filter((t) => moduleOf(t) !== undefined && moduleOf(t) !== own && !t.endsWith('.service.ts'))
        .map((t) => `${file} -> ${t}`);
    });
    expect(violations).toEqual([]);
  });

  it('opens transactions only through db/transaction.ts', () => {
    const violations = sourceFiles(src)
      .filter((file) => !path.relative(src, file).startsWith('db/'))
      .filter((file) => /\.transaction\(/.test(fs.readFileSync(file, 'utf8')))
      .map((file) => path.relative(src, file));
    expect(violations).toEqual([]);
  });

  it('names who is calling once: Caller in caller.ts', () => {
    const declarations = sourceFiles(src).flatMap((file) =>
      [...fs.readFileSync(file, 'utf8').matchAll(/^export (?:interface|type) (\w*(?:Actor|Caller))\b/gm)].map(
        (match) => `${path.relative(src, file)}: ${match[1]}`,
      ),
    );
    expect(declarations).toEqual(['caller.ts: Caller']);
  });

  it('has no import cycles', () => {
    const graph = new Map(
      files.map(({ file, imports }) => [file, imports.filter((t) => !t.startsWith('pkg:'))]),
    );
    const state = new Map<string, 'visiting' | 'done'>();
    const cycles: string[] = [];
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'visiting') {
        cycles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
        return;
      }
      state.set(file, 'visiting');
      for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of graph.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });
  it('has no cycle between modules (type-only imports included)', () => {
    const graph = moduleGraph(files);
    // The graph is the real one: an edge the code is known to have is in it.
    expect(graph.get('knowledge')?.has('retrieval')).toBe(true);
    expect(moduleCycles(graph)).toEqual([]);
  });

  it('finds a module cycle when there is one', () => {
    const graph = moduleGraph([
      { file: 'modules/a/a.service.ts', imports: ['modules/b/b.service.ts', 'lib/tokens.ts'] },
      { file: 'modules/b/b.service.ts', imports: ['modules/c/c.service.ts'] },
      { file: 'modules/c/c.module.ts', imports: ['modules/a/a.service.ts'] },
      { file: 'modules/d/d.service.ts', imports: ['modules/a/a.service.ts'] },
    ]);
    expect(moduleCycles(graph)).toEqual([
      'a -> b -> c -> a (modules/a/a.service.ts -> modules/b/b.service.ts; modules/b/b.service.ts -> modules/c/c.service.ts; modules/c/c.module.ts -> modules/a/a.service.ts)',
    ]);
  });

  it('builds every module through one entrypoint, create<Name>Module in <name>.module.ts', () => {
    const entrypoints = files.filter(({ file }) => /^modules\/[^/]+\/[^/]+\.module\.ts$/.test(file));
    // Every module folder has the entrypoint named after it (a folder may hold a second module,
    // such as runs/run-engine or workspaces/tenants, with an entrypoint of its own name).
    expect(
      moduleFolders.filter(
        (folder) => !entrypoints.some(({ file }) => file === `modules/${folder}/${folder}.module.ts`),
      ),
    ).toEqual([]);
    const misnamed = entrypoints.flatMap(({ file }) => {
      const name = path.basename(file, '.module.ts');
      const exported = [...code(file).matchAll(/^export (?:async )?function (\w+)/gm)].map(
        (match) => match[1],
      );
      return exported.length === 1 && exported[0] === `create${pascal(name)}Module`
        ? []
        : [`${file} exports ${exported.join(', ') || 'no function'}`];
    });
    expect(misnamed).toEqual([]);
  });

  it('constructs modules only in the composition root, through their entrypoints', () => {
    // Only services.ts imports an entrypoint ...
    const importers = files
      .filter(({ imports }) =>
        imports.some((target) => target.endsWith('.module.ts') && target.startsWith('modules/')),
      )
      .map(({ file }) => file);
    expect(importers).toEqual(['services.ts']);
    // ... and of the modules it imports values from entrypoints only (a type may come from elsewhere).
    const values = [
      ...code('services.ts').matchAll(/^import\s+(?!type\s)[^'"]*?from\s+'\.\/(modules\/[^']+)'/gm),
    ].map((match) => match[1] as string);
    expect(values.length).toBeGreaterThan(20);
    expect(values.filter((target) => !target.endsWith('.module.ts'))).toEqual([]);
  });

  it('writes no function in the composition root, so no closure stands in for a module cycle', () => {
    // TypeScript refuses a module used before its declaration, except inside a function body:
    // with none, services.ts can only build each module after those it needs.
    const text = code('services.ts');
    expect(text).toContain('createRunEngineModule(');
    expect([...text.matchAll(/=>|\bfunction\b/g)].map((match) => match[0])).toEqual(['function']);
  });
});
