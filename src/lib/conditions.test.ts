import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  ConditionError,
  createNormaliser,
  evaluateCondition,
  factsTooLarge,
  MAX_CONDITION_LENGTH,
  MAX_FACTS_BYTES,
  parseCondition,
} from './conditions.ts';

const facts = {
  goal: 'Deploy the billing service',
  agent: 'security-reviewer',
  tags: ['Security', 'weekly'],
  context: { environment: 'prod', retries: 3, dry_run: false, owner: null },
  inputs: { region: 'eu' },
};
const holds = (source: string) => evaluateCondition(parseCondition(source), facts);

describe('the condition language', () => {
  it('evaluates tests, lists, existence and the boolean operators with and before or', () => {
    expect(holds('goal contains "DEPLOY"')).toBe(true);
    expect(holds('context.environment == "prod" and inputs.region in ["eu", "us"]')).toBe(true);
    expect(holds('context.retries >= 3 and context.retries < 4')).toBe(true);
    expect(holds('context.retries > "3"')).toBe(false);
    expect(holds('tags contains "security"')).toBe(true);
    expect(holds('agent startswith "SEC" and agent endswith "reviewer"')).toBe(true);
    expect(holds('context.owner == null and context.dry_run == false')).toBe(true);
    expect(holds('context.ticket exists')).toBe(false);
    expect(holds('not context.ticket exists')).toBe(true);
    expect(holds('context.ticket != "x"')).toBe(false);
    expect(holds('false and false or true')).toBe(true);
    expect(holds('false and (false or true)')).toBe(false);
    expect(holds('goal.length == 26')).toBe(false);
    expect(holds('context.constructor exists')).toBe(false);
  });

  it('names where a condition goes wrong', () => {
    for (const [source, where] of [
      ['goal contains', 13],
      ['goal ~= "x"', 5],
      ['goal == "unterminated', 8],
      ['(goal exists', 12],
      ['goal exists extra', 12],
      ['inputs.region in "eu"', 14],
      ['and == 1', 0],
    ] as const) {
      const error = (() => {
        try {
          parseCondition(source);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error, source).toBeInstanceOf(ConditionError);
      expect((error as ConditionError).position, source).toBe(where);
    }
    expect(() => parseCondition('x'.repeat(MAX_CONDITION_LENGTH + 1))).toThrow(ConditionError);
    expect(() => parseCondition(`${'('.repeat(40)}true${')'.repeat(40)}`)).toThrow(/deeper/);
  });

  it('never throws anything but ConditionError, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (source) => {
        try {
          evaluateCondition(parseCondition(source), facts);
        } catch (error) {
          return error instanceof ConditionError;
        }
        return true;
      }),
      { numRuns: 2_000 },
    );
  });

  it('lower-cases each value once for every rule that shares a normaliser', () => {
    const big = 'Mixed Case Text. '.repeat(10_000);
    const many = Array.from({ length: 20 }, (_, rule) =>
      parseCondition(
        Array.from({ length: 20 }, (_, i) => `doc contains "zz${rule}-${i}" or doc startswith "z${i}"`).join(
          ' or ',
        ),
      ),
    );
    const lowerCase = vi.spyOn(String.prototype, 'toLowerCase');
    try {
      const lower = createNormaliser();
      expect(many.map((condition) => evaluateCondition(condition, { doc: big }, lower))).not.toContain(true);
      const ofBig = lowerCase.mock.contexts.filter((self) => String(self).length === big.length);
      expect(ofBig).toHaveLength(1);
      expect(evaluateCondition(parseCondition('doc contains "MIXED CASE"'), { doc: big }, lower)).toBe(true);
    } finally {
      lowerCase.mockRestore();
    }
  });

  it('measures facts as UTF-8 JSON against the limit', () => {
    expect(factsTooLarge({ doc: 'x'.repeat(MAX_FACTS_BYTES - 20) })).toBeUndefined();
    expect(factsTooLarge({ doc: 'x'.repeat(MAX_FACTS_BYTES) })).toMatch(/more than the limit of 16384 bytes/);
    expect(factsTooLarge({ doc: 'é'.repeat(MAX_FACTS_BYTES / 2) })).toBeDefined();
  });
});
