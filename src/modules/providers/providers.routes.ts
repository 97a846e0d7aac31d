import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Json } from '../../http/schemas.ts';
import { ProviderSettingsResponse, UpdateProviderSettingsBody } from './providers.schemas.ts';
import type { ProvidersService } from './providers.service.ts';

const tags = ['Settings'];

/** The workspace's LLM provider settings (spec 4.8). */
export const providersRoutes: FastifyPluginAsyncTypebox<{ providers: ProvidersService }> = async (
  app,
  { providers },
) => {
  app.get(
    '/settings/providers',
    {
      schema: {
        operationId: 'getProviderSettings',
        tags,
        summary: 'LLM provider settings',
        description:
          'The workspace’s model providers (endpoints, vault credential references, timeouts), default model, per-model prices and fallback order. Keys are credential ids: no secret is ever answered. With no provider, the built-in local provider answers.',
        response: { 200: Json('The provider settings (never secrets)', ProviderSettingsResponse) },
      },
    },
    async (request) => providers.get(request.caller),
  );

  app.put(
    '/settings/providers',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'updateProviderSettings',
        tags,
        summary: 'Change LLM provider settings',
        description:
          'Admins only. Each key given replaces that key (providers, default_model, prices, fallback); keys left out keep their values. Base URLs pass the outbound address guard, credential_id must name a credential of the workspace holding an api_key or token field, and every model reference must name a configured provider (or local). Records system.settings_changed.',
        body: UpdateProviderSettingsBody,
        response: { 200: Json('The updated provider settings', ProviderSettingsResponse) },
      },
    },
    async (request) => providers.update(request.caller, request.body),
  );
};
