import { MAX_CONDITION_LENGTH, MAX_FACTS_BYTES } from '../../src/lib/conditions.ts';

/**
 * The costliest input conditions can be given (issue 23, 1.3), shared by the limit tests and the
 * event-loop test: rules of as many non-matching `contains` tests as a rule may hold, over the
 * largest mixed-case context the limit admits.
 */

/** A rule as long as a rule may be: `path contains "..."` tests that never match, joined by `or`. */
export function hostileRule(path: string, seed: number): string {
  const tests: string[] = [];
  for (let i = 0; ; i += 1) {
    const next = `${path} contains "qz${seed}x${i}"`;
    if ([...tests, next].join(' or ').length > MAX_CONDITION_LENGTH) break;
    tests.push(next);
  }
  return tests.join(' or ');
}

/** Mixed-case prose of about `bytes` UTF-8 bytes, so lower-casing it is real work. */
export const prose = (bytes: number) =>
  'The Quick Brown Fox Jumps Over The Lazy Dog. '.repeat(bytes / 45 + 1).slice(0, bytes);

/** The largest context the limit admits: one attribute holding nearly all of it. */
export const contextAtLimit = () => {
  const empty = JSON.stringify({ doc: '' }).length;
  return { doc: prose(MAX_FACTS_BYTES - empty) };
};
