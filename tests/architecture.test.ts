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

describe('architecture', () => {
  it('finds the source files and their imports', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(files.find((f) => f.file === 'app.ts')?.imports).toContain('modules/agents/agents.routes.ts');
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
});
