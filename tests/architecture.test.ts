import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeOf, importsOf as importClausesOf, literalsOf } from './helpers/source-text.ts';

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

/**
 * What a file is, by where it lives and its suffix. Every file of src/ has a role, so every
 * file is under the rules below; a new kind of file needs a role (and its rules) first.
 */
type Role =
  | 'root'
  | 'cli'
  | 'db'
  | 'lib'
  | 'http'
  | 'infrastructure'
  | 'core'
  | 'routes'
  | 'schemas'
  | 'service'
  | 'repository'
  | 'statements'
  | 'module';

/** The composition roots: the processes' entry points, which wire everything together. */
const ROOTS = new Set([
  'app.ts',
  'services.ts',
  'main.ts',
  'server.ts',
  'boot.ts',
  'worker.ts',
  'worker-process.ts',
]);
/**
 * Process-wide basics every layer may use: typed config, errors, logging, the caller, lifecycle,
 * and the shape of a module's entrypoint (module.ts).
 */
const CORE = new Set(['config.ts', 'errors.ts', 'logger.ts', 'caller.ts', 'lifecycle.ts', 'module.ts']);

function roleOf(file: string): Role | undefined {
  if (ROOTS.has(file)) return 'root';
  if (CORE.has(file)) return 'core';
  const top = file.split('/')[0];
  if (top === 'cli' || top === 'db' || top === 'lib' || top === 'http') return top;
  if (top === 'jobs' || top === 'events') return 'infrastructure';
  if (top !== 'modules') return undefined;
  const suffix = /\.(routes|schemas|service|repository|statements)\.ts$/.exec(file)?.[1];
  return (suffix as Role | undefined) ?? 'module';
}

/** Roles that speak to the database: they alone import drizzle-orm and db/ beyond the few shared files. */
const DATA_ROLES = new Set<Role | undefined>(['db', 'repository', 'statements']);

/**
 * Files outside the data roles that still build SQL with drizzle, each with why. Keep it short:
 * an entry is a debt with a reason, not a permission.
 */
const DRIZZLE_EXCEPTIONS: Record<string, string> = {
  // The run log builds the run writer's CTE chains (one statement per change of a run): a
  // measured hot-path exception, docs/architecture.md "Decisions". It could become
  // runs.statements.ts' sibling (run-log.statements.ts) without changing a line of SQL.
  'modules/runs/run-log.ts': 'the run writer’s CTE chains, a measured hot-path exception',
};

/**
 * db/ files other roles may import, and why: the transaction boundary the services own
 * (`inTransaction`, `afterCommit`, the `Db` type repositories are built over), the database
 * error classification the error model and the logger need, and for the composition roots
 * and the CLI, opening and migrating the database.
 */
const SHARED_DB_FILES: Record<string, (role: Role | undefined) => boolean> = {
  'db/transaction.ts': (role) => role === 'service' || role === 'module' || role === 'root' || role === 'cli',
  'db/errors.ts': (role) => role === 'core' || role === 'root',
  // A module's entrypoint may take the opened database's handle (its kind, ping, busy state):
  // the system module reports them, the knowledge module slices writes on the embedded one.
  'db/client.ts': (role) => role === 'root' || role === 'cli' || role === 'module',
  'db/migrate.ts': (role) => role === 'root' || role === 'cli',
  'db/lock.ts': (role) => role === 'root' || role === 'cli',
  'db/pglite-template.ts': (role) => role === 'root' || role === 'cli',
};

/** The tables of each module, from `pgTable('<name>'` in src/db/schema/<module>.ts. */
const schemaFiles = fs.readdirSync(path.join(src, 'db/schema')).filter((name) => name.endsWith('.ts'));
const tableModule = new Map<string, string>();
/** The exported names of the drizzle table objects (`export const runSteps = pgTable(...)`). */
const tableExports = new Set<string>();
for (const name of schemaFiles) {
  const text = fs.readFileSync(path.join(src, 'db/schema', name), 'utf8');
  for (const match of text.matchAll(/export const (\w+) = pgTable\(\s*'([^']+)'/g)) {
    tableExports.add(match[1] as string);
    tableModule.set(match[2] as string, name.replace(/\.ts$/, ''));
  }
}

/**
 * Violations of "only repositories (and a module's `*.statements.ts`) import drizzle-orm or
 * db/" in one file. Other roles may import the shared db/ files above and, from
 * db/schema/<module>.ts, the shapes declared beside the tables (TypeBox column types, row
 * types), never a table itself.
 */
function dataImportViolations(file: string, text: string, exceptions = DRIZZLE_EXCEPTIONS): string[] {
  const role = roleOf(file);
  if (DATA_ROLES.has(role) || exceptions[file]) return [];
  return importClausesOf(text).flatMap((clause) => {
    const target = clause.from.startsWith('.')
      ? path.relative(src, path.resolve(path.dirname(path.join(src, file)), clause.from))
      : clause.from;
    const at = `${file}:${clause.line} -> ${target}`;
    if (target === 'drizzle-orm' || target.startsWith('drizzle-orm/')) {
      return [`${at}: only repositories and statements files import drizzle-orm`];
    }
    if (!target.startsWith('db/')) return [];
    if (target.startsWith('db/schema/')) {
      const tables = clause.values.filter((name) => name === '*' || tableExports.has(name));
      return tables.length > 0 ? [`${at} (${tables.join(', ')}): tables are the repositories'`] : [];
    }
    return SHARED_DB_FILES[target]?.(role)
      ? []
      : [`${at}: only repositories and statements files import db/`];
  });
}

