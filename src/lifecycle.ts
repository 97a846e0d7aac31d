/** One component in the health report (`/api/system/health`). */
export interface ComponentHealth {
  name: string;
  status: 'up' | 'down' | 'not_configured';
  latency_ms?: number;
  detail?: string;
}

/**
 * A long-lived part of the process (Redis, the job queue's workers, the event hub, the
 * model providers). `main.ts` starts them in order and stops them in reverse; the health
 * report asks each one for its own state instead of hard-coding rows.
 */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  health(): Promise<ComponentHealth>;
}
