import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { Type } from 'typebox';
import { AppError, unauthorized } from '../errors.ts';

/**
 * `GET /metrics` in the Prometheus text format: this process's own figures (CPU, memory, event
 * loop, GC, handles from prom-client's defaults) and the duration of every HTTP request by
 * method, route pattern and status (OpenTelemetry's `http.server.request.duration`). Nothing of
 * any workspace: no tenant data, no ids. Still not for everyone: with `METRICS_TOKEN` set a
 * scraper sends it as a bearer token; without it only loopback clients are answered (a
 * scraper on the host, or an agent beside it). Workspace figures are `GET /api/system/metrics`.
 */
export function registerPrometheus(
  app: FastifyInstance,
  options: {
    token?: string;
    /** What the search index's in-memory postings hold now (docs/retrieval.md). */
    postings?: () => { partitions: number; bytes: number; building: number };
  } = {},
): void {
  const expected = options.token === undefined ? undefined : digest(options.token);
  const allowed = (request: FastifyRequest): boolean => {
    if (expected === undefined) return isLoopback(request.socket.remoteAddress);
    const header = request.headers.authorization;
    const given = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : undefined;
    return given !== undefined && timingSafeEqual(digest(given), expected);
  };
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP server requests, by method, route pattern and status code.',
    labelNames: ['http_request_method', 'http_route', 'http_response_status_code'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  const postings = options.postings;
  if (postings) {
    for (const [name, help, field] of [
      ['search_postings_bytes', 'Memory held by the in-memory keyword postings.', 'bytes'],
      ['search_postings_partitions', 'Sources whose keyword postings are held in memory.', 'partitions'],
      ['search_postings_builds', 'Builds of in-memory keyword postings running now.', 'building'],
    ] as const) {
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(postings()[field]);
        },
      });
    }
  }

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
          'This process’s figures in the Prometheus text format (version 0.0.4): prom-client’s default process metrics and `http_server_request_duration_seconds` by method, route pattern and status. No workspace data. With METRICS_TOKEN set it needs that bearer token; without, loopback clients only.',
        security: [],
        response: { 200: Type.String() },
      },
    },
    async (request, reply) => {
      if (!allowed(request)) {
        throw options.token === undefined
          ? new AppError(
              403,
              'metrics_forbidden',
              'GET /metrics answers loopback clients only unless METRICS_TOKEN is set',
            )
          : unauthorized('GET /metrics needs the METRICS_TOKEN as a bearer token');
      }
      return reply.type(registry.contentType).send(await registry.metrics());
    },
  );
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

function isLoopback(address: string | undefined): boolean {
  return (
    address === '127.0.0.1' ||
    address === '::1' ||
    address === '::ffff:127.0.0.1' ||
    address?.startsWith('127.') === true
  );
}
