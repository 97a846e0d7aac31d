import { describe, expect, it } from 'vitest';
import { canTransition, goalPlaceholders, isFinal, renderGoal, retryDelayMs } from './run-state.ts';

describe('run transitions', () => {
  it('allows the documented moves and nothing out of a final status', () => {
    expect(canTransition('Queued', 'Running')).toBe(true);
    expect(canTransition('Running', 'Paused')).toBe(true);
    expect(canTransition('Paused', 'Queued')).toBe(true);
    expect(canTransition('Paused', 'Running')).toBe(false);
    expect(canTransition('Completed', 'Cancelled')).toBe(false);
    expect(isFinal('Failed')).toBe(true);
    expect(isFinal('Paused')).toBe(false);
  });
});

describe('goal rendering', () => {
  it('fills every placeholder and reports each missing one once', () => {
    expect(goalPlaceholders('Summarise {{ topic }} for {{audience}} about {{topic}}')).toEqual([
      'topic',
      'audience',
    ]);
    expect(
      renderGoal('Summarise {{ topic }} for {{audience}}', { topic: 'FP-Growth', audience: 'ops' }),
    ).toEqual({
      text: 'Summarise FP-Growth for ops',
      missing: [],
    });
    expect(renderGoal('{{a}} {{b}} {{a}}', { b: 'x' })).toEqual({ missing: ['a'] });
  });

  it('does not let an input inject another placeholder', () => {
    expect(renderGoal('{{a}}/{{b}}', { a: '{{b}}', b: 'B' }).text).toBe('{{b}}/B');
  });
});

describe('retry delay', () => {
  it('grows exponentially within half to all of the ceiling, capped', () => {
    expect(retryDelayMs(1, 500, 30_000, () => 0)).toBe(250);
    expect(retryDelayMs(1, 500, 30_000, () => 1)).toBe(500);
    expect(retryDelayMs(3, 500, 30_000, () => 1)).toBe(2000);
    expect(retryDelayMs(20, 500, 30_000, () => 1)).toBe(30_000);
  });
});
