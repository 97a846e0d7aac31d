import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { JWK } from 'jose';
import { Type } from 'typebox';
import type { AuthConfig } from '../../config.ts';
import { forbidden } from '../../errors.ts';
import { Json } from '../../http/schemas.ts';
import { DEV_USER_ID } from './dev-identity.ts';
import { type DevSigningKey, mintDevToken } from './dev-issuer.ts';

const tags = ['Identity'];

/** Serves the development issuer's public keys, as an identity provider would. */
export const devJwksRoutes: FastifyPluginAsyncTypebox<{ jwks: { keys: JWK[] } }> = async (app, { jwks }) => {
  app.get(
    '/.well-known/jwks.json',
    {
      config: { public: true },
      schema: {
        operationId: 'getDevJwks',
        tags,
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

const AuthSettings = Type.Object(
  {
    mode: Type.Union([Type.Literal('development'), Type.Literal('oidc')], {
      description:
        '`development`: the service issues its own tokens (POST /api/auth/dev-session); `oidc`: tokens come from the identity provider',
    }),
    issuer: Type.String({ description: 'The `iss` of accepted tokens' }),
    audience: Type.String({ description: 'The `aud` of accepted tokens' }),
    console_client_id: Type.Union([Type.String(), Type.Null()], {
      description:
        'The web console’s public client at the issuer (authorization code with PKCE); null when the console takes pasted tokens only',
    }),
  },
  { $id: 'AuthSettings' },
);

const DevSessionBody = Type.Object(
  {
    user_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: '^[A-Za-z0-9._@:-]+$',
        description: `The token's user (default ${DEV_USER_ID}, the owner of the default workspace)`,
      }),
    ),
  },
  { additionalProperties: false },
);

const DevSession = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds until the token expires' }),
    user_id: Type.String(),
  },
  { $id: 'DevSession' },
);

/** Loopback peers: the only ones handed a development token. */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/** How long a console session's development token lives: a working day. */
const DEV_SESSION_SECONDS = 8 * 3600;

/**
 * How a client signs in: the issuer's settings (public, for the console's sign-in page) and, in
 * development mode only, a token of the service's own issuer, so the console's "Sign in as
 * developer" needs no terminal. In production the development issuer does not exist, so
 * neither does the route (404).
 */
export const identityRoutes: FastifyPluginAsyncTypebox<{ auth: AuthConfig; devKey?: DevSigningKey }> = async (
  app,
  { auth, devKey },
) => {
  app.get(
    '/auth/settings',
    {
      config: { public: true },
      schema: {
        operationId: 'getAuthSettings',
        tags,
        summary: 'How to sign in',
        description:
          'The identity settings a client needs to sign in: development mode or the OIDC issuer, the expected audience, and the web console’s public client id. Public: nothing in it is secret.',
        security: [],
        response: { 200: Json('The identity settings', AuthSettings) },
      },
    },
    async () => ({
      mode: auth.mode === 'dev' ? ('development' as const) : ('oidc' as const),
      issuer: auth.issuer,
      audience: auth.audience,
      console_client_id: auth.mode === 'oidc' ? (auth.consoleClientId ?? null) : null,
    }),
  );

  if (auth.mode !== 'dev' || !devKey) return;
  app.post(
    '/auth/dev-session',
    {
      config: { public: true },
      schema: {
        operationId: 'createDevSession',
        tags,
        summary: 'Sign in as a developer (development mode only)',
        description:
          'A bearer token of the development issuer, valid 8 hours, for the given user (default the owner of the default workspace): what `npm run dev-token` prints, for the web console’s “Sign in as developer”. Exists only in development mode (no OIDC_ISSUER, NODE_ENV not production); elsewhere the route is 404.',
        security: [],
        body: Type.Optional(DevSessionBody),
        response: { 201: Json('A development access token', DevSession) },
      },
    },
    async (request, reply) => {
      if (!LOOPBACK.test(request.socket.remoteAddress ?? '')) {
        throw forbidden(
          'dev_session_local_only',
          'development tokens are handed out on loopback only: run `npm run --silent dev-token` on the service’s machine and paste the token',
        );
      }
      const userId = request.body?.user_id ?? DEV_USER_ID;
      const token = await mintDevToken(devKey, {
        userId,
        issuer: auth.issuer,
        audience: auth.audience,
        ttlSeconds: DEV_SESSION_SECONDS,
      });
      reply.header('cache-control', 'no-store');
      return reply.status(201).send({
        access_token: token,
        token_type: 'Bearer' as const,
        expires_in: DEV_SESSION_SECONDS,
        user_id: userId,
      });
    },
  );
};
