import { Type } from 'typebox';
import { Timestamp } from '../../http/schemas.ts';
import { StringEnum } from '../../lib/typebox.ts';
import { CORS_METHODS, HEADER_NAME_PATTERN } from './origins.ts';

const HeaderName = Type.String({ pattern: HEADER_NAME_PATTERN });

const fields = {
  origins: Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
    maxItems: 100,
    description:
      'origins allowed to call the API from a browser: exact (https://app.example.com, http://localhost:5173), a pattern of subdomains (https://*.example.com), or * (any, only without credentials). Empty: no cross-origin access',
  }),
  methods: Type.Array(StringEnum(CORS_METHODS), {
    minItems: 1,
    maxItems: CORS_METHODS.length,
    uniqueItems: true,
    description: 'methods a cross-origin request may use',
  }),
  headers: Type.Array(HeaderName, {
    maxItems: 50,
    description:
      'request headers allowed besides the ones always allowed (Authorization, Content-Type, X-Workspace-ID, X-API-Key, Last-Event-ID)',
  }),
  exposed_headers: Type.Array(HeaderName, {
    maxItems: 50,
    description: 'response headers a browser script may read',
  }),
  credentials: Type.Boolean({
    description: 'send Access-Control-Allow-Credentials: true (cookies, client certificates); never with *',
  }),
  max_age: Type.Integer({
    minimum: 0,
    maximum: 86_400,
    description: 'seconds a browser may cache a preflight answer',
  }),
};

export const CorsSettingsSchema = Type.Object({
  ...fields,
  headers: Type.Array(Type.String(), {
    description: 'every allowed request header, the always-allowed ones first',
  }),
  version: Type.Union([Type.Integer(), Type.Null()], { description: 'counts the writes; null: never set' }),
  updated_at: Type.Union([Timestamp(), Type.Null()]),
  updated_by: Type.Union([Type.String(), Type.Null()]),
});

/** `PUT /settings/cors`: the whole policy; fields left out take their defaults. */
export const PutCorsBody = Type.Object(
  {
    origins: fields.origins,
    methods: Type.Optional(fields.methods),
    headers: Type.Optional(fields.headers),
    exposed_headers: Type.Optional(fields.exposed_headers),
    credentials: Type.Optional(fields.credentials),
    max_age: Type.Optional(fields.max_age),
  },
  { additionalProperties: false },
);
