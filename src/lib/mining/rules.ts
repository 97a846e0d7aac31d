/**
 * Association rules from frequent itemsets: antecedent -> consequent with support, confidence and lift.
 */

import { type MiningOptions, mineItemsets } from './fp-growth.ts';

/** One rule: when the antecedent occurs, the consequent tends to occur too. */
export interface AssociationRule {
  /** Items on the left, sorted. */
  antecedent: string[];
  /** Items on the right, sorted. */
  consequent: string[];
  /** Transactions that contain antecedent and consequent together. */
  support: number;
  /** support / support(antecedent): how often the rule holds when it applies. */
  confidence: number;
  /** confidence / (support(consequent) / transactions): above 1, the items attract each other. */
  lift: number;
}

/** Thresholds for rule generation. */
export interface RuleOptions {
  /** Minimum confidence in [0, 1]; the spec's range is 0.5 to 1.0. */
  minConfidence: number;
  /** Optional minimum lift, to drop rules no better than chance (lift 1). */
  minLift?: number;
}

/** A frequent itemset as the miner reports it (items in any order). */
export interface FrequentItemset {
  items: readonly string[];
  support: number;
}

const keyOf = (items: readonly string[]): string => JSON.stringify([...items].sort());

/**
 * Generates every rule X -> Y (X, Y non-empty and disjoint, X ∪ Y a given itemset) that meets the
 * thresholds. It needs the supports of all subsets, so `itemsets` must be every frequent itemset
 * (mode 'all'), which a frequent itemset's subsets always are. Consequents grow level by level from
 * those that passed, because moving items to the right can only lower confidence: most candidates are
 * never looked at.
 */
export function generateRules(
  itemsets: Iterable<FrequentItemset>,
  transactionCount: number,
  options: RuleOptions,
  onRule: (rule: AssociationRule) => void,
): number {
  const { minConfidence, minLift = 0 } = options;
  if (!(minConfidence >= 0 && minConfidence <= 1)) {
    throw new RangeError(`minConfidence must be in [0, 1], got ${minConfidence}`);
  }
  const supports = new Map<string, number>();
  const sets: string[][] = [];
  for (const { items, support } of itemsets) {
    const sorted = [...items].sort();
    supports.set(JSON.stringify(sorted), support);
    if (sorted.length >= 2) sets.push(sorted);
  }
  const supportOf = (items: readonly string[]): number => {
    const s = supports.get(keyOf(items));
    if (s === undefined)
      throw new Error(`itemset ${keyOf(items)} missing: rules need every frequent itemset`);
    return s;
  };
  let count = 0;
  for (const items of sets) {
    const support = supportOf(items);
    let consequents: string[][] = items.map((item) => [item]);
    while (consequents.length > 0) {
      const passed: string[][] = [];
      for (const consequent of consequents) {
        if (consequent.length >= items.length) continue;
        const antecedent = items.filter((item) => !consequent.includes(item));
        const confidence = support / supportOf(antecedent);
        if (confidence < minConfidence) continue;
        passed.push(consequent);
        const lift = (confidence * transactionCount) / supportOf(consequent);
        if (lift < minLift) continue;
        count++;
        onRule({ antecedent, consequent, support, confidence, lift });
      }
      consequents = nextConsequents(passed);
    }
  }
  return count;
}

/** Apriori-style join: two sorted consequents of size n sharing their first n-1 items give one of size n+1. */
function nextConsequents(level: string[][]): string[][] {
  const next: string[][] = [];
  for (let i = 0; i < level.length; i++) {
    const a = level[i] as string[];
    for (let j = i + 1; j < level.length; j++) {
      const b = level[j] as string[];
      let samePrefix = true;
      for (let p = 0; p < a.length - 1 && samePrefix; p++) samePrefix = a[p] === b[p];
      if (!samePrefix) continue;
      const lastA = a[a.length - 1] as string;
      const lastB = b[b.length - 1] as string;
      next.push(lastA < lastB ? [...a, lastB] : [...b, lastA]);
    }
  }
  return next;
}

/**
 * Mines frequent itemsets and the rules among them in one call, the shape a playbook generator needs.
 * Itemsets are held in memory here (rules need subset supports), so keep minSupport or maxLength tight.
 */
export function mineAssociationRules(
  transactions: readonly (readonly string[])[],
  options: Pick<MiningOptions, 'minSupport' | 'maxLength'> & RuleOptions,
  onRule: (rule: AssociationRule) => void,
): number {
  const itemsets: FrequentItemset[] = [];
  mineItemsets(
    transactions,
    { minSupport: options.minSupport, maxLength: options.maxLength },
    (items, support) => itemsets.push({ items, support }),
  );
  return generateRules(itemsets, transactions.length, options, onRule);
}
