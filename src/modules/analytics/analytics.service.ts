import type { Caller } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { invalid } from '../../errors.ts';
import { type Histogram, mergeInto, quantile } from '../../lib/histogram.ts';
import {
  type AgentStats,
  type Bucket,
  type ChatAggregate,
  type CostGroup,
  createAnalyticsRepository,
  type DayFigures,
  type Range,
  type RunAggregate,
} from './analytics.repository.ts';
import type { AnalyticsQuery } from './analytics.schemas.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The longest window any analytics endpoint reads. */
export const MAX_RANGE_DAYS = 400;
/** Hour buckets only up to this window, so a series stays at most 744 points. */
export const MAX_HOUR_RANGE_DAYS = 31;
/** Windows up to this long default to hour buckets. */
const HOURLY_DEFAULT_UP_TO_MS = 2 * DAY_MS;

type Who = Pick<Caller, 'workspaceId'>;

export interface AnalyticsWindow {
  from: Date;
  to: Date;
  bucket: Bucket;
}

export interface AnalyticsDependencies {
  db: Db;
  clock?: () => Date;
  /** Read the daily rollups for whole rolled-up days (true); false reads only raw runs (the bench's baseline). */
  rollups?: boolean;
}

/** A UTC day is rolled up once it has been over for this long (late writes of its last moments land first). */
export const ROLLUP_GRACE_MS = 10 * 60_000;

/** `YYYY-MM-DD` of a UTC instant (epoch ms). */
const dayKey = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const floorDay = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;
const ceilDay = (ms: number): number => Math.ceil(ms / DAY_MS) * DAY_MS;

/** Adds day figures into run figures with a histogram (the rollup path's totals and buckets). */
function addDay(into: DayFigures, day: DayFigures): DayFigures {
  into.runs += day.runs;
  into.completed += day.completed;
  into.failed += day.failed;
  into.cancelled += day.cancelled;
  into.input_tokens += day.input_tokens;
  into.output_tokens += day.output_tokens;
  into.cost += day.cost;
  mergeInto(into.latency, day.latency);
  return into;
}

const emptyDay = (): DayFigures => ({
  runs: 0,
  completed: 0,
  failed: 0,
  cancelled: 0,
  input_tokens: 0,
  output_tokens: 0,
  cost: 0,
  latency: new Map() as Histogram,
});

/** Run figures of day figures: percentiles from the histogram. */
const fromDay = ({ latency, ...sums }: DayFigures): RunAggregate => ({
  ...sums,
  latency_p50_ms: quantile(latency, 0.5),
  latency_p95_ms: quantile(latency, 0.95),
});

/** completed / (completed + failed): cancelled and unfinished runs have no outcome. */
export const successRate = (completed: number, failed: number): number | null =>
  completed + failed === 0 ? null : completed / (completed + failed);

const round = (value: number | null): number | null => (value === null ? null : Math.round(value * 10) / 10);

function runFigures(runs: RunAggregate | undefined, chat: ChatAggregate | undefined) {
  const r = runs ?? fromDay(emptyDay());
  return {
    runs: r.runs,
    completed: r.completed,
    failed: r.failed,
    cancelled: r.cancelled,
    success_rate: successRate(r.completed, r.failed),
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    cost: r.cost,
    latency_p50_ms: round(r.latency_p50_ms),
    latency_p95_ms: round(r.latency_p95_ms),
    conversations: chat?.conversations ?? 0,
    messages: chat?.messages ?? 0,
  };
}

/** The starts (epoch ms, UTC) of every bucket that meets [from, to). */
function bucketStarts({ from, to, bucket }: AnalyticsWindow): number[] {
  const first = new Date(from);
  first.setUTCMinutes(0, 0, 0);
  if (bucket === 'day') first.setUTCHours(0);
  const step = bucket === 'day' ? DAY_MS : HOUR_MS;
  const starts: number[] = [];
  for (let t = first.getTime(); t < to.getTime(); t += step) starts.push(t);
  return starts;
}

/** How a window is read: rolled-up days (`YYYY-MM-DD`, with their exact percentiles) and raw ranges. */
interface WindowPlan {
  clean: Map<string, { latency_p50_ms: number | null; latency_p95_ms: number | null }>;
  days: string[];
  ranges: Range[];
}

/** Code-point order (the same on every database and locale). */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Cost groups of the raw and the rolled-up part of a window added by (key, label), most
 * expensive first, then by label (nulls last).
 */
