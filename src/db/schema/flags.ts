import { boolean, integer, jsonb, pgTable, primaryKey, text, uuid, varchar } from 'drizzle-orm/pg-core';
import { type Static, Type } from 'typebox';
import { component } from '../../lib/typebox.ts';
import { updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/** The type of every value of a flag. */
export const FLAG_TYPES = ['boolean', 'string', 'number', 'json'] as const;
export type FlagType = (typeof FLAG_TYPES)[number];

/** A variant's name. */
export const VARIANT_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';

/** One share of a split: a variant name and its relative weight. */
const SplitShareSchema = Type.Object(
  {
    variant: Type.String({
      pattern: VARIANT_NAME_PATTERN,
      description: 'a name in variants, or default (the default value)',
    }),
    weight: Type.Integer({
      minimum: 0,
      maximum: 10_000,
      description: 'relative weight; weights that sum to 100 are percentages',
    }),
  },
  { additionalProperties: false, ...component('FlagSplitShare') },
);
export type SplitShare = Static<typeof SplitShareSchema>;

/** A split of the units over variants, by weight (a rule's, or the rollout of everyone else). */
export const SplitSchema = Type.Array(SplitShareSchema, {
  minItems: 1,
  maxItems: 20,
  description: 'units (targeting_key) are bucketed into 10,000 buckets and laid over the weights in order',
});

/** A targeting rule: when `when` holds, serve `variant`, or split the units over `split`. */
export const FlagRuleSchema = Type.Object(
  {
    when: Type.String({
      minLength: 1,
      maxLength: 2_000,
      description: 'a condition over the evaluation context (docs/flags.md), such as plan == "pro"',
    }),
    variant: Type.Optional(
      Type.String({ pattern: VARIANT_NAME_PATTERN, description: 'served when the rule holds' }),
    ),
    split: Type.Optional(SplitSchema),
  },
  { additionalProperties: false, description: 'exactly one of variant and split', ...component('FlagRule') },
);
export type FlagRule = Static<typeof FlagRuleSchema>;

/**
 * Feature flags, per workspace (docs/flags.md): each workspace holds its own definitions, and
 * a platform flag (`search.keyword_only`) a workspace has not stored answers its built-in
 * default. `version` counts the writes; the API shows it as the flag's `ETag`.
 */
export const featureFlags = pgTable(
  'feature_flags',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    key: varchar('key', { length: 100 }).notNull(),
    type: varchar('type', { length: 10 }).$type<FlagType>().notNull(),
    description: text('description').notNull().default(''),
    enabled: boolean('enabled').notNull().default(true),
    default_value: jsonb('default_value').notNull(),
    variants: jsonb('variants').$type<Record<string, unknown>>().notNull(),
    rules: jsonb('rules').$type<FlagRule[]>().notNull(),
    rollout: jsonb('rollout').$type<SplitShare[] | null>(),
    salt: varchar('salt', { length: 100 }),
    version: integer('version').notNull().default(1),
    updated_by: varchar('updated_by', { length: 255 }).notNull(),
    updated_at: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.key] })],
);
