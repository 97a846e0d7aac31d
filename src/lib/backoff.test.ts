import { describe, expect, it } from 'vitest';
import { retryDelayMs } from './backoff.ts';

describe('retryDelayMs', () => {
  it('doubles per attempt and takes off up to half at random, as BullMQ exponential backoff with jitter 0.5', () => {
    const top = () => 1;
    const bottom = () => 0;
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, 1000, { random: top }))).toEqual([
      1000, 2000, 4000, 8000,
    ]);
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, 1000, { random: bottom }))).toEqual([
      500, 1000, 2000, 4000,
    ]);
    expect(retryDelayMs(2, 1000, { random: () => 0.5 })).toBe(1500);
  });

  it('stops growing at the cap', () => {
    expect(retryDelayMs(1, 500, { capMs: 30_000, random: () => 0 })).toBe(250);
    expect(retryDelayMs(3, 500, { capMs: 30_000, random: () => 1 })).toBe(2000);
    expect(retryDelayMs(20, 500, { capMs: 30_000, random: () => 1 })).toBe(30_000);
    expect(retryDelayMs(20, 500, { capMs: 30_000, random: () => 0 })).toBe(15_000);
  });
});
