import { describe, expect, it } from 'vitest';
import { type AssociationRule, generateRules, mineAssociationRules } from './rules.ts';

function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function randomTransactions(seed: number): string[][] {
  const next = random(seed);
  const itemCount = 2 + Math.floor(next() * 6);
  const rows = 1 + Math.floor(next() * 14);
  return Array.from({ length: rows }, () =>
    Array.from({ length: itemCount }, (_, i) => `tool:${i}`).filter(() => next() < 0.6),
  );
}

const ruleKey = (r: Pick<AssociationRule, 'antecedent' | 'consequent'>): string =>
  `${[...r.antecedent].sort().join(',')}=>${[...r.consequent].sort().join(',')}`;

/** Every rule by enumerating all pairs of disjoint non-empty itemsets. */
function bruteForceRules(
  tx: string[][],
  minCount: number,
  minConfidence: number,
): Map<string, AssociationRule> {
  const items = [...new Set(tx.flat())].sort();
  const sets = tx.map((t) => new Set(t));
  const support = (chosen: string[]) => sets.filter((s) => chosen.every((i) => s.has(i))).length;
  const rules = new Map<string, AssociationRule>();
  const n = items.length;
  for (let a = 1; a < 1 << n; a++) {
    for (let c = 1; c < 1 << n; c++) {
      if (a & c) continue;
      const antecedent = items.filter((_, i) => a & (1 << i));
      const consequent = items.filter((_, i) => c & (1 << i));
      const s = support([...antecedent, ...consequent]);
      if (s < minCount) continue;
      const confidence = s / support(antecedent);
      if (confidence < minConfidence) continue;
      const lift = (confidence * tx.length) / support(consequent);
      rules.set(ruleKey({ antecedent, consequent }), {
        antecedent,
        consequent,
        support: s,
        confidence,
        lift,
      });
    }
  }
  return rules;
}

describe('association rules', () => {
  it('match a brute-force enumeration on random data', () => {
    for (let seed = 1; seed <= 150; seed++) {
      const tx = randomTransactions(seed);
      const minCount = 1 + (seed % 3);
      const minConfidence = [0.5, 0.7, 0.9, 1][seed % 4] as number;
      const expected = bruteForceRules(tx, minCount, minConfidence);
      const got = new Map<string, AssociationRule>();
      mineAssociationRules(tx, { minSupport: minCount, minConfidence }, (rule) =>
        got.set(ruleKey(rule), rule),
      );
      expect([...got.keys()].sort(), `seed ${seed}`).toEqual([...expected.keys()].sort());
      for (const [k, rule] of got) {
        const want = expected.get(k) as AssociationRule;
        expect(rule.support).toBe(want.support);
        expect(rule.confidence).toBeCloseTo(want.confidence, 12);
        expect(rule.lift).toBeCloseTo(want.lift, 12);
      }
    }
  });

  it('computes support, confidence and lift on a worked example', () => {
    const tx = [
      ['agent:reviewer', 'tool:github'],
      ['agent:reviewer', 'tool:github'],
      ['agent:reviewer'],
      ['tool:github'],
    ];
    const rules: AssociationRule[] = [];
    mineAssociationRules(tx, { minSupport: 2, minConfidence: 0.5 }, (r) => rules.push(r));
    expect(rules).toContainEqual({
      antecedent: ['agent:reviewer'],
      consequent: ['tool:github'],
      support: 2,
      confidence: 2 / 3,
      lift: (2 / 3) * (4 / 3),
    });
  });

  it('filters by lift', () => {
    const tx = [['a', 'b'], ['a', 'b'], ['a'], ['b'], ['c']];
    const count = mineAssociationRules(tx, { minSupport: 1, minConfidence: 0.5, minLift: 1.2 }, () => {});
    const all = mineAssociationRules(tx, { minSupport: 1, minConfidence: 0.5 }, () => {});
    expect(count).toBeLessThan(all);
  });

  it('refuses an incomplete itemset list and a bad confidence', () => {
    expect(() =>
      generateRules([{ items: ['a', 'b'], support: 1 }], 2, { minConfidence: 0.5 }, () => {}),
    ).toThrow(/missing/);
    expect(() => generateRules([], 1, { minConfidence: 1.5 }, () => {})).toThrow(RangeError);
  });
});
