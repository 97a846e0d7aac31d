import type { Db } from '../../db/transaction.ts';
import { infrastructureFailure } from '../../errors.ts';
import type { Component, ComponentHealth } from '../../lifecycle.ts';
import type { AnalyticsService } from '../analytics/analytics.service.ts';
import { MINUTE_MS, minuteOf } from './heartbeat.ts';
import { createSystemRepository } from './system.repository.ts';

/** What the dashboard's metrics read besides component health. */
export interface MetricsDependencies {
  /** Where the heartbeat minutes are (the uptime percentage). */
  db: Db;
  /** The KPIs' counts, one statement per workspace. */
  analytics: Pick<AnalyticsService, 'dashboardCounts'>;
}

/**
 * The model providers' reachability, as the gateway last probed it. Providers are configured
 * per workspace, so their state is a workspace's affair: the platform's status never depends
 * on it, a workspace sees only its own, and only platform operators see across workspaces.
 */
export interface ProviderHealth {
  /** Every workspace's endpoints: counts across tenants and the workspaces whose endpoints fail. */
  health(): Promise<ComponentHealth>;
  /** One workspace's own endpoints, nothing about any other workspace. */
  workspaceHealth(workspaceId: string): Promise<ComponentHealth>;
}

/** Who reads the health report: what it may show them. */
export interface HealthViewer {
  /** A platform operator (`PLATFORM_ADMIN_USERS`): sees the cross-tenant provider row. */
  operator: boolean;
}

export interface SystemDependencies {
  pingDatabase(): Promise<void>;
  /** Every database connection in use with requests waiting: a failed ping then means busy, not down. */
  databaseBusy?(): boolean;
  databaseKind: string;
  startedAt: Date;
  /**
   * The long-lived parts of the platform the report shows, each as its own `health()` says. A
   * component named as one of the spec's rows (`Redis`, `Vector Search`) fills that row; a row
   * no component fills is `not_configured`; other components follow.
   */
  components?: readonly Component[];
  /** Fills the `LLM Providers` row, per viewer; `not_configured` without it. */
  providers?: ProviderHealth;
  clock?: () => Date;
  /** Needed by `metrics()` only. */
  metrics?: MetricsDependencies;
  /** How long a metrics answer is shared by the requests of its workspace; `METRICS_SHARE_MS` by default. */
  shareMs?: number;
}

/**
 * How long a workspace's metrics answer, and the component rows and uptime in it, are reused:
 * a dashboard polled by many clients costs one computation per workspace every few seconds.
 */
export const METRICS_SHARE_MS = 5_000;

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
/** The spec's component rows after API and Database, in its order; `LLM Providers` comes last. */
const PLATFORM_ROWS = ['Redis', 'Vector Search'];
const PROVIDERS_ROW = 'LLM Providers';
type Status = 'Operational' | 'Degraded' | 'Down';

