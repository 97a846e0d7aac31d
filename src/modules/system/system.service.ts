import type { Db } from '../../db/transaction.ts';
import { infrastructureFailure } from '../../errors.ts';
import type { Component, ComponentHealth } from '../../lifecycle.ts';
import type { AnalyticsService } from '../analytics/analytics.service.ts';
import type { KnowledgeService } from '../knowledge/knowledge.service.ts';
import type { RetrievalService } from '../retrieval/retrieval.service.ts';
import { MINUTE_MS, minuteOf } from './heartbeat.ts';
import { createSystemRepository } from './system.repository.ts';

/** What the dashboard's metrics read besides component health. */
export interface MetricsDependencies {
  db: Db;
  analytics: Pick<AnalyticsService, 'runTotals' | 'liveRuns' | 'agentCounts'>;
  knowledge: Pick<KnowledgeService, 'documentCounts'>;
  retrieval: Pick<RetrievalService, 'hitRate'>;
}

export interface SystemDependencies {
  pingDatabase(): Promise<void>;
  /** Every database connection in use with requests waiting: a failed ping then means busy, not down. */
  databaseBusy?(): boolean;
  databaseKind: string;
  startedAt: Date;
  /**
   * The long-lived parts the report shows, each as its own `health()` says. A component
   * named as one of the spec's rows (`Redis`, `Vector Search`, `LLM Providers`) fills that
   * row; a row no component fills is `not_configured`; other components follow.
   */
  components?: readonly Component[];
  clock?: () => Date;
  /** Needed by `metrics()` only. */
  metrics?: MetricsDependencies;
}

/** The KPIs' window. */
const KPI_WINDOW_MS = 24 * 3_600_000;
/** Fewer finished runs (or searches) than this give no rate or percentile: a null with a reason. */
export const MIN_SAMPLE = 5;
/** The uptime percentage's window, in minutes. */
const UPTIME_WINDOW_MINUTES = 24 * 60;

/** Spec section 8: normal below 10 active plus queued, busy 10 to 20, overloaded above 20. */
export const loadBand = (count: number): 'normal' | 'busy' | 'overloaded' =>
  count < 10 ? 'normal' : count <= 20 ? 'busy' : 'overloaded';

/** Spec section 8: optimal utilisation 60 to 80 %; null without agents. */
export const utilisationBand = (percent: number | null): 'under' | 'optimal' | 'over' | null =>
  percent === null ? null : percent < 60 ? 'under' : percent <= 80 ? 'optimal' : 'over';

/** A KPI: its value, or null and why. */
interface Kpi {
  value: number | null;
  reason?: string;
}

const PING_TIMEOUT_MS = 2000;
/** The spec's component rows after API and Database, in its order. */
const SPEC_ROWS = ['Redis', 'Vector Search', 'LLM Providers'];

