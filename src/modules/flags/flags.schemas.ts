import { Type } from 'typebox';
import { FLAG_TYPES, FlagRuleSchema, SplitSchema, VARIANT_NAME_PATTERN } from '../../db/schema/flags.ts';
import { Page, PageQuery } from '../../http/schemas.ts';
import { StringEnum } from '../../lib/typebox.ts';
import { FLAG_REASONS } from './evaluate.ts';

/** A flag key: lower-case dotted words (`search.keyword_only`, `checkout.new-flow`). */
export const FLAG_KEY_PATTERN = '^[a-z0-9][a-z0-9_.-]{0,99}$';

export const FlagKeyParams = Type.Object({
  key: Type.String({ pattern: FLAG_KEY_PATTERN, description: 'the flag key, such as search.keyword_only' }),
});

const fields = {
  type: StringEnum(FLAG_TYPES, {
    description: 'the type of every value of the flag: boolean, string, number or json',
  }),
  description: Type.String({ maxLength: 1_000 }),
  enabled: Type.Boolean({ description: 'false: every evaluation answers the default (reason DISABLED)' }),
  default: Type.Unknown({ description: 'the value when no rule and no rollout decides; of the flag’s type' }),
  variants: Type.Record(Type.String({ pattern: VARIANT_NAME_PATTERN }), Type.Unknown(), {
    maxProperties: 50,
    description: 'named values of the flag’s type that rules and splits serve (default is reserved)',
  }),
  rules: Type.Array(FlagRuleSchema, {
    maxItems: 50,
    description: 'tried in order; the first that holds decides',
  }),
  rollout: Type.Union([SplitSchema, Type.Null()], {
    description: 'the split of everyone no rule matched; null: they get the default',
  }),
  salt: Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], {
    description: 'salts the bucketing (the flag key when null); a new salt reshuffles every unit',
  }),
};

/** `PUT /settings/flags/{key}`: the whole definition (fields left out take their defaults). */
export const PutFlagBody = Type.Object(
  {
    type: fields.type,
    default: fields.default,
    description: Type.Optional(fields.description),
    enabled: Type.Optional(fields.enabled),
    variants: Type.Optional(fields.variants),
    rules: Type.Optional(fields.rules),
    rollout: Type.Optional(fields.rollout),
    salt: Type.Optional(fields.salt),
  },
  { additionalProperties: false },
);

export const PutFlagHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1_000,
      description:
        'the ETag last read ("3"), or *: the write happens only if the flag is still at that version, else 412',
    }),
  ),
});

export const FlagSchema = Type.Object(
  {
    key: Type.String(),
    ...fields,
    built_in: Type.Boolean({ description: 'a flag the platform itself reads; its type is fixed' }),
    version: Type.Union([Type.Integer(), Type.Null()], {
      description: 'counts the writes; null for a built-in flag the workspace never stored',
    }),
    etag: Type.Union([Type.String(), Type.Null()], { description: 'the ETag header of GET and PUT' }),
    updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    updated_by: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'Flag' },
);

export const ListFlagsQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

export const FlagPage = Page(FlagSchema);

export const EvaluateFlagBody = Type.Object(
  {
    context: Type.Optional(
      Type.Object(
        {
          targeting_key: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 255,
              description: 'the unit splits bucket (a user id); the caller’s user id when absent',
            }),
          ),
        },
        {
          additionalProperties: Type.Unknown(),
          maxProperties: 100,
          description:
            'attributes the rules test (plan, country, ...); user_id and workspace_id are the caller’s',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

export const ResolutionSchema = Type.Object({
  key: Type.String(),
  value: Type.Unknown({ description: 'the resolved value, of the flag’s type' }),
  variant: Type.String({ description: 'the variant served; default for the default value' }),
  reason: StringEnum(FLAG_REASONS, {
    description:
      'STATIC (no rules), TARGETING_MATCH (a rule served a variant), SPLIT (bucketed), DEFAULT (nothing matched), DISABLED',
  }),
  error_code: Type.Optional(
    StringEnum(['TARGETING_KEY_MISSING'] as const, {
      description: 'a split needed a targeting_key the context lacked',
    }),
  ),
});

export const ResolutionList = Type.Object({
  items: Type.Array(ResolutionSchema, { description: 'every flag of the workspace, by key' }),
});