/** The platform's rows as checked, and whether the database is up but out of connections. */
interface PlatformRows {
  rows: ComponentHealth[];
  busy: boolean;
}

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
  async function checkComponent(
    name: string,
    component: Pick<Component, 'health'> | undefined,
  ): Promise<ComponentHealth> {
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
   * The platform's own rows (API, Database, Redis, Vector Search, other components), checked
   * now, and whether the database is busy (up, but every connection in use).
   */
  async function platformRows(): Promise<PlatformRows> {
    const others = components.filter((c) => !PLATFORM_ROWS.includes(c.name));
    const checked = await Promise.all([
      checkDatabase(),
      ...PLATFORM_ROWS.map((row) =>
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
    return { rows: [{ name: 'API', status: 'up' }, database, ...rest], busy: busy === true };
  }

  /**
   * The `LLM Providers` row: a workspace's own providers (the metrics of that workspace), every
   * workspace's for a platform operator, else only that providers are a workspace's affair.
   */
  function providersRow(view: HealthViewer | { workspaceId: string }): Promise<ComponentHealth> {
    const providers = deps.providers;
    if (!providers) return Promise.resolve({ name: PROVIDERS_ROW, status: 'not_configured' });
    if ('workspaceId' in view) {
      return checkComponent(PROVIDERS_ROW, { health: () => providers.workspaceHealth(view.workspaceId) });
    }
    if (view.operator) return checkComponent(PROVIDERS_ROW, providers);
    return Promise.resolve({
      name: PROVIDERS_ROW,
      status: 'up',
      detail: 'providers are configured per workspace: GET /api/system/metrics shows your workspace’s',
    });
  }

  /**
   * Down when the database is down (nothing works without it), Degraded when it is busy, when
   * another platform row is down, or the workspace's own providers are (`ownProviders`), else
   * Operational. Providers are a workspace's: another workspace's broken endpoint never
   * degrades anyone.
   */
  function statusOf({ rows, busy }: PlatformRows, ownProviders?: ComponentHealth): Status {
    const down = rows.filter((c) => c.status === 'down').map((c) => c.name);
    if (down.includes('Database')) return 'Down';
    return busy || down.length > 0 || ownProviders?.status === 'down' ? 'Degraded' : 'Operational';
  }

  /** The report: the platform's spec rows, the providers' row, then the other components. */
  function report(rows: ComponentHealth[], providers: ComponentHealth, status: Status) {
    const now = clock();
    const specRows = 2 + PLATFORM_ROWS.length; // API, Database, then Redis and Vector Search
    return {
      status,
      components: [...rows.slice(0, specRows), providers, ...rows.slice(specRows)],
      started_at: deps.startedAt,
      uptime_seconds: Math.floor((now.getTime() - deps.startedAt.getTime()) / 1000),
      checked_at: now,
    };
  }

  /**
   * The health report, checked now (the database pinged, each component asked). Operators see
   * the providers of every workspace; anyone else sees no count or failure of another tenant.
   */
  async function health(viewer: HealthViewer = { operator: false }) {
    const [platform, providers] = await Promise.all([platformRows(), providersRow(viewer)]);
    return report(platform.rows, providers, statusOf(platform));
  }

  /**
   * Minutes with a heartbeat over the minutes of the last 24 hours since the first heartbeat
   * (the current minute counts once recorded). Null before any heartbeat.
   */
  async function uptime(db: Db, now: Date) {
    const current = minuteOf(now);
    const windowStart = new Date(current.getTime() - (UPTIME_WINDOW_MINUTES - 1) * MINUTE_MS);
    const { first, recorded, hasMinute } = await createSystemRepository(db).span(windowStart, current);
    if (!first)
      return { percent: null, reason: 'no heartbeat recorded yet', since: null, minutes: 0, recorded };
    let minutes = Math.round((current.getTime() - first.getTime()) / MINUTE_MS) + 1;
    if (!hasMinute) minutes -= 1;
    if (minutes <= 0)
      return { percent: null, reason: 'no whole minute recorded yet', since: first, minutes, recorded };
    return {
      percent: Math.round(Math.min(1, recorded / minutes) * 10_000) / 100,
      since: first,
      minutes,
      recorded,
    };
  }

  const shareMs = deps.shareMs ?? METRICS_SHARE_MS;
  /** The platform rows and the uptime: the same for every workspace, so shared by all of them. */
  const sharedPlatform = shareFor<{ platform: PlatformRows; up: Awaited<ReturnType<typeof uptime>> }>(
    shareMs,
    clock,
  );
  const sharedMetrics = shareFor<Awaited<ReturnType<typeof computeMetrics>>>(shareMs, clock);

  /** The dashboard's figures for one workspace, computed now (docs/analytics.md). */
  async function computeMetrics(m: MetricsDependencies, workspaceId: string) {
    const now = clock();
    const since = new Date(now.getTime() - KPI_WINDOW_MS);
    const [counts, platform, providers] = await Promise.all([
      m.analytics.dashboardCounts(workspaceId, since, now),
      sharedPlatform('platform', async () => {
        const [rows, up] = await Promise.all([platformRows(), uptime(m.db, now)]);
        return { platform: rows, up };
      }),
      providersRow({ workspaceId }),
    ]);
    const { runs, live, agents, documents, searches: hits } = counts;
    const up = platform.up;
    const { status, components: rows } = report(
      platform.platform.rows,
      providers,
      statusOf(platform.platform, providers),
    );
    const finished = runs.completed + runs.failed;
    const tooFew =
      finished < MIN_SAMPLE
        ? `${finished} finished runs in 24 hours; at least ${MIN_SAMPLE} needed`
        : undefined;
    const kpi = (value: number | null, ifNone: string): Kpi =>
      tooFew ? { value: null, reason: tooFew } : value === null ? { value: null, reason: ifNone } : { value };
    const hitRate: Kpi =
      hits.searches < MIN_SAMPLE
        ? { value: null, reason: `${hits.searches} searches in 24 hours; at least ${MIN_SAMPLE} needed` }
        : { value: hits.hits / hits.searches };
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
        status,
        components: rows,
        uptime_percent: up.percent,
        ...(up.reason ? { uptime_reason: up.reason } : {}),
        uptime_since: up.since,
        uptime_window_minutes: up.minutes,
        uptime_minutes_recorded: up.recorded,
      },
    };
  }

  return {
    health,

    /**
     * The dashboard's figures for one workspace (docs/analytics.md), shared for `shareMs` by
     * the requests of that workspace: concurrent requests wait for one computation, which
     * costs one statement for the KPIs, and the component rows and uptime are shared by all
     * workspaces. A failed computation is not kept.
     */
    metrics(workspaceId: string) {
      const m = deps.metrics;
      if (!m) throw new Error('system metrics need their dependencies');
      return sharedMetrics(workspaceId, () => computeMetrics(m, workspaceId));
    },
  };
}

export type SystemService = ReturnType<typeof createSystemService>;

/**
 * A single-flight memo by key: the first caller computes, the callers within `ttlMs` of the
 * computation's start share its promise (pending or settled), and a rejected computation is
 * dropped at once so the next caller tries again. Expired entries go on the next computation,
 * so the map holds only keys asked for within `ttlMs`.
 */
function shareFor<V>(ttlMs: number, clock: () => Date) {
  const entries = new Map<string, { at: number; value: Promise<V> }>();
  return (key: string, compute: () => Promise<V>): Promise<V> => {
    const now = clock().getTime();
    const entry = entries.get(key);
    if (entry && now - entry.at < ttlMs) return entry.value;
    for (const [stale, { at }] of entries) if (now - at >= ttlMs) entries.delete(stale);
    const fresh = { at: now, value: compute() };
    entries.set(key, fresh);
    fresh.value.catch(() => {
      if (entries.get(key) === fresh) entries.delete(key);
    });
    return fresh.value;
  };
}

const roundMs = (value: number | null): number | null =>
  value === null ? null : Math.round(value * 10) / 10;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
