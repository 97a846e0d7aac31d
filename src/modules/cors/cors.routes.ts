import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Json } from '../../http/schemas.ts';
import { CorsSettingsSchema, PutCorsBody } from './cors.schemas.ts';
import type { CorsService } from './cors.service.ts';

const tags = ['Settings'];

/** The platform's CORS settings (spec 4.8 and section 5; docs/settings.md). */
export const corsRoutes: FastifyPluginAsyncTypebox<{ cors: CorsService }> = async (app, { cors }) => {
  app.get(
    '/settings/cors',
    {
      config: { workspace: false },
      schema: {
        operationId: 'getCorsSettings',
        tags,
        summary: 'Get the CORS settings',
        description:
          'The platform-wide CORS policy: allowed origins, methods, headers (Authorization, Content-Type, X-Workspace-ID, X-API-Key and Last-Event-ID always among them), exposed headers, credentials and preflight max age. Until someone sets it, no origin is allowed. Any authenticated user may read it; needs only a bearer token.',
        response: { 200: Json('The CORS settings', CorsSettingsSchema) },
      },
    },
    async () => cors.get(),
  );

  app.put(
    '/settings/cors',
    {
      config: { workspace: false },
      schema: {
        operationId: 'replaceCorsSettings',
        tags,
        summary: 'Replace the CORS settings',
        description:
          'Platform operators (PLATFORM_ADMIN_USERS) only; anyone else gets 403 platform_admin_required. Replaces the whole policy (fields left out take their defaults). Origins are exact (https://host[:port]), a subdomain pattern (https://*.example.com) or *; * together with credentials: true is a 400 naming body.origins. Applied at once by every API process, without a restart.',
        body: PutCorsBody,
        response: { 200: Json('The CORS settings as stored', CorsSettingsSchema) },
      },
    },
    async (request) =>
      cors.put({ userId: request.userId, ipAddress: request.ip, requestId: request.id }, request.body),
  );
};
