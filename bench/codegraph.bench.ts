/**
 * `npm run bench:codegraph`: how fast the code graph indexes this repository's own src/.
 *
 * - parse: tree-sitter over every file (the pure parser), files/s and symbols/s;
 * - resolve: the cross-file graph (`buildCodeGraph`);
 * - index: the whole service call (`POST /api/codegraph/index` without HTTP): walk, read,
 *   parse, resolve, write the generation and swap it in, on PostgreSQL (127.0.0.1:5432 or
 *   POSTGRES_*) and on PGlite; the best of BENCH_RUNS (3) runs each.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { boot } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import { buildCodeGraph } from '../src/modules/codegraph/graph/build-graph.ts';
import { parseSource } from '../src/modules/codegraph/parse/code-parser.ts';
import type { ParsedFile } from '../src/modules/codegraph/parse/types.ts';
import { directorySources } from '../src/modules/codegraph/source-files.ts';
import { createBenchPostgres } from './postgres-env.ts';

const REPOSITORY = path.resolve(import.meta.dirname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

interface Row {
  what: string;
  seconds: number;
  files: number;
  symbols: number;
}

/** The best of `RUNS` timings of `work`, with what the last run answered. */
async function best<T>(work: () => Promise<T>): Promise<{ seconds: number; result: T }> {
  let seconds = Number.POSITIVE_INFINITY;
  let result: T | undefined;
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    result = await work();
    seconds = Math.min(seconds, (performance.now() - started) / 1000);
  }
  return { seconds, result: result as T };
}

async function benchPure(): Promise<Row[]> {
  const sources = await directorySources(path.join(REPOSITORY, 'src'));
  const texts: Array<{ path: string; text: string }> = [];
  for await (const file of sources.read()) texts.push(file);
  await parseSource('warm-up.ts', 'export const x = 1;');
  const parsed = await best(async () => {
    const files: ParsedFile[] = [];
    for (const file of texts) files.push((await parseSource(file.path, file.text)) as ParsedFile);
    return files;
  });
  const graph = await best(async () => buildCodeGraph(parsed.result));
  const symbols = graph.result.stats.symbols;
  return [
    {
      what: `parse (${(sources.bytes / 1024).toFixed(0)} KiB)`,
      seconds: parsed.seconds,
      files: texts.length,
      symbols,
    },
    { what: 'resolve the graph', seconds: graph.seconds, files: texts.length, symbols },
  ];
}

async function benchIndex(engine: string, env: NodeJS.ProcessEnv): Promise<Row> {
  // SOURCES_ROOT is read per tenant (<root>/<tenant id>): the bench tenant's folder is a link
  // to this repository.
  const sourcesRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'codegraph-bench-'));
  // The whole index is measured within the call, however large src/ has grown.
  const config = loadConfig({
    ...env,
    LOG_LEVEL: 'silent',
    SOURCES_ROOT: sourcesRoot,
    CODEGRAPH_SYNC_MAX_BYTES: String(64 * 1024 * 1024),
  });
  const { database, services } = await boot(config);
  try {
    const workspace = await services.workspaces.createWorkspace('bench', { name: 'codegraph bench' });
    fs.symlinkSync(REPOSITORY, path.join(sourcesRoot, workspace.tenant.id));
    const caller = { userId: 'bench', workspaceId: workspace.id };
    const { seconds, result } = await best(() =>
      services.codegraph.index(caller, 'platform', { directory: 'src' }),
    );
    const stats = result.project.stats;
    return { what: `index on ${engine}`, seconds, files: stats?.files ?? 0, symbols: stats?.symbols ?? 0 };
  } finally {
    await database.close();
    fs.rmSync(sourcesRoot, { recursive: true, force: true });
  }
}

const rows = await benchPure();
const postgres = await createBenchPostgres('bench_codegraph');
if (postgres) {
  try {
    rows.push(await benchIndex('PostgreSQL', postgres.env));
  } finally {
    await postgres.drop();
  }
} else {
  process.stderr.write('PostgreSQL not reachable: skipping its row\n');
}
const pgliteDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-codegraph-pglite-'));
try {
  rows.push(await benchIndex('PGlite', { DATA_DIR: pgliteDir }));
} finally {
  fs.rmSync(pgliteDir, { recursive: true, force: true });
}

console.log(
  `\nthis repository's src/, best of ${RUNS}, ${os.cpus().length} cores, node ${process.version}\n`,
);
console.log(
  `${'step'.padEnd(22)} ${'seconds'.padStart(8)} ${'files'.padStart(6)} ${'files/s'.padStart(8)} ${'symbols/s'.padStart(10)}`,
);
for (const row of rows) {
  console.log(
    `${row.what.padEnd(22)} ${row.seconds.toFixed(2).padStart(8)} ${String(row.files).padStart(6)} ` +
      `${(row.files / row.seconds).toFixed(0).padStart(8)} ${(row.symbols / row.seconds).toFixed(0).padStart(10)}`,
  );
}
