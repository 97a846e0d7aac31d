import {
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  timestamp,
  uniqueIndex,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { createdAt, updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/**
 * Policies (docs/policies.md): versioned recipes for an agent's context. Every write adds an
 * immutable version; labels (`production`, `latest`, custom) are movable pointers to versions.
 */
export const policyVersions = pgTable(
  'policy_versions',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    policy_id: varchar('policy_id', { length: 100 }).notNull(),
    version: integer('version').notNull(),
    /** The policy content as written (sections, model, tools, retrieval, playbooks, budget). */
    content: jsonb('content').$type<Record<string, unknown>>().notNull(),
    /** sha256 of the content's canonical JSON. */
    content_hash: varchar('content_hash', { length: 64 }).notNull(),
    created_by: varchar('created_by', { length: 255 }).notNull(),
    created_at: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.policy_id, t.version] })],
);

/** A movable label of a policy, pointing at one of its versions. */
export const policyLabels = pgTable(
  'policy_labels',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    policy_id: varchar('policy_id', { length: 100 }).notNull(),
    label: varchar('label', { length: 50 }).notNull(),
    version: integer('version').notNull(),
    updated_by: varchar('updated_by', { length: 255 }).notNull(),
    updated_at: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.policy_id, t.label] })],
);

/** One arm of an experiment: a policy at a label or a version. */
export interface PolicyArmRef {
  policy_id: string;
  label?: string;
  version?: number;
}

export type ExperimentStatus = 'running' | 'stopped' | 'concluded';

/**
 * An A/B test between two policy references (a is the control, b the treatment); at
 * most one per pair of policies in a workspace. Assignment hashes `salt` and the unit id.
 */
export const policyExperiments = pgTable(
  'policy_experiments',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    policy_a: varchar('policy_a', { length: 100 }).notNull(),
    policy_b: varchar('policy_b', { length: 100 }).notNull(),
    policy_a_ref: jsonb('policy_a_ref').$type<PolicyArmRef>().notNull(),
    policy_b_ref: jsonb('policy_b_ref').$type<PolicyArmRef>().notNull(),
    weights: jsonb('weights').$type<[number, number]>().notNull(),
    coverage: doublePrecision('coverage').notNull().default(1),
    unit: varchar('unit', { length: 20 }).$type<'conversation' | 'user'>().notNull(),
    primary_metric: varchar('primary_metric', { length: 50 }).notNull(),
    guardrail_metrics: jsonb('guardrail_metrics').$type<string[]>().notNull(),
    status: varchar('status', { length: 20 }).$type<ExperimentStatus>().notNull(),
    salt: varchar('salt', { length: 100 }).notNull(),
    winner: varchar('winner', { length: 20 }).$type<'a' | 'b'>(),
    started_at: timestamp('started_at', { withTimezone: true, mode: 'date' }),
    stopped_at: timestamp('stopped_at', { withTimezone: true, mode: 'date' }),
    updated_by: varchar('updated_by', { length: 255 }).notNull(),
    created_at: createdAt(),
    updated_at: updatedAt(),
  },
  (t) => [
    uniqueIndex('policy_experiments_pair_idx').on(t.workspace_id, t.policy_a, t.policy_b),
    index('policy_experiments_control_idx').on(t.workspace_id, t.policy_a, t.status),
  ],
);

/** A unit's first exposure to an experiment's variant (recorded when assemble serves it). */
export const policyExposures = pgTable(
  'policy_exposures',
  {
    experiment_id: uuid('experiment_id')
      .notNull()
      .references(() => policyExperiments.id, { onDelete: 'cascade' }),
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    unit_id: varchar('unit_id', { length: 255 }).notNull(),
    variant: varchar('variant', { length: 20 }).$type<'a' | 'b'>().notNull(),
    created_at: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.experiment_id, t.unit_id] }),
    index('policy_exposures_workspace_idx').on(t.workspace_id),
  ],
);
