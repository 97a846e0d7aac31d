import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { Type } from 'typebox';

/**
 * `GET /metrics` in the Prometheus text format: this process's own figures (CPU, memory, event
 * loop, GC, handles from prom-client's defaults) and the duration of every HTTP request by
 * method, route pattern and status (OpenTelemetry's `http.server.request.duration`). Nothing of
 * any workspace: no tenant data, no ids, so it is public like `/api/health`; keep it off the
 * public network where process figures should stay private. Workspace figures are
 * `GET /api/system/metrics`.
 */
export function registerPrometheus(app: FastifyInstance): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP server requests, by method, route pattern and status code.',
    labelNames: ['http_request_method', 'http_route', 'http_response_status_code'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  app.addHook('onResponse', async (request, reply) => {
    duration.observe(
      {
        http_request_method: request.method,
        // The route's pattern, never the raw URL: ids in paths would make a series per id.
        http_route: request.is404 ? '(unmatched)' : (request.routeOptions.url ?? '(unmatched)'),
        http_response_status_code: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
  });

  app.get(
    '/metrics',
    {
      config: { public: true },
      // Not part of the JSON API (like /docs): left out of openapi.json, documented in docs/analytics.md.
      schema: {
        hide: true,
        tags: ['System'],
        summary: 'Prometheus metrics',
        description:
          'This process’s figures in the Prometheus text format (version 0.0.4): prom-client’s default process metrics and `http_server_request_duration_seconds` by method, route pattern and status. No workspace data; public.',
        security: [],
        response: { 200: Type.String() },
      },
    },
    async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  );
}
