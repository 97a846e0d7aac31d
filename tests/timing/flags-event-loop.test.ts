import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contextAtLimit, hostileRule } from '../helpers/hostile-conditions.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Evaluating every flag of a workspace never holds the event loop (issue 23, 1.3): however many
 * flags of the heaviest rules a workspace holds, the evaluation turns the loop between them. A
 * timing test: it lives in the `timing` project, run alone after every other, so that other
 * test files' CPU does not pass for the service's stalls (vitest.config.ts).
 */

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('evaluating every flag of a workspace', () => {
  it('turns the event loop between flags, however many heavy flags the workspace holds', async () => {
    const bob = await t.newWorkspace('conditions-bob');
    const rules = Array.from({ length: 50 }, (_, i) => ({ when: hostileRule('doc', i), variant: 'on' }));
    for (let i = 0; i < 40; i += 1) {
      const response = await t.call(bob, 'PUT', `/api/settings/flags/heavy.f${i}`, {
        type: 'boolean',
        default: false,
        variants: { on: true },
        rules,
      });
      expect(response.statusCode, response.body).toBe(200);
    }
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const response = await t.call(bob, 'POST', '/api/settings/flags/evaluate', { context: contextAtLimit() });
    // The monitor samples when its timer fires: let it fire once after the request.
    await new Promise((resolve) => setTimeout(resolve, 50));
    loop.disable();
    expect(response.statusCode, response.body).toBe(200);
    expect(
      response.json().items.filter((item: { key: string }) => item.key.startsWith('heavy.')),
    ).toHaveLength(40);
    // The longest single stall (not a p99: one evaluation is one sample), so it also holds a
    // garbage collection of this process's large strings: 250 ms, scaled by how many runnable
    // threads share each core on a loaded machine. Before the fix, 60 such flags held it 1.8 s.
    const contention = Math.max(1, (os.loadavg()[0] ?? 0) / os.availableParallelism());
    expect(loop.max / 1e6, `the longest stall, at a contention of ${contention}`).toBeLessThan(
      250 * contention,
    );
  });
});
