import type { Caller } from '../../caller.ts';
import { type Db, inTransaction } from '../../db/transaction.ts';
import { invalid } from '../../errors.ts';
import { type Histogram, mergeInto, quantile } from '../../lib/histogram.ts';
import {
  type Bucket,
  type ChatAggregate,
  createAnalyticsRepository,
  type DayFigures,
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
  const r = runs ?? {
    runs: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    input_tokens: 0,
    output_tokens: 0,
    cost: 0,
    latency_p50_ms: null,
    latency_p95_ms: null,
  };
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

/** Workspace analytics over a window, from aggregated SQL over the raw tables. */
export function createAnalyticsService(deps: AnalyticsDependencies) {
  const clock = deps.clock ?? (() => new Date());
  const repo = createAnalyticsRepository(deps.db);
  const useRollups = deps.rollups ?? true;

  /**
   * The run figures of a day-bucketed window, when any whole day of it is rolled up and clean:
   * those days from the rollups (sums, their exact per-day percentiles, and their merged
   * histogram for the totals), the rest (partial first and last days, days not rolled up or
   * dirty, today) from the raw runs. Undefined when no rollup applies.
   */
  async function plannedDays(
    workspaceId: string,
    from: Date,
    to: Date,
  ): Promise<{ totals: RunAggregate; series: Map<number, RunAggregate>; rolled: number } | undefined> {
    if (!useRollups) return undefined;
    const first = ceilDay(from.getTime());
    const end = floorDay(to.getTime());
    if (first >= end) return undefined;
    const clean = await repo.cleanDays(workspaceId, dayKey(first), dayKey(end));
    if (clean.size === 0) return undefined;
    const ranges: Array<[Date, Date]> = [];
    let cursor = from.getTime();
    for (let day = first; day < end; day += DAY_MS) {
      if (!clean.has(dayKey(day))) continue;
      if (cursor < day) ranges.push([new Date(cursor), new Date(day)]);
      cursor = day + DAY_MS;
    }
    if (cursor < to.getTime()) ranges.push([new Date(cursor), to]);
    const [raw, rolled, rolledLatency] = await Promise.all([
      repo.rawDays(workspaceId, ranges),
      repo.rollupDays(workspaceId, dayKey(first), dayKey(end)),
      repo.rollupLatency(workspaceId, [...clean.keys()]),
    ]);
    const total = emptyDay();
    mergeInto(total.latency, rolledLatency);
    const series = new Map<number, RunAggregate>();
    for (const [day, percentiles] of clean) {
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
    return { totals: fromDay(total), series, rolled: clean.size };
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
      const planned = bucket === 'day' ? await plannedDays(ws, from, to) : undefined;
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
        rollup_days: planned?.rolled ?? 0,
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

    /** Cost by provider, model, agent (from run steps) and workflow (from runs), and a series. */
    async costs(caller: Who, query: AnalyticsQuery) {
      const window = windowOf(query);
      const { from, to, bucket } = window;
      const ws = caller.workspaceId;
      const [providers, models, agents, workflows, series] = await Promise.all([
        repo.stepCosts(ws, from, to, 'provider'),
        repo.stepCosts(ws, from, to, 'model'),
        repo.stepCosts(ws, from, to, 'agent'),
        repo.workflowCosts(ws, from, to),
        repo.costSeries(ws, from, to, bucket),
      ]);
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
      };
    },

    /** Every agent of the workspace with its figures over the window, busiest (by cost) first. */
    async agents(caller: Who, query: AnalyticsQuery) {
      const window = windowOf(query);
      const span = window.to.getTime() - window.from.getTime();
      const stats = await repo.agentStats(caller.workspaceId, window.from, window.to, clock());
      const items = stats.map((a) => ({
        agent_id: a.agent_id,
        name: a.name,
        status: a.status,
        runs: a.runs,
        success_rate: successRate(a.completed, a.failed),
        steps: a.steps,
        input_tokens: a.input_tokens,
        output_tokens: a.output_tokens,
        cost: a.cost,
        latency_p50_ms: round(a.latency_p50_ms),
        latency_p95_ms: round(a.latency_p95_ms),
        busy_ms: Math.round(a.busy_ms),
        utilisation: Math.min(1, a.busy_ms / span),
      }));
      return { ...window, items, total: items.length };
    },

    /** Run figures of [from, to) for the dashboard's KPIs. */
    runTotals: (workspaceId: string, from: Date, to: Date) => repo.runTotals(workspaceId, from, to),
    /** Runs Running and Queued now. */
    liveRuns: (workspaceId: string) => repo.liveRuns(workspaceId),
    /** Agents of the workspace, and those Busy now. */
    agentCounts: (workspaceId: string) => repo.agentCounts(workspaceId),
  };
}

export type AnalyticsService = ReturnType<typeof createAnalyticsService>;
