/** One component in the health report. */
export interface ComponentHealth {
  name: string;
  status: 'up' | 'down' | 'not_configured';
  latency_ms?: number;
  detail?: string;
}

export interface SystemDependencies {
  pingDatabase(): Promise<void>;
  databaseKind: string;
  startedAt: Date;
  clock?: () => Date;
}

const PING_TIMEOUT_MS = 2000;

/** Health of the service and what it depends on. */
export function createSystemService(deps: SystemDependencies) {
  const clock = deps.clock ?? (() => new Date());

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

  return {
    /**
     * Operational when every configured component is up, Down when the database is
     * down (nothing works without it), Degraded when anything else configured is down.
     */
    async health() {
      const components: ComponentHealth[] = [
        { name: 'API', status: 'up' },
        await checkDatabase(),
        { name: 'Redis', status: 'not_configured' },
        { name: 'Vector Search', status: 'not_configured' },
        { name: 'LLM Providers', status: 'not_configured' },
      ];
      const down = components.filter((c) => c.status === 'down').map((c) => c.name);
      const status = down.includes('Database') ? 'Down' : down.length > 0 ? 'Degraded' : 'Operational';
      const now = clock();
      return {
        status: status as 'Operational' | 'Degraded' | 'Down',
        components,
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
