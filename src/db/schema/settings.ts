import { jsonb, pgTable, primaryKey, uuid, varchar } from 'drizzle-orm/pg-core';
import { type Static, type TObject, Type } from 'typebox';
import { ModelRefSchema } from '../../lib/model-ref.ts';
import { StringEnum } from '../../lib/typebox.ts';
import { updatedAt } from './columns.ts';
import { workspaces } from './workspaces.ts';

/** Per-workspace settings, as JSON values under dotted keys (`credentials.environment_lookup`). */
export const workspaceSettings = pgTable(
  'workspace_settings',
  {
    workspace_id: uuid('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    key: varchar('key', { length: 100 }).notNull(),
    value: jsonb('value').notNull(),
    updated_at: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.workspace_id, t.key] })],
);

/** The `credentials` namespace: the vault's per-workspace switches. */
export const CredentialSettingsSchema = Type.Object({
  environment_lookup: Type.Boolean({ description: 'lookup by name honours the environment (rule E)' }),
  archive_audit_on_delete: Type.Boolean({
    description: 'copy the audit trail to the archive before deleting',
  }),
  refuse_private_networks: Type.Boolean({
    description:
      'outbound requests (connection tests, provider base URLs, URL sources, http_request) refuse private and loopback addresses (default on). It may only narrow the platform policy: false is refused with 400 unless the operator set OUTBOUND_ALLOW_PRIVATE_NETWORKS=true (docs/outbound.md)',
  }),
});

/** The wire protocols the model gateway speaks (through the AI SDK's providers). */
export const PROVIDER_KINDS = ['openai_compatible', 'anthropic'] as const;

/** A provider id: a slug that model references (`{provider, name}`) name. `local` is reserved. */
export const PROVIDER_ID_PATTERN = '^[a-z0-9][a-z0-9_-]{0,49}$';

/** One model endpoint a workspace configured; its API key is a reference to a vault credential. */
export const ProviderConfigSchema = Type.Object(
  {
    id: Type.String({
      pattern: PROVIDER_ID_PATTERN,
      description:
        'slug that model references name (`{"provider": "<id>", "name": ...}`); `local` is reserved',
    }),
    kind: StringEnum(PROVIDER_KINDS, {
      description:
        'wire protocol: openai_compatible (OpenAI, Azure OpenAI, Ollama, vLLM, LM Studio, Groq, ...) or anthropic',
    }),
    base_url: Type.String({
      minLength: 1,
      maxLength: 2000,
      description:
        'where the API paths hang from, version included: https://api.openai.com/v1, https://api.anthropic.com/v1, http://localhost:11434/v1',
    }),
    credential_id: Type.Union([Type.Integer({ minimum: 1, maximum: 2_147_483_647 }), Type.Null()], {
      description:
        'vault credential holding the API key (field api_key, or token); null for keyless local servers (not allowed for anthropic)',
    }),
    api_key_header: Type.Union([Type.String({ pattern: '^[A-Za-z0-9-]{1,100}$' }), Type.Null()], {
      description:
        'openai_compatible only: send the key raw in this header (Azure OpenAI: api-key) instead of Authorization: Bearer',
    }),
    headers: Type.Record(
      Type.String({ pattern: '^[A-Za-z0-9-]{1,100}$' }),
      Type.String({ maxLength: 1000 }),
      {
        maxProperties: 20,
        description:
          'extra request headers, stored and shown in clear: never a secret (names like Authorization, X-API-Key or *-Token are refused: use secret_headers)',
      },
    ),
    secret_headers: Type.Optional(
      Type.Record(
        Type.String({ pattern: '^[A-Za-z0-9-]{1,100}$' }),
        Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
        {
          maxProperties: 10,
          description:
            'headers whose values are secrets, each a vault credential id: the credential’s api_key (or token) is read per call and sent only to base_url',
        },
      ),
    ),
    timeout_ms: Type.Integer({
      minimum: 100,
      maximum: 600_000,
      description:
        'ms to wait for the first output (and between outputs) before the attempt counts as timed out; default 60000',
    }),
  },
  { additionalProperties: false },
);

/** What one model costs, in the workspace's price unit (USD unless it says otherwise) per million tokens. */
export const ModelPriceSchema = Type.Object(
  {
    provider: ModelRefSchema.properties.provider,
    name: ModelRefSchema.properties.name,
    input_per_million: Type.Number({ minimum: 0, maximum: 1_000_000 }),
    output_per_million: Type.Number({ minimum: 0, maximum: 1_000_000 }),
  },
  { additionalProperties: false },
);
export type ModelPrice = Static<typeof ModelPriceSchema>;

/**
 * The price a cost was computed with, stored beside the cost (run steps, chat answers) so the
 * cost can be explained after the workspace's prices change. Null where the model had no price
 * (the cost is then 0).
 */
export const AppliedPriceSchema = Type.Object(
  {
    input_per_million: ModelPriceSchema.properties.input_per_million,
    output_per_million: ModelPriceSchema.properties.output_per_million,
  },
  {
    additionalProperties: false,
    description: 'the per-million-token prices the cost was computed with; null when the model had no price',
  },
);
export type AppliedPrice = Static<typeof AppliedPriceSchema>;

/** The `providers` namespace: the workspace's model endpoints, default model, prices and fallback order. */
export const ProviderSettingsSchema = Type.Object({
  providers: Type.Array(ProviderConfigSchema, { maxItems: 20 }),
  default_model: Type.Union([ModelRefSchema, Type.Null()], {
    description:
      'the model of agents without one and of chat without an agent; required once a provider exists',
  }),
  prices: Type.Array(ModelPriceSchema, { maxItems: 200 }),
  fallback: Type.Array(ModelRefSchema, {
    maxItems: 10,
    description: 'tried in order after the requested model fails before its first output',
  }),
});

/**
 * Every settings namespace: its schema (a stored value that no longer fits it is ignored)
 * and its defaults, which apply to every key a workspace has not set. The defaults are
 * kept out of the schemas on purpose: the validator fills `default`s into request bodies,
 * which would turn a partial update into a reset.
 */
export const SETTINGS_NAMESPACES = {
  credentials: {
    schema: CredentialSettingsSchema,
    defaults: {
      environment_lookup: false,
      archive_audit_on_delete: true,
      refuse_private_networks: true,
    },
  },
  providers: {
    schema: ProviderSettingsSchema,
    defaults: { providers: [], default_model: null, prices: [], fallback: [] },
  },
} as const satisfies Record<string, { schema: TObject; defaults: Record<string, unknown> }>;

export type SettingsNamespace = keyof typeof SETTINGS_NAMESPACES;

/** The settings of one namespace, every key present. */
export type Settings<N extends SettingsNamespace> = Static<(typeof SETTINGS_NAMESPACES)[N]['schema']>;
