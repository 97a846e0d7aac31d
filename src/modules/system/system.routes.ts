import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Timestamp } from '../../http/schemas.ts';
import { StringEnum } from '../../lib/typebox.ts';
import type { SystemService } from './system.service.ts';

const tags = ['System'];

const HealthReport = Type.Object({
  status: StringEnum(['Operational', 'Degraded', 'Down'] as const),
  components: Type.Array(
    Type.Object({
      name: Type.String(),
      status: StringEnum(['up', 'down', 'not_configured'] as const),
      latency_ms: Type.Optional(Type.Number()),
      detail: Type.Optional(Type.String()),
    }),
  ),
  started_at: Timestamp(),
  uptime_seconds: Type.Integer(),
  checked_at: Timestamp(),
});

/** Liveness (public) and component health (authenticated). */
export const systemRoutes: FastifyPluginAsyncTypebox<{ system: SystemService }> = async (app, { system }) => {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Liveness',
        description:
          'Public liveness probe: answers 200 while the process serves requests. No versions, no component details.',
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/system/health',
    {
      // The report is about the service, not a workspace, and it must answer while the database
      // is down: a valid token is enough, so no membership lookup can fail before the handler.
      config: { workspace: false },
      schema: {
        tags,
        summary: 'System health',
        description:
          'Overall status (Operational, Degraded, Down), one entry per component (API, Database, Redis, Vector Search, LLM Providers) and uptime. Answers 503 when Down (the database is unreachable). Any authenticated user may call it; X-Workspace-ID is not needed.',
        security: [{ bearer: [] }],
        response: { 200: HealthReport, 503: HealthReport },
      },
    },
    async (_request, reply) => {
      const report = await system.health();
      return reply.status(report.status === 'Down' ? 503 : 200).send(report);
    },
  );
};
