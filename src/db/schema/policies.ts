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
import { type Static, Type } from 'typebox';
import { ModelRefSchema } from '../../lib/model-ref.ts';
import { component, StringEnum } from '../../lib/typebox.ts';
import { ToolRefSchema } from './agents.ts';
import { createdAt, updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

const SECTION_KINDS = ['instructions', 'persona', 'rules', 'examples', 'context'] as const;
export const MESSAGE_ROLES = ['system', 'user', 'assistant'] as const;
const RETRIEVAL_MODES = ['hybrid', 'keyword', 'semantic'] as const;

/** A section's or a declared variable's name. */
const POLICY_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_-]{0,63}$';

/** A declared variable: whether it must be given, and its value when it is not. */
const PolicyVariableSchema = Type.Object(
  {
    required: Type.Optional(Type.Boolean()),
    default: Type.Optional(Type.String({ maxLength: 10_000 })),
    description: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);

/** A section of a policy: a piece of the prompt, maybe conditional. */
const PolicySectionSchema = Type.Object(
  {
    name: Type.String({ pattern: POLICY_NAME_PATTERN, description: 'unique within the policy' }),
    kind: StringEnum(SECTION_KINDS),
    role: Type.Optional(
      StringEnum(MESSAGE_ROLES, { description: 'the message it goes into; system by default' }),
    ),
    text: Type.String({
      maxLength: 100_000,
      description: 'the text; {{variable}} is replaced, nothing else runs',
    }),
    when: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2_000,
        description:
          'a condition (the condition language, docs/policies.md); the section is left out when false',
      }),
    ),
    required: Type.Optional(
      Type.Boolean({ description: 'kept over budget; default true for instructions and rules' }),
    ),
  },
  { additionalProperties: false, ...component('PolicySection') },
);

/** The model a policy asks for, with its sampling parameters and fallbacks. */
export const PolicyModelSchema = Type.Object(
  {
    ...ModelRefSchema.properties,
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    fallbacks: Type.Optional(Type.Array(ModelRefSchema, { maxItems: 5 })),
  },
  { additionalProperties: false, ...component('PolicyModel') },
);

/** The fields of a policy's content, shared by the content and the body of `PUT` (which adds labels). */
export const PolicyContentFields = {
  description: Type.Optional(Type.String({ maxLength: 1_000 })),
  sections: Type.Array(PolicySectionSchema, { minItems: 1, maxItems: 100, description: 'in order' }),
  variables: Type.Optional(
    Type.Record(Type.String({ pattern: POLICY_NAME_PATTERN }), PolicyVariableSchema, {
      maxProperties: 100,
      description: 'declared variables; a required one missing is a 422',
    }),
  ),
  model: Type.Optional(PolicyModelSchema),
  tools: Type.Optional(Type.Array(ToolRefSchema, { maxItems: 50 })),
  retrieval: Type.Optional(
    Type.Object(
      {
        sources: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 50 })),
        top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
        mode: Type.Optional(StringEnum(RETRIEVAL_MODES)),
      },
      { additionalProperties: false },
    ),
  ),
  playbooks: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
      maxItems: 50,
      description: 'attached playbook ids',
    }),
  ),
  token_budget: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
};

/** What a policy version holds: the one declaration of the shape the API takes and the assembler reads. */
export const PolicyContentSchema = Type.Object(PolicyContentFields, component('PolicyContent'));
export type PolicyContent = Static<typeof PolicyContentSchema>;
export type PolicySection = Static<typeof PolicySectionSchema>;

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
    content: jsonb('content').$type<PolicyContent>().notNull(),
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