/** Health of the service and what it depends on. */
export function createSystemService(deps: SystemDependencies) {
  const clock = deps.clock ?? (() => new Date());
  const components = deps.components ?? [];

  /**
   * The database's row, and whether it is busy: a ping that could not get a connection
   * because every one is in use (refused `database_busy`, or still waiting for one) says the
   * database is answering others, so the row stays up and the report is Degraded, not Down.
   */
  async function checkDatabase(): Promise<ComponentHealth & { busy?: true }> {
    const started = performance.now();
    const engine = deps.databaseKind === 'pglite' ? 'embedded PGlite' : 'PostgreSQL';
    try {
      await withTimeout(deps.pingDatabase(), PING_TIMEOUT_MS);
      return {
        name: 'Database',
        status: 'up',
        latency_ms: Math.round((performance.now() - started) * 10) / 10,
        detail: engine,
      };
    } catch (error) {
      const timedOut = error instanceof Error && error.message === 'timeout';
      const refusedBusy = infrastructureFailure(error)?.code === 'database_busy';
      if (refusedBusy || (timedOut && deps.databaseBusy?.())) {
        return {
          name: 'Database',
          status: 'up',
          detail: `${engine}: busy, every connection is in use and requests wait for one (503 database_busy past DB_QUEUE_TIMEOUT_MS)`,
          busy: true,
        };
      }
      return {
        name: 'Database',
        status: 'down',
        detail: timedOut ? `no answer within ${PING_TIMEOUT_MS} ms` : 'query failed',
      };
    }
  }

  /** A component's own report under its row's name; one that throws or hangs is down. */
  async function checkComponent(name: string, component: Component | undefined): Promise<ComponentHealth> {
    if (!component) return { name, status: 'not_configured' };
    try {
      return { ...(await withTimeout(component.health(), PING_TIMEOUT_MS)), name };
    } catch (error) {
      const timedOut = error instanceof Error && error.message === 'timeout';
      return {
        name,
        status: 'down',
        detail: timedOut ? `no answer within ${PING_TIMEOUT_MS} ms` : 'health check failed',
      };
    }
  }

  /**
   * Operational when every configured component is up, Down when the database is
   * down (nothing works without it), Degraded when anything else configured is down.
   */
  async function health() {
    const others = components.filter((c) => !SPEC_ROWS.includes(c.name));
    const checked = await Promise.all([
      checkDatabase(),
      ...SPEC_ROWS.map((row) =>
        checkComponent(
          row,
          components.find((c) => c.name === row),
        ),
      ),
      ...others.map((c) => checkComponent(c.name, c)),
    ]);
    const [{ busy, ...database }, ...rest] = checked as [
      ComponentHealth & { busy?: true },
      ...ComponentHealth[],
    ];
    const rows: ComponentHealth[] = [{ name: 'API', status: 'up' }, database, ...rest];
    const down = rows.filter((c) => c.status === 'down').map((c) => c.name);
    const status = down.includes('Database') ? 'Down' : down.length > 0 || busy ? 'Degraded' : 'Operational';
    const now = clock();
    return {
      status: status as 'Operational' | 'Degraded' | 'Down',
      components: rows,
      started_at: deps.startedAt,
      uptime_seconds: Math.floor((now.getTime() - deps.startedAt.getTime()) / 1000),
      checked_at: now,
    };
  }

  /**
   * Minutes with a heartbeat over the minutes of the last 24 hours since the first heartbeat
   * (the current minute counts once recorded). Null before any heartbeat.
   */
  async function uptime(db: Db, now: Date) {
    const repo = createSystemRepository(db);
    const current = minuteOf(now);
    const windowStart = new Date(current.getTime() - (UPTIME_WINDOW_MINUTES - 1) * MINUTE_MS);
    const { first, recorded } = await repo.span(windowStart);
    if (!first)
      return { percent: null, reason: 'no heartbeat recorded yet', since: null, minutes: 0, recorded };
    let minutes = Math.round((current.getTime() - first.getTime()) / MINUTE_MS) + 1;
    if (!(await repo.hasMinute(current))) minutes -= 1;
    if (minutes <= 0)
      return { percent: null, reason: 'no whole minute recorded yet', since: first, minutes, recorded };
    return {
      percent: Math.round(Math.min(1, recorded / minutes) * 10_000) / 100,
      since: first,
      minutes,
      recorded,
    };
  }

  return {
    health,

    /** The dashboard's figures for one workspace (docs/analytics.md). */
    async metrics(workspaceId: string) {
      const m = deps.metrics;
      if (!m) throw new Error('system metrics need their dependencies');
      const now = clock();
      const since = new Date(now.getTime() - KPI_WINDOW_MS);
      const [runs, live, agents, documents, hits, report, up] = await Promise.all([
        m.analytics.runTotals(workspaceId, since, now),
        m.analytics.liveRuns(workspaceId),
        m.analytics.agentCounts(workspaceId),
        m.knowledge.documentCounts(workspaceId),
        m.retrieval.hitRate(workspaceId, since),
        health(),
        uptime(m.db, now),
      ]);
      const finished = runs.completed + runs.failed;
      const tooFew =
        finished < MIN_SAMPLE
          ? `${finished} finished runs in 24 hours; at least ${MIN_SAMPLE} needed`
          : undefined;
      const kpi = (value: number | null, ifNone: string): Kpi =>
        tooFew
          ? { value: null, reason: tooFew }
          : value === null
            ? { value: null, reason: ifNone }
            : { value };
      const hitRate: Kpi =
        hits.searches < MIN_SAMPLE
          ? { value: null, reason: `${hits.searches} searches in 24 hours; at least ${MIN_SAMPLE} needed` }
          : { value: hits.rate };
      const active = live.running + live.queued;
      const utilisation = agents.total === 0 ? null : Math.round((agents.busy / agents.total) * 1000) / 10;
      return {
        window: { from: since, to: now },
        runs: { total: runs.runs, finished, completed: runs.completed, failed: runs.failed },
        success_rate: kpi(finished === 0 ? null : runs.completed / finished, 'no finished run'),
        latency_p50_ms: kpi(roundMs(runs.latency_p50_ms), 'no run recorded a duration'),
        latency_p95_ms: kpi(roundMs(runs.latency_p95_ms), 'no run recorded a duration'),
        retrieval_hit_rate: { ...hitRate, searches: hits.searches, hits: hits.hits },
        cost: kpi(runs.cost, 'no run'),
        workflows: { running: live.running, queued: live.queued, active, band: loadBand(active) },
        agents: {
          total: agents.total,
          active: agents.busy,
          utilisation_percent: utilisation,
          band: utilisationBand(utilisation),
        },
        documents,
        system: {
          status: report.status,
          components: report.components,
          uptime_percent: up.percent,
          ...(up.reason ? { uptime_reason: up.reason } : {}),
          uptime_since: up.since,
          uptime_window_minutes: up.minutes,
          uptime_minutes_recorded: up.recorded,
        },
      };
    },
  };
}

export type SystemService = ReturnType<typeof createSystemService>;

const roundMs = (value: number | null): number | null =>
  value === null ? null : Math.round(value * 10) / 10;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
