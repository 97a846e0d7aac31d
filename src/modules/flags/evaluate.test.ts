import { describe, expect, it } from 'vitest';
import { checkDefinition, compileFlag, evaluateFlag, type FlagDefinition } from './evaluate.ts';

const flag = (overrides: Partial<FlagDefinition> = {}): FlagDefinition => ({
  type: 'boolean',
  default: false,
  variants: { on: true },
  rules: [],
  rollout: null,
  enabled: true,
  salt: null,
  ...overrides,
});

const evaluate = (definition: FlagDefinition, context: Record<string, unknown> = {}) =>
  evaluateFlag(compileFlag('checkout.new', definition), context);

describe('checkDefinition', () => {
  it('accepts a well-formed definition of each type', () => {
    expect(checkDefinition(flag())).toEqual([]);
    expect(checkDefinition(flag({ type: 'string', default: 'a', variants: { b: 'b' } }))).toEqual([]);
    expect(checkDefinition(flag({ type: 'number', default: 1, variants: { two: 2.5 } }))).toEqual([]);
    expect(checkDefinition(flag({ type: 'json', default: { a: [1] }, variants: { n: null } }))).toEqual([]);
  });

  it('names every field whose value does not fit the type, and rules that do not parse', () => {
    const problems = checkDefinition(
      flag({
        default: 'yes',
        variants: { on: 1, default: true },
        rules: [
          { when: 'plan == ', variant: 'on' },
          { when: 'plan == "pro"', variant: 'missing' },
          { when: 'true' },
          { when: 'true', split: [{ variant: 'on', weight: 0 }] },
        ],
        rollout: [{ variant: 'nope', weight: 1 }],
      }),
    );
    const fields = problems.map((p) => p.field);
    expect(fields).toEqual([
      'body.default',
      'body.variants.on',
      'body.variants.default',
      'body.rules.0.when',
      'body.rules.1.variant',
      'body.rules.2',
      'body.rules.3.split',
      'body.rollout.0.variant',
    ]);
    expect(problems[0]?.message).toContain('boolean');
    expect(problems[3]?.message).toMatch(/does not parse: expected a value .* at character 9/);
    expect(checkDefinition(flag({ type: 'number', default: Number.NaN }))[0]?.field).toBe('body.default');
  });
});

describe('evaluateFlag', () => {
  it('answers STATIC for a flag with no rules and no rollout, DISABLED when disabled', () => {
    expect(evaluate(flag())).toEqual({ value: false, variant: 'default', reason: 'STATIC' });
    expect(evaluate(flag({ enabled: false, rules: [{ when: 'true', variant: 'on' }] }))).toEqual({
      value: false,
      variant: 'default',
      reason: 'DISABLED',
    });
  });

  it('serves the first rule that holds (TARGETING_MATCH), else the default (DEFAULT)', () => {
    const definition = flag({
      type: 'string',
      default: 'blue',
      variants: { red: 'red', green: 'green' },
      rules: [
        { when: 'plan == "enterprise"', variant: 'red' },
        { when: 'email endswith "@example.com" or beta == true', variant: 'green' },
      ],
    });
    expect(evaluate(definition, { plan: 'enterprise', beta: true })).toEqual({
      value: 'red',
      variant: 'red',
      reason: 'TARGETING_MATCH',
    });
    expect(evaluate(definition, { email: 'A@EXAMPLE.com' }).value).toBe('green');
    expect(evaluate(definition, { plan: 'free' })).toEqual({
      value: 'blue',
      variant: 'default',
      reason: 'DEFAULT',
    });
  });

  it('splits by targeting_key (SPLIT), sticky per unit, close to the weights', () => {
    const definition = flag({
      rollout: [
        { variant: 'on', weight: 20 },
        { variant: 'default', weight: 80 },
      ],
    });
    let on = 0;
    for (let i = 0; i < 10_000; i += 1) {
      const first = evaluate(definition, { targeting_key: `user-${i}` });
      expect(first.reason).toBe('SPLIT');
      expect(evaluate(definition, { targeting_key: `user-${i}` })).toEqual(first);
      if (first.value === true) on += 1;
    }
    expect(Math.abs(on / 10_000 - 0.2)).toBeLessThan(0.02);
  });

  it('splits inside a rule, and answers the default with TARGETING_KEY_MISSING when there is no unit', () => {
    const definition = flag({
      rules: [{ when: 'country in ["fr", "de"]', split: [{ variant: 'on', weight: 1 }] }],
    });
    expect(evaluate(definition, { country: 'fr', targeting_key: 'u1' })).toEqual({
      value: true,
      variant: 'on',
      reason: 'SPLIT',
    });
    expect(evaluate(definition, { country: 'fr' })).toEqual({
      value: false,
      variant: 'default',
      reason: 'DEFAULT',
      error_code: 'TARGETING_KEY_MISSING',
    });
    expect(evaluate(definition, { country: 'us', targeting_key: 'u1' }).reason).toBe('DEFAULT');
  });

  it('salts by the flag key unless a salt is set', () => {
    const rollout = [
      { variant: 'on', weight: 50 },
      { variant: 'default', weight: 50 },
    ];
    const units = Array.from({ length: 2_000 }, (_, i) => ({ targeting_key: `u${i}` }));
    const byKey = units.map((c) => evaluateFlag(compileFlag('a', flag({ rollout })), c).value);
    const sameSalt = units.map((c) => evaluateFlag(compileFlag('b', flag({ rollout, salt: 'a' })), c).value);
    const otherKey = units.map((c) => evaluateFlag(compileFlag('b', flag({ rollout })), c).value);
    expect(sameSalt).toEqual(byKey);
    expect(otherKey).not.toEqual(byKey);
  });
});
