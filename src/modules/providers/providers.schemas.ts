import { Type } from 'typebox';
import { ModelPriceSchema, ProviderConfigSchema, ProviderSettingsSchema } from '../../db/schema/settings.ts';
import { ModelRefSchema } from '../../lib/model-ref.ts';

const { credential_id, api_key_header, headers, timeout_ms, secret_headers, ...required } =
  ProviderConfigSchema.properties;

/** A provider as a client sends it: credential, key header, headers and timeout may be left out. */
const ProviderInput = Type.Object(
  {
    ...required,
    credential_id: Type.Optional(credential_id),
    api_key_header: Type.Optional(api_key_header),
    headers: Type.Optional(headers),
    timeout_ms: Type.Optional(timeout_ms),
    secret_headers,
  },
  { additionalProperties: false },
);

/** The answer of GET and PUT: every key present, keys as vault references only. */
export const ProviderSettingsResponse = ProviderSettingsSchema;

/** A partial update: each key given replaces that key; keys left out keep their values. */
export const UpdateProviderSettingsBody = Type.Object(
  {
    providers: Type.Optional(Type.Array(ProviderInput, { maxItems: 20 })),
    default_model: Type.Optional(Type.Union([ModelRefSchema, Type.Null()])),
    prices: Type.Optional(Type.Array(ModelPriceSchema, { maxItems: 200 })),
    fallback: Type.Optional(Type.Array(ModelRefSchema, { maxItems: 10 })),
    confirm_hosts: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
        maxItems: 20,
        description:
          'destinations (host[:port]) an admin confirms stored keys may now be sent to: needed when a provider that sends vault credentials moves its base_url to another host (409 confirmation_required otherwise)',
      }),
    ),
  },
  { additionalProperties: false },
);
