/**
 * Feature flag evaluation, pure: a flag definition and an evaluation context in, an
 * OpenFeature-shaped resolution out (value, variant, reason). No I/O; the service reads the
 * definition and hands it here, so the rules are testable alone.
 *
 *   enabled false ───────────────────────────────> default   DISABLED
 *   rule 1 `when` holds ─┬─ variant ─────────────> variant   TARGETING_MATCH
 *                        └─ split (bucketing) ───> variant   SPLIT
 *   rule 2 ... (first rule that holds wins)
 *   no rule holds, rollout set (bucketing) ──────> variant   SPLIT
 *   no rules and no rollout at all ──────────────> default   STATIC
 *   otherwise ───────────────────────────────────> default   DEFAULT
 *
 * A split needs `targeting_key` (the unit that is bucketed); without one the flag answers
 * its default with `error_code: TARGETING_KEY_MISSING`, as OpenFeature providers do.
 */
import type { FlagRule, FlagType, SplitShare } from '../../db/schema/flags.ts';
import { assign } from '../../lib/bucketing.ts';
import {
  type Condition,
  ConditionError,
  createNormaliser,
  evaluateCondition,
  type Normaliser,
  parseCondition,
} from '../../lib/conditions.ts';

export type { FlagType } from '../../db/schema/flags.ts';

/** OpenFeature's resolution reasons, the ones this evaluator gives. */
export const FLAG_REASONS = ['STATIC', 'TARGETING_MATCH', 'SPLIT', 'DEFAULT', 'DISABLED', 'ERROR'] as const;
export type FlagReason = (typeof FLAG_REASONS)[number];

/** The variant name answered when the default value is served. */
export const DEFAULT_VARIANT = 'default';

/** What a workspace stores for one flag. */
export interface FlagDefinition {
  type: FlagType;
  /** Served when the flag is disabled or no rule and no rollout decides. */
  default: unknown;
  /** Named values rules and splits serve; `default` names the default value. */
  variants: Record<string, unknown>;
  rules: FlagRule[];
  /** The split of everyone no rule matched; absent: they get the default. */
  rollout: SplitShare[] | null;
  enabled: boolean;
  /** Salts the bucketing; the flag's key unless set (a new salt reshuffles every unit). */
  salt: string | null;
}

/** The evaluation context: OpenFeature's `targeting_key` plus any attributes rules test. */
export type EvaluationContext = { targeting_key?: string } & Record<string, unknown>;

export interface Resolution {
  value: unknown;
  variant: string;
  reason: FlagReason;
  error_code?: 'TARGETING_KEY_MISSING';
}

/** Whether `value` is a value of `type` (`json`: anything JSON can hold). */
export function fitsType(type: FlagType, value: unknown): boolean {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'json':
      return value !== undefined;
  }
}

const TYPE_WORDS: Record<FlagType, string> = {
  boolean: 'a boolean',
  string: 'a string',
  number: 'a finite number',
  json: 'a JSON value',
};

/** One problem of a definition, named by its field under `body.`. */
export interface DefinitionProblem {
  field: string;
  message: string;
}

/**
 * Every problem of a definition at once: values of the wrong type, rules that do not parse
 * (the parser's message and position), variants a rule or split names that do not exist,
 * splits whose weights are all zero, a variant named `default`.
 */
export function checkDefinition(definition: FlagDefinition): DefinitionProblem[] {
  const problems: DefinitionProblem[] = [];
  const { type } = definition;
  if (!fitsType(type, definition.default)) {
    problems.push({ field: 'body.default', message: `must be ${TYPE_WORDS[type]} (the flag is ${type})` });
  }
  for (const [name, value] of Object.entries(definition.variants)) {
    if (name === DEFAULT_VARIANT) {
      problems.push({ field: `body.variants.${name}`, message: 'is reserved for the default value' });
    } else if (!fitsType(type, value)) {
      problems.push({
        field: `body.variants.${name}`,
        message: `must be ${TYPE_WORDS[type]} (the flag is ${type})`,
      });
    }
  }
  const known = (name: string) => name === DEFAULT_VARIANT || Object.hasOwn(definition.variants, name);
  const checkSplit = (split: SplitShare[], field: string) => {
    split.forEach((share, index) => {
      if (!known(share.variant))
        problems.push({
          field: `${field}.${index}.variant`,
          message: `names no variant ("${share.variant}")`,
        });
    });
    if (!split.some((share) => share.weight > 0))
      problems.push({ field, message: 'needs at least one weight above 0' });
  };
  definition.rules.forEach((rule, index) => {
    const field = `body.rules.${index}`;
    try {
      parseCondition(rule.when);
    } catch (error) {
      if (!(error instanceof ConditionError)) throw error;
      problems.push({ field: `${field}.when`, message: `does not parse: ${error.message}` });
    }
    if ((rule.variant === undefined) === (rule.split === undefined)) {
      problems.push({ field, message: 'needs either variant or split' });
    }
    if (rule.variant !== undefined && !known(rule.variant))
      problems.push({ field: `${field}.variant`, message: `names no variant ("${rule.variant}")` });
    if (rule.split) checkSplit(rule.split, `${field}.split`);
  });
  if (definition.rollout) checkSplit(definition.rollout, 'body.rollout');
  return problems;
}

/** A definition with its rules parsed once, ready to evaluate many times. */
export interface CompiledFlag {
  key: string;
  definition: FlagDefinition;
  conditions: Condition[];
}

/** Parses the rules of a checked definition (a rule that no longer parses never matches). */
export function compileFlag(key: string, definition: FlagDefinition): CompiledFlag {
  const never: Condition = { type: 'const', value: false };
  const conditions = definition.rules.map((rule) => {
    try {
      return parseCondition(rule.when);
    } catch {
      return never;
    }
  });
  return { key, definition, conditions };
}

/**
 * Resolves a flag for `context` (see the header for the order of decisions). Evaluating several
 * flags over one context, pass one `lower` to all: each string is lower-cased once.
 */
export function evaluateFlag(
  flag: CompiledFlag,
  context: EvaluationContext,
  lower: Normaliser = createNormaliser(),
): Resolution {
  const { definition } = flag;
  const variantValue = (variant: string) =>
    variant === DEFAULT_VARIANT ? definition.default : definition.variants[variant];
  const served = (variant: string, reason: FlagReason): Resolution => ({
    value: variantValue(variant),
    variant,
    reason,
  });
  if (!definition.enabled) return served(DEFAULT_VARIANT, 'DISABLED');

  const split = (shares: SplitShare[]): Resolution => {
    const unit = context.targeting_key;
    if (typeof unit !== 'string' || unit === '') {
      return { ...served(DEFAULT_VARIANT, 'DEFAULT'), error_code: 'TARGETING_KEY_MISSING' };
    }
    const index = assign(
      definition.salt ?? flag.key,
      unit,
      shares.map((share) => share.weight),
    );
    return served((shares[index] as SplitShare).variant, 'SPLIT');
  };

  for (const [index, rule] of definition.rules.entries()) {
    if (!evaluateCondition(flag.conditions[index] as Condition, context, lower)) continue;
    if (rule.variant !== undefined) return served(rule.variant, 'TARGETING_MATCH');
    if (rule.split) return split(rule.split);
  }
  if (definition.rollout) return split(definition.rollout);
  return served(DEFAULT_VARIANT, definition.rules.length === 0 ? 'STATIC' : 'DEFAULT');
}