/**
 * Read models: files that read other modules' tables in their SQL, which tables, and why. A
 * read only; a write to another module's table goes through that module's service. The test
 * fails on an entry no longer used, so the list says what the code does.
 */
const READ_MODELS: Record<string, { tables: string[]; why: string }> = {
  'modules/analytics/analytics.repository.ts': {
    tables: [
      'runs',
      'run_steps',
      'agents',
      'conversations',
      'messages',
      'documents',
      'search_stats',
      'workspaces',
    ],
    why:
      'analytics (and the system metrics built on it) is a read model over the platform: its daily ' +
      'rollups and live figures aggregate runs, steps, agents, chat, documents and searches in SQL',
  },
  'modules/playbooks/playbooks.repository.ts': {
    tables: ['runs', 'workflows', 'agents', 'workspaces', 'tenants'],
    why:
      'playbook mining reads finished runs (and the agents they used) in bulk, a playbook usage ' +
      'count is the runs of the workflows promoted from it, and the mining schedule is kept per ' +
      'workspace in its tenant’s time zone',
  },
  'modules/retrieval/retrieval.repository.ts': {
    tables: ['documents', 'sources', 'workspaces'],
    why:
      'a search filters by document tags and names each hit’s document and source in its own ' +
      'statement (the knowledge module owns them); search counts skip workspaces deleted since',
  },
};

/** The module whose tables a file's SQL may name: its own module, or a schema file's. */
const ownerOf = (file: string) =>
  moduleOf(file) ?? (file.startsWith('db/schema/') ? path.basename(file, '.ts') : undefined);