function mergeGroups(parts: CostGroup[][]): CostGroup[] {
  const groups = new Map<string, CostGroup>();
  for (const group of parts.flat()) {
    const id = JSON.stringify([group.key, group.label]);
    const into = groups.get(id);
    if (!into) groups.set(id, { ...group });
    else {
      into.cost += group.cost;
      into.input_tokens += group.input_tokens;
      into.output_tokens += group.output_tokens;
      into.count += group.count;
    }
  }
  return [...groups.values()].sort(
    (a, b) =>
      b.cost - a.cost ||
      (a.label === null ? 1 : 0) - (b.label === null ? 1 : 0) ||
      compare(a.label ?? '', b.label ?? '') ||
      compare(a.key ?? '', b.key ?? ''),
  );
}

/** The figures of `AgentStats` that add across parts of a window. */
const AGENT_SUMS = [
  'runs',
  'completed',
  'failed',
  'steps',
  'input_tokens',
  'output_tokens',
  'cost',
  'busy_ms',
] as const;

/** An agent's raw and rolled-up figures added (either may be absent); exact percentiles are the raw part's. */
function addAgentStats(raw: AgentStats | undefined, rolled: AgentStats | undefined): AgentStats {
  const sum: AgentStats = {
    runs: 0,
    completed: 0,
    failed: 0,
    steps: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost: 0,
    busy_ms: 0,
    latency_p50_ms: raw?.latency_p50_ms ?? null,
    latency_p95_ms: raw?.latency_p95_ms ?? null,
    latency: new Map(),
  };
  for (const part of [raw, rolled]) {
    if (!part) continue;
    for (const key of AGENT_SUMS) sum[key] += part[key];
    mergeInto(sum.latency, part.latency);
  }
  return sum;
}

