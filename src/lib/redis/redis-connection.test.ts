import { describe, expect, it } from 'vitest';
import { reconnectDelayMs } from './redis-connection.ts';

describe('reconnectDelayMs', () => {
  it('doubles from 100 ms to a 2 s cap, forever, with up to 25 % jitter', () => {
    expect([1, 2, 3, 4, 5, 6, 50, 10_000].map((attempt) => reconnectDelayMs(attempt, () => 0))).toEqual([
      100, 200, 400, 800, 1600, 2000, 2000, 2000,
    ]);
    expect(reconnectDelayMs(1, () => 1)).toBe(125);
    expect(reconnectDelayMs(100, () => 1)).toBe(2500);
  });
});
