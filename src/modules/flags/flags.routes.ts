import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { bodyMayBeOmitted } from '../../http/optional-body.ts';
import { EtagHeader, Json } from '../../http/schemas.ts';
import {
  EvaluateFlagBody,
  FlagKeyParams,
  FlagPage,
  FlagSchema,
  ListFlagsQuery,
  PutFlagBody,
  PutFlagHeaders,
  ResolutionList,
  ResolutionSchema,
} from './flags.schemas.ts';
import type { FlagsService } from './flags.service.ts';

const tags = ['Settings'];

/** Feature flags of the workspace (spec 4.8; docs/flags.md). */
export const flagsRoutes: FastifyPluginAsyncTypebox<{ flags: FlagsService }> = async (app, { flags }) => {
  app.get(
    '/settings/flags',
    {
      schema: {
        operationId: 'listFlags',
        tags,
        summary: 'List feature flags',
        description:
          'The workspace’s feature flags by key: those it defined, and the built-in flags the platform reads (search.keyword_only) at their defaults until the workspace stores its own. Other workspaces’ flags are never shown.',
        querystring: ListFlagsQuery,
        response: { 200: Json('A page of feature flags', FlagPage) },
      },
    },
    async (request) => flags.list(request.caller, request.query),
  );

  app.get(
    '/settings/flags/:key',
    {
      schema: {
        operationId: 'getFlag',
        tags,
        summary: 'Get a feature flag',
        description:
          'One flag with its definition, version and `ETag` (also sent as the header), to send back as `If-Match` on PUT. An unknown key is 404.',
        params: FlagKeyParams,
        response: {
          200: Json(
            'The feature flag',
            FlagSchema,
            EtagHeader('the flag’s version, to send back as `If-Match`'),
          ),
        },
      },
    },
    async (request, reply) => {
      const flag = await flags.get(request.caller, request.params.key);
      if (flag.etag) reply.header('etag', flag.etag);
      return flag;
    },
  );

  app.put(
    '/settings/flags/:key',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'putFlag',
        tags,
        summary: 'Create or replace a feature flag',
        description:
          'Admins only. Stores the whole definition: its type (boolean, string, number, json), default, variants, targeting rules (the condition language), rollout split and enabled switch; fields left out take their defaults. Every value must be of the type and every rule must parse (each problem is a 400 naming its field). `If-Match` is optional: with it, the write happens only if the flag is still at that ETag, else 412 precondition_failed; without it, the last write wins. Answers the flag with its new `ETag`, and records system.settings_changed.',
        params: FlagKeyParams,
        headers: PutFlagHeaders,
        body: PutFlagBody,
        response: {
          200: Json('The feature flag as stored', FlagSchema, EtagHeader('the flag’s new version')),
        },
      },
    },
    async (request, reply) => {
      const flag = await flags.put(
        request.caller,
        request.params.key,
        request.body,
        request.headers['if-match'],
      );
      if (flag.etag) reply.header('etag', flag.etag);
      return flag;
    },
  );

  app.post(
    '/settings/flags/:key/evaluate',
    {
      preValidation: bodyMayBeOmitted,
      // A read, though a POST (the context is a body): viewers may evaluate.
      config: { role: 'viewer' },
      schema: {
        operationId: 'evaluateFlag',
        tags,
        summary: 'Evaluate a feature flag',
        description:
          'Resolves the flag for an evaluation context, in OpenFeature’s shape: value, variant and reason (STATIC, TARGETING_MATCH, SPLIT, DEFAULT or DISABLED). Rules test the context’s attributes; splits bucket `targeting_key` (the caller’s user id when absent) into 10,000 sticky buckets. Any member, viewers included, may evaluate.',
        params: FlagKeyParams,
        body: EvaluateFlagBody,
        response: { 200: Json('The flag’s value for the context, and why', ResolutionSchema) },
      },
    },
    async (request) => flags.evaluate(request.caller, request.params.key, request.body.context ?? {}),
  );

  app.post(
    '/settings/flags/evaluate',
    {
      preValidation: bodyMayBeOmitted,
      config: { role: 'viewer' },
      schema: {
        operationId: 'evaluateAllFlags',
        tags,
        summary: 'Evaluate every feature flag',
        description:
          'Resolves every flag of the workspace (the built-in ones included) for one evaluation context, as POST /settings/flags/{key}/evaluate does for one: a client fetches all its switches in one request.',
        body: EvaluateFlagBody,
        response: { 200: Json('Every flag’s value for the context', ResolutionList) },
      },
    },
    async (request) => flags.evaluateAll(request.caller, request.body.context ?? {}),
  );
};