/** Workspace analytics over a window, from aggregated SQL over the raw tables. */
export function createAnalyticsService(deps: AnalyticsDependencies) {
  const clock = deps.clock ?? (() => new Date());
  const repo = createAnalyticsRepository(deps.db);
  const useRollups = deps.rollups ?? true;

  /**
   * How [from, to) is read: the whole UTC days inside it that are rolled up and not dirty (with
   * their exact latency percentiles) from the rollups, and the rest (partial first and last
   * days, days not rolled up or dirty, today) as raw ranges. Without rollups: one raw range.
   * `finishedSteps` also reads raw the days that had unfinished agent steps when rolled up
   * (their busy time still grows).
   */
  async function planWindow(
    workspaceId: string,
    from: Date,
    to: Date,
    finishedSteps = false,
  ): Promise<WindowPlan> {
    const raw: WindowPlan = { clean: new Map(), days: [], ranges: [[from, to]] };
    if (!useRollups) return raw;
    const first = ceilDay(from.getTime());
    const end = floorDay(to.getTime());
    if (first >= end) return raw;
    const clean = await repo.cleanDays(workspaceId, dayKey(first), dayKey(end), finishedSteps);
    if (clean.size === 0) return raw;
    const ranges: Range[] = [];
    let cursor = from.getTime();
    for (let day = first; day < end; day += DAY_MS) {
      if (!clean.has(dayKey(day))) continue;
      if (cursor < day) ranges.push([new Date(cursor), new Date(day)]);
      cursor = day + DAY_MS;
    }
    if (cursor < to.getTime()) ranges.push([new Date(cursor), to]);
    return { clean, days: [...clean.keys()].sort(), ranges };
  }

  /** The run rollups' sums of a plan's rolled-up days, by day. */
  const rolledRunDays = (workspaceId: string, { days }: WindowPlan) =>
    repo.rollupDays(workspaceId, days[0] as string, dayKey(Date.parse(days.at(-1) as string) + DAY_MS));

  /**
   * The run figures of a planned window with rolled-up days: their sums and exact per-day
   * percentiles from the rollups, the raw ranges' from the runs; the totals' percentiles from
   * the merged histogram of both.
   */
  async function plannedDays(
    workspaceId: string,
    plan: WindowPlan,
  ): Promise<{ totals: RunAggregate; series: Map<number, RunAggregate> }> {
    const [raw, rolled, rolledLatency] = await Promise.all([
      repo.rawDays(workspaceId, plan.ranges),
      rolledRunDays(workspaceId, plan),
      repo.rollupLatency(workspaceId, plan.days),
    ]);
    const total = emptyDay();
    mergeInto(total.latency, rolledLatency);
    const series = new Map<number, RunAggregate>();
    for (const [day, percentiles] of plan.clean) {
      const { latency: _none, ...sums } = rolled.get(day) ?? emptyDay();
      addDay(total, { ...sums, latency: new Map() });
      series.set(Date.parse(day), { ...sums, ...percentiles });
    }
    for (const [day, { latency, latency_p50_ms, latency_p95_ms, ...sums }] of raw) {
      addDay(total, { ...sums, latency });
      series.set(Date.parse(day), {
        ...sums,
        latency_p50_ms: latency_p50_ms ?? null,
        latency_p95_ms: latency_p95_ms ?? null,
      });
    }
    return { totals: fromDay(total), series };
  }

  /** The window a query names: defaults, and a 400 naming the field for one that cannot be read. */
  function windowOf(query: AnalyticsQuery): AnalyticsWindow {
    const to = query.to ? new Date(query.to) : clock();
    const from = query.from ? new Date(query.from) : new Date(to.getTime() - DAY_MS);
    if (from.getTime() >= to.getTime()) throw invalid('query.from', 'must be before query.to');
    const span = to.getTime() - from.getTime();
    if (span > MAX_RANGE_DAYS * DAY_MS) {
      throw invalid('query.from', `must be at most ${MAX_RANGE_DAYS} days before query.to`);
    }
    const bucket = query.bucket ?? (span <= HOURLY_DEFAULT_UP_TO_MS ? 'hour' : 'day');
    if (bucket === 'hour' && span > MAX_HOUR_RANGE_DAYS * DAY_MS) {
      throw invalid('query.bucket', `hour needs a window of at most ${MAX_HOUR_RANGE_DAYS} days; use day`);
    }
    return { from, to, bucket };
  }

  return {
    windowOf,

    /** Runs, outcomes, tokens, cost, latency and chat activity: totals and a series. */
    async overview(caller: Who, query: AnalyticsQuery) {
      const window = windowOf(query);
      const { from, to, bucket } = window;
      const ws = caller.workspaceId;
      const plan = bucket === 'day' ? await planWindow(ws, from, to) : undefined;
      const planned = plan && plan.days.length > 0 ? await plannedDays(ws, plan) : undefined;
      const [totals, runSeries, chatSeries] = await Promise.all([
        planned ? planned.totals : repo.runTotals(ws, from, to),
        planned ? planned.series : repo.runSeries(ws, from, to, bucket),
        repo.chatSeries(ws, from, to, bucket),
      ]);
      const chatTotals = [...chatSeries.values()].reduce(
        (sum, c) => ({
          conversations: sum.conversations + c.conversations,
          messages: sum.messages + c.messages,
        }),
        { conversations: 0, messages: 0 },
      );
      return {
        ...window,
        totals: runFigures(totals, chatTotals),
        series: bucketStarts(window).map((start) => ({
          start: new Date(start),
          ...runFigures(runSeries.get(start), chatSeries.get(start)),
        })),
        rollup_days: plan?.days.length ?? 0,
      };
    },

    /**
     * The rollup job's work: for every workspace, computes each closed UTC day (over for
     * `ROLLUP_GRACE_MS`) after its latest rolled-up day (from the day of its first run, at
     * most `MAX_RANGE_DAYS` back) and every dirty day again, one workspace-day per
     * transaction. Idempotent, so two processes doing it at once only repeat work. Answers
     * how many days it computed.
     */
    async rollup(signal?: AbortSignal): Promise<number> {
      const now = clock().getTime();
      const closedEnd = floorDay(now - ROLLUP_GRACE_MS);
      const oldest = floorDay(now) - MAX_RANGE_DAYS * DAY_MS;
      let computed = 0;
      for (const workspaceId of await repo.workspaceIds()) {
        const state = await repo.rollupState(workspaceId);
        const days = new Set(state.dirty.filter((day) => Date.parse(day) < closedEnd));
        const start = state.last
          ? Date.parse(state.last) + DAY_MS
          : state.firstRunAt
            ? floorDay(state.firstRunAt.getTime())
            : closedEnd;
        for (let day = Math.max(start, oldest); day < closedEnd; day += DAY_MS) days.add(dayKey(day));
        for (const day of [...days].sort()) {
          if (signal?.aborted) return computed;
          await inTransaction(deps.db, (tx) => createAnalyticsRepository(tx).computeDay(workspaceId, day));
          computed += 1;
        }
      }
      return computed;
    },

    /**
     * Cost by provider, model, agent (from run steps) and workflow (from runs), and a series:
     * whole clean days from the rollups, the rest from the raw tables (`planWindow`).
     */
    async costs(caller: Who, query: AnalyticsQuery) {
      const window = windowOf(query);
      const { from, to, bucket } = window;
      const ws = caller.workspaceId;
      const plan = await planWindow(ws, from, to);
      // Hour buckets cannot come from daily rows: the series reads the raw runs then.
      const rolledSeries = bucket === 'day' && plan.days.length > 0;
      const [rawSteps, rolledSteps, workflows, series, rolledDays] = await Promise.all([
        repo.stepCosts(ws, plan.ranges),
        repo.rolledStepCosts(ws, plan.days),
        Promise.all([repo.workflowCosts(ws, plan.ranges), repo.rolledWorkflowCosts(ws, plan.days)]).then(
          mergeGroups,
        ),
        repo.costSeries(ws, rolledSeries ? plan.ranges : [[from, to]], bucket),
        rolledSeries ? rolledRunDays(ws, plan) : undefined,
      ]);
      const [providers, models, agents] = (['provider', 'model', 'agent'] as const).map((by) =>
        mergeGroups([rawSteps[by], rolledSteps[by]]),
      ) as [CostGroup[], CostGroup[], CostGroup[]];
      for (const day of rolledSeries ? plan.days : []) {
        series.set(Date.parse(day), rolledDays?.get(day)?.cost ?? 0);
      }
      const figures = (g: { cost: number; input_tokens: number; output_tokens: number }) => ({
        cost: g.cost,
        input_tokens: g.input_tokens,
        output_tokens: g.output_tokens,
      });
      return {
        ...window,
        total_cost: workflows.reduce((sum, g) => sum + g.cost, 0),
        by_provider: providers.map((g) => ({ provider: g.label, ...figures(g), steps: g.count })),
        by_model: models.map((g) => ({
          provider: g.key,
          model: g.label,
          ...figures(g),
          steps: g.count,
        })),
        by_agent: agents.map((g) => ({
          agent_id: g.key,
          agent_name: g.label,
          ...figures(g),
          steps: g.count,
        })),
        by_workflow: workflows.map((g) => ({
          workflow_id: g.key,
          workflow_name: g.label ?? '',
          ...figures(g),
          runs: g.count,
        })),
        series: bucketStarts(window).map((start) => ({
          start: new Date(start),
          cost: series.get(start) ?? 0,
        })),
        rollup_days: plan.days.length,
      };
    },

    /**
     * Every agent of the workspace with its figures over the window, busiest (by cost) first:
     * whole clean days from the rollups, the rest from the raw steps (`planWindow`).
     */
    async agents(caller: Who, query: AnalyticsQuery) {
      const window = windowOf(query);
      const { from, to } = window;
      const ws = caller.workspaceId;
      const plan = await planWindow(ws, from, to, true);
      const [agents, raw, rolled] = await Promise.all([
        repo.agentList(ws),
        repo.agentStats(ws, plan.ranges, [from, to], clock()),
        repo.rolledAgentStats(ws, plan.days),
      ]);
      const span = to.getTime() - from.getTime();
      const items = agents.map((agent) => {
        const a = addAgentStats(raw.get(agent.agent_id), rolled.get(agent.agent_id));
        // Exact percentiles when every step was read raw; the merged histogram's otherwise.
        const exact = plan.days.length === 0;
        return {
          agent_id: agent.agent_id,
          name: agent.name,
          status: agent.status,
          runs: a.runs,
          success_rate: successRate(a.completed, a.failed),
          steps: a.steps,
          input_tokens: a.input_tokens,
          output_tokens: a.output_tokens,
          cost: a.cost,
          latency_p50_ms: round(exact ? (a.latency_p50_ms ?? null) : quantile(a.latency, 0.5)),
          latency_p95_ms: round(exact ? (a.latency_p95_ms ?? null) : quantile(a.latency, 0.95)),
          busy_ms: Math.round(a.busy_ms),
          // Four decimals (0.01 % of the window): a few milliseconds of a day print as 0, not 3.3e-7.
          utilisation: Math.round(Math.min(1, a.busy_ms / span) * 10_000) / 10_000,
        };
      });
      items.sort((a, b) => b.cost - a.cost || compare(a.name, b.name) || compare(a.agent_id, b.agent_id));
      return { ...window, items, total: items.length, rollup_days: plan.days.length };
    },

    /**
     * The dashboard's counts of one workspace in one statement: runs created in [from, to),
     * runs and agents busy now, documents by state, and the searches counted since `from`'s
     * UTC day (searches of the last few seconds not yet written by the search counter are not in).
     */
    dashboardCounts: (workspaceId: string, from: Date, to: Date) =>
      repo.dashboardCounts(workspaceId, from, to, from.toISOString().slice(0, 10)),
  };
}

export type AnalyticsService = ReturnType<typeof createAnalyticsService>;
