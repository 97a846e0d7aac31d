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

/**
 * Starts `components` in order (each may use those before it). When one fails, those
 * already started are stopped in reverse before the error is rethrown, so a failed start
 * leaves no connection or timer behind.
 */
export async function startComponents(components: readonly Component[]): Promise<void> {
  const started: Component[] = [];
  try {
    for (const component of components) {
      await component.start();
      started.push(component);
    }
  } catch (error) {
    await stopComponents(started, () => {});
    throw error;
  }
}

/**
 * Stops `components` in reverse order, each one even when an earlier one failed to stop:
 * a shutdown must release everything it can. `onError` hears each failure.
 */
export async function stopComponents(
  components: readonly Component[],
  onError: (component: Component, error: unknown) => void,
): Promise<void> {
  for (const component of [...components].reverse()) {
    try {
      await component.stop();
    } catch (error) {
      onError(component, error);
    }
  }
}
