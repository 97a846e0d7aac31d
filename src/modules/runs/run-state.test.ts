import { describe, expect, it } from 'vitest';
import { canTransition, isFinal, renderGoal } from './run-state.ts';

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
