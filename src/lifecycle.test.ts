import { describe, expect, it } from 'vitest';
import { type Component, startComponents, stopComponents } from './lifecycle.ts';

function recorder() {
  const events: string[] = [];
  const component = (name: string, failOn?: 'start' | 'stop'): Component => ({
    name,
    start: async () => {
      if (failOn === 'start') throw new Error(`${name} cannot start`);
      events.push(`start ${name}`);
    },
    stop: async () => {
      events.push(`stop ${name}`);
      if (failOn === 'stop') throw new Error(`${name} cannot stop`);
    },
    health: async () => ({ name, status: 'up' }),
  });
  return { events, component };
}

describe('components', () => {
  it('start in order and stop in reverse', async () => {
    const { events, component } = recorder();
    const parts = [component('redis'), component('hub'), component('queue')];
    await startComponents(parts);
    await stopComponents(parts, () => {});
    expect(events).toEqual([
      'start redis',
      'start hub',
      'start queue',
      'stop queue',
      'stop hub',
      'stop redis',
    ]);
  });

  it('a failed start stops what had started, then fails', async () => {
    const { events, component } = recorder();
    await expect(
      startComponents([component('redis'), component('hub'), component('queue', 'start')]),
    ).rejects.toThrow('queue cannot start');
    expect(events).toEqual(['start redis', 'start hub', 'stop hub', 'stop redis']);
  });

  it('a failed stop does not keep the others running', async () => {
    const { events, component } = recorder();
    const failures: string[] = [];
    await stopComponents([component('redis'), component('hub', 'stop'), component('queue')], (c, error) =>
      failures.push(`${c.name}: ${(error as Error).message}`),
    );
    expect(events).toEqual(['stop queue', 'stop hub', 'stop redis']);
    expect(failures).toEqual(['hub: hub cannot stop']);
  });
});
