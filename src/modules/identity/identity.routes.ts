import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { JWK } from 'jose';
import { Type } from 'typebox';
import { Json } from '../../http/schemas.ts';

/** Serves the development issuer's public keys, as an identity provider would. */
export const devJwksRoutes: FastifyPluginAsyncTypebox<{ jwks: { keys: JWK[] } }> = async (app, { jwks }) => {
  app.get(
    '/.well-known/jwks.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getDevJwks',
        tags: ['Identity'],
        summary: 'Development JWKS',
        description:
          'Public keys of the development token issuer (only in development mode, without OIDC_ISSUER).',
        security: [],
        response: {
          200: Json(
            'The development signing keys (JWKS)',
            Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown())) }),
          ),
        },
      },
    },
    async () => jwks,
  );
};
