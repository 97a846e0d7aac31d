import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.ts';
import { runAsWorkStartedAt } from '../lib/request-order.ts';
import { ConnectionGate } from './connection-gate.ts';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('ConnectionGate', () => {
  it('serves one at a time, the oldest request first whatever the order of arrival', async () => {
    const gate = new ConnectionGate({ timeoutMs: 10_000, maxQueue: 100 });
    const order: string[] = [];
    let release = () => {};
    const holder = gate.run(() => new Promise<void>((resolve) => (release = resolve)));
    await tick();
    // Requests that began before now, in performance.now() time like the real ones.
    const base = performance.now() - 1000;
    const queued = [
      runAsWorkStartedAt(base + 300, () => gate.run(async () => order.push('started at 300'))),
      runAsWorkStartedAt(base + 100, () => gate.run(async () => order.push('started at 100'))),
      gate.run(async () => order.push('no request')),
      runAsWorkStartedAt(base + 200, () => gate.run(async () => order.push('started at 200'))),
    ];
    expect(gate.waiting).toBe(4);
    release();
    await Promise.all([holder, ...queued]);
    expect(order).toEqual(['started at 100', 'started at 200', 'started at 300', 'no request']);
    expect(gate.waiting).toBe(0);
  });

  it('turns away a waiter past its deadline even when its timer could not fire', async () => {
    const gate = new ConnectionGate({ timeoutMs: 1, maxQueue: 100 });
    let release = () => {};
    const holder = gate.run(() => new Promise<void>((resolve) => (release = resolve)));
    await tick();
    const late = gate.run(async () => 'served');
    // Busy-wait past the deadline without yielding to timers, as a run of PGlite statements does.
    const until = performance.now() + 5;
    while (performance.now() < until) {}
    release();
    await holder;
    await expect(late).rejects.toMatchObject({ status: 503, code: 'database_busy' });
    await expect(gate.run(async () => 'next')).resolves.toBe('next');
  });

  it('refuses at once beyond maxQueue and recovers when the line drains', async () => {
    const gate = new ConnectionGate({ timeoutMs: 10_000, maxQueue: 1 });
    let release = () => {};
    const holder = gate.run(() => new Promise<void>((resolve) => (release = resolve)));
    await tick();
    const waiting = gate.run(async () => 'waited');
    const refused = await gate.run(async () => 'never').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).headers).toEqual({ 'Retry-After': '1' });
    await tick();
    release();
    await holder;
    await expect(waiting).resolves.toBe('waited');
  });

  it('serves as many at once as it has connections, says when it is saturated, and names what', async () => {
    const gate = new ConnectionGate({ timeoutMs: 50, maxQueue: 100, connections: 2, what: 'the pool' });
    const releases: (() => void)[] = [];
    const hold = () => gate.run(() => new Promise<void>((resolve) => releases.push(resolve)));
    const holders = [hold(), hold()];
    await tick();
    expect(releases).toHaveLength(2);
    expect(gate.saturated).toBe(false);
    const third = gate.run(async () => 'third');
    expect(gate.saturated).toBe(true);
    await expect(third).rejects.toMatchObject({
      code: 'database_busy',
      message: 'the pool is saturated; retry shortly',
    });
    expect(gate.saturated).toBe(false);
    const fourth = gate.run(async () => 'fourth');
    releases[0]?.();
    await expect(fourth).resolves.toBe('fourth');
    releases[1]?.();
    await Promise.all(holders);
    // Both places are free again: two callers are served at once.
    await tick();
    const again = [hold(), hold()];
    await tick();
    expect(releases).toHaveLength(4);
    releases[2]?.();
    releases[3]?.();
    await Promise.all(again);
  });
});
