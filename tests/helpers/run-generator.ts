/**
 * A seeded generator of finished runs with planted patterns, for playbook mining tests and
 * `bench/playbooks.bench.ts`. Each planted pattern is a known team of agents with tools and
 * context fields and a known success rate; noise runs draw agents and tools at random from a
 * pool that shares no name with the planted ones. Rows go straight into `runs` (as the run
 * engine leaves them when a run ends), in batches.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '../../src/db/transaction.ts';

export interface PlantedPattern {
  agents: string[];
  tools: string[];
  context: string[];
  inputs?: string[];
  mode?: 'sequential' | 'parallel';
  errorHandling?: 'stop' | 'continue' | 'retry';
  /** Runs of the pattern. */
  runs: number;
  /** Their chance of success. */
  successRate: number;
  /** The goal, `{subject}` replaced by a word that varies per run. */
  goal?: string;
  cost?: number;
  durationMs?: number;
}

export interface GeneratedRuns {
  count: number;
  succeeded: number;
  /** Successful runs per planted pattern, in order. */
  plantedSuccesses: number[];
  plantedTotals: number[];
}

/** mulberry32: small, fast, seeded. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NOISE_AGENTS = Array.from({ length: 24 }, (_, index) => `helper ${index + 1}`);
const NOISE_TOOLS = Array.from({ length: 12 }, (_, index) => `utility_${index + 1}`);
const NOISE_FIELDS = Array.from({ length: 10 }, (_, index) => `field_${index + 1}`);
const SUBJECTS = ['billing', 'search', 'checkout', 'login', 'reports', 'inbox', 'profile', 'exports'];

interface RunValues {
  id: string;
  succeeded: boolean;
  agents: string[];
  tools: string[];
  context: string[];
  inputs: string[];
  mode: string;
  errorHandling: string;
  goal: string;
  cost: number;
  durationMs: number;
  finishedAt: Date;
}

/**
 * Writes the planted patterns' runs and `noise` random runs (success rate `noiseSuccess`) into
 * `workspaceId`, shuffled in time over the last `days` days, and answers what it planted.
 */
export async function generateRuns(
  db: Db,
  workspaceId: string,
  options: { seed: number; planted: PlantedPattern[]; noise: number; noiseSuccess?: number; days?: number },
): Promise<GeneratedRuns> {
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const days = options.days ?? 20;
  const now = Date.now();
  const runs: RunValues[] = [];
  const plantedSuccesses = options.planted.map(() => 0);
  options.planted.forEach((pattern, index) => {
    for (let n = 0; n < pattern.runs; n += 1) {
      const succeeded = random() < pattern.successRate;
      if (succeeded) plantedSuccesses[index] = (plantedSuccesses[index] ?? 0) + 1;
      runs.push({
        id: randomUUID(),
        succeeded,
        agents: pattern.agents,
        tools: pattern.tools,
        context: pattern.context,
        inputs: pattern.inputs ?? [],
        mode: pattern.mode ?? 'sequential',
        errorHandling: pattern.errorHandling ?? 'stop',
        goal: (pattern.goal ?? 'Handle {subject}').replace('{subject}', pick(SUBJECTS)),
        cost: (pattern.cost ?? 0.01) * (0.8 + random() * 0.4),
        durationMs: Math.round((pattern.durationMs ?? 20_000) * (0.8 + random() * 0.4)),
        finishedAt: new Date(now - random() * days * 86_400_000),
      });
    }
  });
  for (let n = 0; n < options.noise; n += 1) {
    const agents = [
      ...new Set(Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(NOISE_AGENTS))),
    ];
    const tools = [...new Set(Array.from({ length: Math.floor(random() * 3) }, () => pick(NOISE_TOOLS)))];
    const context = [...new Set(Array.from({ length: Math.floor(random() * 3) }, () => pick(NOISE_FIELDS)))];
    runs.push({
      id: randomUUID(),
      succeeded: random() < (options.noiseSuccess ?? 0.5),
      agents,
      tools,
      context,
      inputs: [],
      mode: random() < 0.8 ? 'sequential' : 'parallel',
      errorHandling: pick(['stop', 'continue', 'retry']),
      goal: `Look into ${pick(SUBJECTS)}`,
      cost: 0.02 * (0.5 + random()),
      durationMs: Math.round(40_000 * (0.5 + random())),
      finishedAt: new Date(now - random() * days * 86_400_000),
    });
  }
  await insertRuns(db, workspaceId, runs);
  return {
    count: runs.length,
    succeeded: runs.filter((run) => run.succeeded).length,
    plantedSuccesses,
    plantedTotals: options.planted.map((pattern) => pattern.runs),
  };
}

/** Rows per insert statement. */
const BATCH = 2_000;

async function insertRuns(db: Db, workspaceId: string, runs: RunValues[]): Promise<void> {
  for (let start = 0; start < runs.length; start += BATCH) {
    const batch = runs.slice(start, start + BATCH);
    const rows = batch.map((run) => ({
      id: run.id,
      status: run.succeeded ? 'Completed' : 'Failed',
      agents_used: run.agents,
      tools_used: run.tools,
      context_fields: run.context,
      inputs: Object.fromEntries(run.inputs.map((name) => [name, `value of ${name}`])),
      context: Object.fromEntries(run.context.map((name) => [name, 'x'])),
      plan: {
        goal: run.goal,
        execution_policy: {
          mode: run.mode,
          error_handling: run.errorHandling,
          max_retries: 0,
          timeout_seconds: 900,
        },
      },
      cost: run.cost,
      duration_ms: run.durationMs,
      finished_at: run.finishedAt.toISOString(),
    }));
    await db.execute(sql`insert into runs (id, workspace_id, workflow_name, status, inputs, context, plan,
        agent_ids, agents_used, tools_used, context_fields, cost, duration_ms, created_at, started_at, finished_at,
        failure_reason, error)
      select r.id, ${workspaceId}::uuid, 'generated', r.status, r.inputs, r.context, r.plan, '{}'::uuid[],
        array(select jsonb_array_elements_text(r.agents_used)), array(select jsonb_array_elements_text(r.tools_used)),
        array(select jsonb_array_elements_text(r.context_fields)), r.cost, r.duration_ms,
        r.finished_at - make_interval(secs => r.duration_ms / 1000.0), r.finished_at - make_interval(secs => r.duration_ms / 1000.0),
        r.finished_at,
        case when r.status = 'Failed' then 'step_failed' end, case when r.status = 'Failed' then 'generated failure' end
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id uuid, status text, inputs jsonb, context jsonb,
        plan jsonb, agents_used jsonb, tools_used jsonb, context_fields jsonb, cost float8, duration_ms int,
        finished_at timestamptz)`);
  }
}
