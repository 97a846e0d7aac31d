/**
 * `npm run bench:mining`: our FP-Growth against node-fpgrowth on the FIMI datasets of issue 4, plus whole
 * `mine` CLI processes against the native reference figures. Every measurement runs in a fresh child
 * process (compiled to JavaScript first, so tsx adds neither time nor memory), and the child's peak RSS
 * (process.resourceUsage().maxRSS) is the memory figure. Exits with 1 if any count is wrong.
 */

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFimi, toArrays } from '../src/lib/mining/fimi.ts';
import { mineIntegerItemsets } from '../src/lib/mining/fp-growth.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const dataDir = join(root, '..', 'shared', 'data', 'fim');
const compiledDir = join(root, 'node_modules', '.cache', 'mining-bench');
const REFERENCE_TIMEOUT_MS = 120_000;
const CLI_RUNS = 5;
/** Fresh-process runs per engine and case; the table shows the median time and the highest peak. */
const ENGINE_RUNS = 3;

interface BenchCase {
  name: string;
  file: string;
  minSupport: number;
  expected: number;
  /** Borgelt fpgrowth (C), whole process, seconds: from the issue. */
  native: number | undefined;
  /** node-fpgrowth as measured for the issue, seconds. */
  issueReference: number;
}

const CASES: BenchCase[] = [
  { name: 'retail', file: 'retail.dat', minSupport: 89, expected: 7_589, native: 0.18, issueReference: 3.7 },
  { name: 'retail', file: 'retail.dat', minSupport: 45, expected: 19_242, native: 0.21, issueReference: 5.2 },
  {
    name: 'T10I4D100K',
    file: 'T10I4D100K.dat',
    minSupport: 100,
    expected: 27_532,
    native: 0.27,
    issueReference: 5.4,
  },
  {
    name: 'T10I4D100K',
    file: 'T10I4D100K.dat',
    minSupport: 50,
    expected: 53_385,
    native: 0.34,
    issueReference: 7.2,
  },
  {
    name: 'chess',
    file: 'chess.dat',
    minSupport: 1_918,
    expected: 254_944,
    native: 0.016,
    issueReference: 1.5,
  },
  {
    name: 'mushroom',
    file: 'mushroom.dat',
    minSupport: 813,
    expected: 574_431,
    native: 0.016,
    issueReference: 2.6,
  },
  {
    name: 'kosarak36k',
    file: 'kosarak_prefix36k.dat',
    minSupport: 184,
    expected: 1_665,
    native: undefined,
    issueReference: Number.NaN,
  },
];

/** What a child process reports for one engine on one case. */
interface ChildResult {
  count: number;
  mineMs: number;
  peakRssMb: number;
  rssBeforeMb: number;
}

const mb = (bytes: number): number => bytes / 1024 / 1024;

/**
 * Child side: parse once, expand to number[][] (the input both engines get), then run one engine once,
 * cold, counting every itemset it produces.
 */
async function runChild(engine: string, file: string, minSupport: number): Promise<void> {
  const transactions = toArrays(parseFimi(readFileSync(file)));
  const rssBeforeMb = mb(process.memoryUsage().rss);
  let count = 0;
  const started = performance.now();
  if (engine === 'ours') {
    mineIntegerItemsets(transactions, { minSupport }, () => {
      count++;
    });
  } else {
    // Imported here so that our engine's child never loads it. node-fpgrowth takes a fraction and uses ceil(fraction * n): aim half a transaction low.
    const { FPGrowth } = await import('node-fpgrowth');
    const miner = new FPGrowth<number>((minSupport - 0.5) / transactions.length);
    count = (await miner.exec(transactions)).length;
  }
  const mineMs = performance.now() - started;
  const result: ChildResult = {
    count,
    mineMs,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    rssBeforeMb,
  };
  process.stdout.write(JSON.stringify(result));
}

