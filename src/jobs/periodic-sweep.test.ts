import { describe, expect, it } from 'vitest';
import { createLogger } from '../logger.ts';
import { createPeriodicSweep, type SweepReason } from './periodic-sweep.ts';

const log = createLogger('silent');

/** A sweep whose runs the test settles by hand. */
function controlledWork() {
  const calls: SweepReason[] = [];
  const pending: Array<{ resolve: (n: number) => void; reject: (e: Error) => void; signal: AbortSignal }> =
    [];
  const work = (reason: SweepReason, signal: AbortSignal) =>
    new Promise<number>((resolve, reject) => {
      calls.push(reason);
      pending.push({ resolve, reject, signal });
    });
  return { calls, pending, work };
}

describe('periodic sweep', () => {
  it('runs one sweep at a time: asking during a sweep answers that sweep', async () => {
    const { calls, pending, work } = controlledWork();
    const sweeper = createPeriodicSweep({ name: 'Test', log, intervalMs: 60_000, failure: 'failed', work });
    const first = sweeper.sweep();
    const second = sweeper.sweep('periodic');
    expect(calls).toEqual(['urgent']);
    pending[0]?.resolve(3);
    expect(await first).toBe(3);
    expect(await second).toBe(3);
    const third = sweeper.sweep();
    expect(calls).toHaveLength(2);
    pending[1]?.resolve(1);
    expect(await third).toBe(1);
  });

  it('reports the last failure as its health until a sweep succeeds', async () => {
    const { pending, work } = controlledWork();
    const sweeper = createPeriodicSweep({ name: 'Test', log, intervalMs: 60_000, failure: 'failed', work });
    const failing = sweeper.sweep();
    pending[0]?.reject(new Error('database away'));
    expect(await failing).toBe(0);
    expect(await sweeper.health()).toEqual({ name: 'Test', status: 'down', detail: 'database away' });
    const next = sweeper.sweep();
    pending[1]?.resolve(0);
    await next;
    expect(await sweeper.health()).toEqual({ name: 'Test', status: 'up' });
  });

  it('sweeps on its timer until stopped', async () => {
    const { calls, pending, work } = controlledWork();
    const sweeper = createPeriodicSweep({ name: 'Test', log, intervalMs: 10, failure: 'failed', work });
    await sweeper.start();
    expect(calls).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(calls[0]).toBe('periodic');
    for (const run of pending) run.resolve(0);
    await sweeper.stop();
    const count = calls.length;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(calls.length).toBe(count);
  });

  it('sweeps at start when asked and on its event, and stops by aborting the sweep in flight and waiting', async () => {
    const { calls, pending, work } = controlledWork();
    let fire: (() => void) | undefined;
    let subscribed = 0;
    const sweeper = createPeriodicSweep({
      name: 'Test',
      log,
      intervalMs: 60_000,
      failure: 'failed',
      work,
      atStart: true,
      alsoOn: (sweep) => {
        subscribed += 1;
        fire = sweep;
        return () => {
          subscribed -= 1;
        };
      },
    });
    const started = sweeper.start();
    expect(calls).toEqual(['urgent']);
    pending[0]?.resolve(0);
    await started;
    expect(subscribed).toBe(1);
    fire?.();
    expect(calls).toEqual(['urgent', 'urgent']);
    const inFlight = pending[1];
    let stopped = false;
    const stopping = sweeper.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(inFlight?.signal.aborted).toBe(true);
    expect(stopped).toBe(false);
    inFlight?.resolve(0);
    await stopping;
    expect(subscribed).toBe(0);
  });
});
