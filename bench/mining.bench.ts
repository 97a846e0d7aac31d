/**
 * `npm run bench:mining`: our FP-Growth against node-fpgrowth on the FIMI datasets of issue 4, plus whole
 * `mine` CLI processes against the native reference figures. Each engine runs in a fresh child process
 * per case (Node 24 runs the TypeScript directly: type stripping adds no loader and no memory), the same way for both:
 * the first run is reported as the cold figure, then after warming up for WARM_UP_MS the median of TIMED_RUNS is
 * the steady-state (warm) figure; the child's peak RSS after its first run is the memory figure. Exits
 * with 1 if any count is wrong.
 */

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFimi, toArrays } from '../src/lib/mining/fimi.ts';
import { mineIntegerItemsets } from '../src/lib/mining/fp-growth.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
/** The FIMI datasets live beside the repository (../shared/data/fim) or where FIM_DATA_DIR says. */
const dataDir = process.env.FIM_DATA_DIR ?? join(root, '..', 'shared', 'data', 'fim');
const REFERENCE_TIMEOUT_MS = 300_000;
const CLI_RUNS = 5;
/**
 * Warm-up after the cold run, before the timed ones: runs until this much time has passed (at least
 * one), the same rule for both engines, so that V8 has optimised even a 30 ms engine's hot code.
 */
const WARM_UP_MS = 2_000;
/** Timed runs per engine and case once warm; the table shows their median. */
const TIMED_RUNS = 3;

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
  /** The first run in the process, V8 warm-up included. */
  coldMs: number;
  /** Median of TIMED_RUNS after warming up. */
  warmMs: number;
  /** maxRSS after the first run: later runs reuse the same heap, so this is the run's own peak. */
  peakRssMb: number;
  rssBeforeMb: number;
}

const mb = (bytes: number): number => bytes / 1024 / 1024;

/**
 * Child side: parse once, expand to number[][] (the input both engines get), then run one engine
 * once cold, for WARM_UP_MS to warm up, then TIMED_RUNS times on it, counting every itemset each run produces. A full GC before
 * each run (the child runs with --expose-gc) keeps one run's garbage out of the next one's time.
 */
async function runChild(engine: string, file: string, minSupport: number): Promise<void> {
  const transactions = toArrays(parseFimi(readFileSync(file)));
  // Imported here, and only for its own child, so that our engine's child never loads it.
  const FPGrowth = engine === 'ours' ? undefined : (await import('node-fpgrowth')).FPGrowth;
  const mine = async (): Promise<number> => {
    if (FPGrowth === undefined) {
      let count = 0;
      mineIntegerItemsets(transactions, { minSupport }, () => {
        count++;
      });
      return count;
    }
    // node-fpgrowth takes a fraction and uses ceil(fraction * n): aim half a transaction low.
    const miner = new FPGrowth<number>((minSupport - 0.5) / transactions.length);
    return (await miner.exec(transactions)).length;
  };
  const collect = (globalThis as { gc?: () => void }).gc ?? (() => {});
  collect();
  const rssBeforeMb = mb(process.memoryUsage().rss);
  let count = -1;
  let peakRssMb = 0;
  const timedRun = async (): Promise<number> => {
    collect();
    const started = performance.now();
    const runCount = await mine();
    const ms = performance.now() - started;
    if (count >= 0 && runCount !== count)
      throw new Error(`a run gave ${runCount} itemsets, the first ${count}`);
    count = runCount;
    return ms;
  };
  const coldMs = await timedRun();
  peakRssMb = process.resourceUsage().maxRSS / 1024;
  const warmUpEnd = performance.now() + WARM_UP_MS;
  do await timedRun();
  while (performance.now() < warmUpEnd);
  const timed: number[] = [];
  for (let r = 0; r < TIMED_RUNS; r++) timed.push(await timedRun());
  timed.sort((a, b) => a - b);
  const result: ChildResult = {
    count,
    coldMs,
    warmMs: timed[Math.floor(timed.length / 2)] as number,
    peakRssMb,
    rssBeforeMb,
  };
  process.stdout.write(JSON.stringify(result));
}

function child(engine: string, c: BenchCase): ChildResult | string {
  const run = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      join(root, 'bench/mining.bench.ts'),
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
        join(root, 'src/cli/mine.ts'),
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
  if (!existsSync(dataDir)) {
    console.error(
      `missing the FIMI datasets: ${dataDir} does not exist. Put retail.dat, T10I4D100K.dat, chess.dat, mushroom.dat and kosarak_prefix36k.dat there (../shared/data/fim beside the repository) or set FIM_DATA_DIR.`,
    );
    process.exit(2);
  }
  console.log(
    `Mining engine vs node-fpgrowth, one fresh Node ${process.version} process per engine and case. Cold = the first run in the process; warm = median of ${TIMED_RUNS} runs after ${WARM_UP_MS / 1000} s of warm-up runs, a full GC before each run, the same for both engines.`,
  );
  console.log(
    'Both get the same number[][] parsed from the file; mining time excludes parsing; both produce every itemset',
  );
  console.log(
    "(ours through its callback, node-fpgrowth in its result array). Peak = the child's maxRSS after its first run",
  );
  console.log(
    `(whole process, Node itself included; RSS before mining in brackets). Child timeout ${REFERENCE_TIMEOUT_MS / 1000} s.\n`,
  );
  const header = `${'case'.padEnd(18)}${pad('itemsets', 9)}${pad('ours cold', 10)}${pad('warm ms', 9)}${pad('ours MB', 11)}${pad('ref cold', 10)}${pad('warm ms', 9)}${pad('ref MB', 11)}${pad('cold x', 8)}${pad('warm x', 8)}`;
  console.log(header);
  let failures = 0;
  const rows: { c: BenchCase; ours: ChildResult }[] = [];
  for (const c of CASES) {
    const label = `${c.name}@${c.minSupport}`.padEnd(18);
    const ours = child('ours', c);
    const ref = child('node-fpgrowth', c);
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
    let refCells = pad(typeof ref === 'string' ? ref : '', 46);
    if (typeof ref !== 'string') {
      if (ref.count !== c.expected) {
        console.log(`${label} node-fpgrowth count ${ref.count} differs from expected ${c.expected}`);
        failures++;
      }
      refCells = `${pad(ref.coldMs.toFixed(0), 10)}${pad(ref.warmMs.toFixed(0), 9)}${pad(memory(ref), 11)}${pad(`${(ref.coldMs / ours.coldMs).toFixed(1)}x`, 8)}${pad(`${(ref.warmMs / ours.warmMs).toFixed(1)}x`, 8)}`;
    }
    console.log(
      `${label}${pad(String(ours.count), 9)}${pad(ours.coldMs.toFixed(1), 10)}${pad(ours.warmMs.toFixed(1), 9)}${pad(memory(ours), 11)}${refCells}`,
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
