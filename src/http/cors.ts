import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** What the CORS glue asks of the settings: the policy for a request's origin, or none. */
export interface CorsPolicySource {
  policyFor(origin: string | undefined): Promise<
    | {
        origin: string;
        credentials: boolean;
        methods: string[];
        allowedHeaders: string[];
        exposedHeaders: string[];
        maxAge: number;
      }
    | undefined
  >;
}

/**
 * `@fastify/cors` with a per-request policy read from the settings (cached; see the CORS
 * service), so a change applies without a restart. Registered before authentication: a
 * preflight carries no credentials and is answered in the plugin's `onRequest` hook, and an
 * actual request refused with 401 still carries the CORS headers, so the browser lets the
 * page read the error. A disallowed origin gets no CORS headers at all (and its preflight,
 * no route: 404).
 */
export async function registerCors(app: FastifyInstance, source: CorsPolicySource): Promise<void> {
  await app.register(cors, {
    delegator: async (request: FastifyRequest) => {
      const origin = request.headers.origin;
      const policy = await source.policyFor(typeof origin === 'string' ? origin : undefined);
      if (!policy) return { origin: false };
      return {
        origin: policy.origin,
        credentials: policy.credentials,
        methods: policy.methods,
        allowedHeaders: policy.allowedHeaders,
        exposedHeaders: policy.exposedHeaders,
        maxAge: policy.maxAge,
        // An OPTIONS without Access-Control-Request-Method is answered as a preflight too, rather
        // than with the plugin's plain-text 400 (every error here is problem+json).
        strictPreflight: false,
      };
    },
  });
}