/** Transpiles the CLI, the engine and this file to JavaScript under node_modules/.cache (imports resolve). */
async function compile(): Promise<void> {
  const { default: ts } = await import('typescript');
  const files = [
    'src/cli/mine.ts',
    'src/lib/mining/fimi.ts',
    'src/lib/mining/fp-growth.ts',
    'bench/mining.bench.ts',
  ];
  for (const file of files) {
    const { outputText } = ts.transpileModule(readFileSync(join(root, file), 'utf8'), {
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2023,
        rewriteRelativeImportExtensions: true,
        verbatimModuleSyntax: true,
      },
    });
    const out = join(compiledDir, file.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
  writeFileSync(join(compiledDir, 'package.json'), '{"type":"module"}\n');
}

/** Runs `engine` ENGINE_RUNS times in fresh processes: median time, highest peak, or the first failure. */
function childRuns(engine: string, c: BenchCase): ChildResult | string {
  const results: ChildResult[] = [];
  for (let r = 0; r < ENGINE_RUNS; r++) {
    const result = child(engine, c);
    if (typeof result === 'string') return result;
    results.push(result);
  }
  results.sort((a, b) => a.mineMs - b.mineMs);
  const median = results[Math.floor(results.length / 2)] as ChildResult;
  return { ...median, peakRssMb: Math.max(...results.map((r) => r.peakRssMb)) };
}

function child(engine: string, c: BenchCase): ChildResult | string {
  const run = spawnSync(
    process.execPath,
    [
      join(compiledDir, 'bench/mining.bench.js'),
      '--child',
      engine,
      join(dataDir, c.file),
      String(c.minSupport),
    ],
    { encoding: 'utf8', timeout: REFERENCE_TIMEOUT_MS, maxBuffer: 1 << 20 },
  );
  if (run.error && (run.error as NodeJS.ErrnoException).code === 'ETIMEDOUT') {
    return `timeout > ${REFERENCE_TIMEOUT_MS / 1000} s`;
  }
  if (run.status !== 0) return `failed (${run.signal ?? `exit ${run.status}`}): ${run.stderr.split('\n')[0]}`;
  return JSON.parse(run.stdout) as ChildResult;
}

/** Whole `mine` process (parse, mine, write every itemset to /dev/null): best wall time of CLI_RUNS. */
function cliRun(c: BenchCase): { seconds: number; peakRssMb: number; count: number } {
  let best = Number.POSITIVE_INFINITY;
  let peakRssMb = 0;
  let count = 0;
  for (let r = 0; r < CLI_RUNS; r++) {
    const started = performance.now();
    const run = spawnSync(
      process.execPath,
      [
        join(compiledDir, 'src/cli/mine.js'),
        join(dataDir, c.file),
        '--min-support',
        String(c.minSupport),
        '--out',
        '/dev/null',
      ],
      { encoding: 'utf8' },
    );
    const seconds = (performance.now() - started) / 1000;
    if (run.status !== 0) throw new Error(`mine CLI failed: ${run.stderr}`);
    best = Math.min(best, seconds);
    peakRssMb = Math.max(peakRssMb, Number(/peak RSS ([\d.]+) MB/.exec(run.stdout)?.[1] ?? 0));
    count = Number(/^(\d+) itemsets/.exec(run.stdout)?.[1] ?? -1);
  }
  return { seconds: best, peakRssMb, count };
}

const pad = (text: string, width: number): string => text.padStart(width);

async function main(): Promise<void> {
  const childIndex = process.argv.indexOf('--child');
  if (childIndex >= 0) {
    const [engine, file, minSupport] = process.argv.slice(childIndex + 1);
    await runChild(engine as string, file as string, Number(minSupport));
    return;
  }
  await compile();
  console.log(
    `Mining engine vs node-fpgrowth: median of ${ENGINE_RUNS} cold runs, each in a fresh Node process (compiled JS).`,
  );
  console.log(
    'Both get the same number[][] parsed from the file; mining time excludes parsing; both produce',
  );
  console.log(
    "every itemset (ours through its callback, node-fpgrowth in its result array). Peak = the child's",
  );
  console.log(
    `maxRSS (whole process, Node itself included; RSS before mining in brackets). Reference timeout ${REFERENCE_TIMEOUT_MS / 1000} s.\n`,
  );
  const header = `${'case'.padEnd(18)}${pad('itemsets', 9)}${pad('ours ms', 9)}${pad('ours MB', 14)}${pad('ref ms', 9)}${pad('ref MB', 14)}${pad('ratio', 8)}`;
  console.log(header);
  let failures = 0;
  const rows: { c: BenchCase; ours: ChildResult }[] = [];
  for (const c of CASES) {
    const label = `${c.name}@${c.minSupport}`.padEnd(18);
    const ours = childRuns('ours', c);
    const ref = childRuns('node-fpgrowth', c);
    if (typeof ours === 'string') {
      console.log(`${label} ours ${ours}`);
      failures++;
      continue;
    }
    rows.push({ c, ours });
    if (ours.count !== c.expected) {
      console.log(`${label} WRONG COUNT: ours ${ours.count}, expected ${c.expected}`);
      failures++;
    }
    const memory = (r: ChildResult) => `${r.peakRssMb.toFixed(0)} (${r.rssBeforeMb.toFixed(0)})`;
    let refCells = `${pad(typeof ref === 'string' ? ref : '', 31)}`;
    if (typeof ref !== 'string') {
      if (ref.count !== c.expected) {
        console.log(`${label} node-fpgrowth count ${ref.count} differs from expected ${c.expected}`);
        failures++;
      }
      refCells = `${pad(ref.mineMs.toFixed(0), 9)}${pad(memory(ref), 14)}${pad(`${(ref.mineMs / ours.mineMs).toFixed(1)}x`, 8)}`;
    }
    console.log(
      `${label}${pad(String(ours.count), 9)}${pad(ours.mineMs.toFixed(1), 9)}${pad(memory(ours), 14)}${refCells}`,
    );
  }

  console.log(
    `\nWhole process: node ${join('node_modules/.cache/mining-bench/src/cli/mine.js')} <file> --min-support N --out /dev/null`,
  );
  console.log(
    `(the CLI compiled to JS: tsx would add ~0.3 s of start-up); best wall time of ${CLI_RUNS} runs.\n`,
  );
  console.log(
    `${'case'.padEnd(18)}${pad('ours s', 9)}${pad('native s', 10)}${pad('ratio', 8)}${pad('peak MB', 9)}`,
  );
  for (const { c } of rows) {
    const run = cliRun(c);
    if (run.count !== c.expected) {
      console.log(`${c.name}@${c.minSupport} CLI WRONG COUNT ${run.count}`);
      failures++;
    }
    const native = c.native === undefined ? '-' : c.native.toFixed(3);
    const ratio = c.native === undefined ? '-' : `${(run.seconds / c.native).toFixed(2)}x`;
    console.log(
      `${`${c.name}@${c.minSupport}`.padEnd(18)}${pad(run.seconds.toFixed(3), 9)}${pad(native, 10)}${pad(ratio, 8)}${pad(run.peakRssMb.toFixed(0), 9)}`,
    );
  }
  if (failures > 0) {
    console.error(`\n${failures} check(s) failed`);
    process.exit(1);
  }
  console.log('\nAll counts match the expected values.');
}

await main();