/** A string that is an SQL statement rather than prose that happens to say "update" or "from". */
const STATEMENT =
  /^\s*(?:select\s[\s\S]*\bfrom\s|insert\s+into\s|update\s+\w+\s+set\s|delete\s+from\s|with\s+\w+\s+as\s*\(|(?:create|alter|drop|truncate|lock)\s+(?:table|index|unique|materialized)\b)/i;
/** A table named by an SQL keyword: the keyword (a read: from/join) and the name. */
const TABLE_REFERENCE =
  /\b(delete\s+from|from|join|into|update|table)\s+(?:only\s+)?"?([a-z_][a-z0-9_]*)"?/gi;

/**
 * Violations of "raw SQL names only its module's own tables" in one file: in every
 * sql`...` template and every string that is a statement, a table of another module read
 * outside the file's READ_MODELS entry, or written at all. `used` collects the allowed reads.
 */
function sqlViolations(file: string, text: string, used = new Set<string>()): string[] {
  const owner = ownerOf(file);
  return literalsOf(text)
    .filter((literal) => literal.tag === 'sql' || literal.tag === 'raw' || STATEMENT.test(literal.text))
    .flatMap((literal) =>
      [...literal.text.matchAll(TABLE_REFERENCE)].flatMap(([, keyword = '', name = '']) => {
        const table = name.toLowerCase();
        const module = tableModule.get(table);
        if (module === undefined || module === owner) return [];
        const read = /^(from|join)$/i.test(keyword);
        if (read && READ_MODELS[file]?.tables.includes(table)) {
          used.add(`${file}: ${table}`);
          return [];
        }
        const verb = read ? 'reads' : 'writes';
        return [`${file}:${literal.line} ${verb} ${table} (module ${module}) in raw SQL`];
      }),
    );
}

/** The one file that reads `rows` off a raw statement's result. */
const ROWS_HELPER = 'db/rows.ts';
/** The files that write a page's four fields: the helpers that build one, the schema that declares it. */
const PAGE_HELPERS = new Set(['lib/page.ts', 'db/queries.ts', 'http/schemas.ts']);

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

  it('gives every file of src/ a role, so every file is under the layering rules', () => {
    expect(files.filter(({ file }) => roleOf(file) === undefined).map(({ file }) => file)).toEqual([]);
  });

  it('lets only repositories and statements files import drizzle-orm, db/ and the tables', () => {
    const violations = files.flatMap(({ file }) =>
      dataImportViolations(file, fs.readFileSync(path.join(src, file), 'utf8')),
    );
    expect(violations).toEqual([]);
    // An exception that no longer needs to be one (moved, or gone) is taken off the list.
    const stale = Object.keys(DRIZZLE_EXCEPTIONS).filter(
      (file) =>
        !fs.existsSync(path.join(src, file)) ||
        dataImportViolations(file, fs.readFileSync(path.join(src, file), 'utf8'), {}).length === 0,
    );
    expect(stale, 'DRIZZLE_EXCEPTIONS entries no longer needed').toEqual([]);
  });

  it('fails on a drizzle or db/ import outside a repository (fixtures)', () => {
    const service = 'modules/agents/agents.service.ts';
    expect(dataImportViolations(service, "import { eq } from 'drizzle-orm';")).toHaveLength(1);
    expect(dataImportViolations(service, "import type { SQL } from 'drizzle-orm';")).toHaveLength(1);
    expect(
      dataImportViolations('modules/agents/describe.ts', "const { sql } = await import('drizzle-orm');"),
    ).toHaveLength(1);
    expect(dataImportViolations(service, "import { rowsOf } from '../../db/rows.ts';")).toHaveLength(1);
    expect(dataImportViolations(service, "import { agents } from '../../db/schema/agents.ts';")).toHaveLength(
      1,
    );
    expect(
      dataImportViolations(service, "import * as schema from '../../db/schema/agents.ts';"),
    ).toHaveLength(1);
    expect(
      dataImportViolations('http/auth.ts', "import { inTransaction } from '../db/transaction.ts';"),
    ).toHaveLength(1);
    // What the rules allow: shapes beside the tables, the transaction boundary, a repository's own.
    expect(
      dataImportViolations(
        service,
        "import { type AgentRow, AgentStatusSchema } from '../../db/schema/agents.ts';",
      ),
    ).toEqual([]);
    expect(dataImportViolations(service, "import { inTransaction } from '../../db/transaction.ts';")).toEqual(
      [],
    );
    expect(
      dataImportViolations('modules/agents/agents.repository.ts', "import { eq } from 'drizzle-orm';"),
    ).toEqual([]);
    expect(
      dataImportViolations('modules/runs/runs.statements.ts', "import { sql } from 'drizzle-orm';"),
    ).toEqual([]);
  });

  it('lets raw SQL name only its module’s own tables, and read models what their allow-list says', () => {
    const used = new Set<string>();
    const violations = files.flatMap(({ file }) =>
      sqlViolations(file, fs.readFileSync(path.join(src, file), 'utf8'), used),
    );
    expect(violations).toEqual([]);
    const listed = Object.entries(READ_MODELS).flatMap(([file, { tables }]) =>
      tables.map((table) => `${file}: ${table}`),
    );
    expect(
      listed.filter((entry) => !used.has(entry)),
      'allow-list entries no longer used',
    ).toEqual([]);
    expect(Object.values(READ_MODELS).every(({ why }) => why.length > 40)).toBe(true);
  });

  it('fails on raw SQL that reads another module’s table outside the allow-list (fixtures)', () => {
    const agents = 'modules/agents/agents.repository.ts';
    expect(sqlViolations(agents, 'db.execute(sql`select id from agents where workspace_id = $1`)')).toEqual(
      [],
    );
    expect(
      sqlViolations(agents, 'db.execute(sql`select a.id from agents a join runs r on r.agent_id = a.id`)'),
    ).toEqual([`${agents}:1 reads runs (module runs) in raw SQL`]);
    expect(sqlViolations(agents, "client.query('SELECT count(*) FROM run_steps')")).toHaveLength(1);
    expect(
      sqlViolations('modules/agents/describe.ts', 'sql.raw(`delete from messages where id = 1`)'),
    ).toHaveLength(1);
    // An allow-listed read model may read, never write; prose and comments are not SQL.
    const analytics = 'modules/analytics/analytics.repository.ts';
    expect(sqlViolations(analytics, 'sql`select count(*) from runs`')).toEqual([]);
    expect(sqlViolations(analytics, 'sql`update runs set cost = 0`')).toHaveLength(1);
    expect(
      sqlViolations(agents, "// select * from runs\nconst summary = 'Runs from runs of the workflow';"),
    ).toEqual([]);
    expect(sqlViolations(agents, 'const quote = /[\'"`]/; const q = sql`select 1 from runs`;')).toHaveLength(
      1,
    );
  });

  it('reads raw statement rows through db/rows.ts, not casts', () => {
    const cast = /as(?: unknown as)? \{ rows(?:\?)?:/;
    const violations = files
      .filter(({ file }) => file !== ROWS_HELPER && !DRIZZLE_EXCEPTIONS[file])
      .filter(({ file }) => cast.test(codeOf(fs.readFileSync(path.join(src, file), 'utf8'))))
      .map(({ file }) => file);
    expect(violations).toEqual([]);
  });

  it('builds every list page through the one helper (lib/page.ts, db/queries.ts)', () => {
    // An object literal with the four list fields, written outside the helpers (schemas declare them as types).
    const handMade = /\{[^{}]*\bitems\s*[:,][^{}]*\btotal\s*[:,][^{}]*\blimit\b[^{}]*\}/;
    const violations = files
      .filter(({ file }) => !PAGE_HELPERS.has(file) && roleOf(file) !== 'schemas')
      .filter(({ file }) => handMade.test(codeOf(fs.readFileSync(path.join(src, file), 'utf8'))))
      .map(({ file }) => file);
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
