import type { Component, ComponentHealth } from '../../lifecycle.ts';

export interface SystemDependencies {
  pingDatabase(): Promise<void>;
  databaseKind: string;
  startedAt: Date;
  /**
   * The long-lived parts the report shows, each as its own `health()` says. A component
   * named as one of the spec's rows (`Redis`, `Vector Search`, `LLM Providers`) fills that
   * row; a row no component fills is `not_configured`; other components follow.
   */
  components?: readonly Component[];
  clock?: () => Date;
}

const PING_TIMEOUT_MS = 2000;
/** The spec's component rows after API and Database, in its order. */
const SPEC_ROWS = ['Redis', 'Vector Search', 'LLM Providers'];

/** Health of the service and what it depends on. */
export function createSystemService(deps: SystemDependencies) {
  const clock = deps.clock ?? (() => new Date());
  const components = deps.components ?? [];

  async function checkDatabase(): Promise<ComponentHealth> {
    const started = performance.now();
    try {
      await withTimeout(deps.pingDatabase(), PING_TIMEOUT_MS);
      return {
        name: 'Database',
        status: 'up',
        latency_ms: Math.round((performance.now() - started) * 10) / 10,
        detail: deps.databaseKind === 'pglite' ? 'embedded PGlite' : 'PostgreSQL',
      };
    } catch (error) {
      const timedOut = error instanceof Error && error.message === 'timeout';
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

  return {
    /**
     * Operational when every configured component is up, Down when the database is
     * down (nothing works without it), Degraded when anything else configured is down.
     */
    async health() {
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
      const rows: ComponentHealth[] = [{ name: 'API', status: 'up' }, ...checked];
      const down = rows.filter((c) => c.status === 'down').map((c) => c.name);
      const status = down.includes('Database') ? 'Down' : down.length > 0 ? 'Degraded' : 'Operational';
      const now = clock();
      return {
        status: status as 'Operational' | 'Degraded' | 'Down',
        components: rows,
        started_at: deps.startedAt,
        uptime_seconds: Math.floor((now.getTime() - deps.startedAt.getTime()) / 1000),
        checked_at: now,
      };
    },
  };
}

export type SystemService = ReturnType<typeof createSystemService>;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
