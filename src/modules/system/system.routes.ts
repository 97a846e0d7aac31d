import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type TSchema, Type } from 'typebox';
import { Json, Timestamp } from '../../http/schemas.ts';
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

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Kpi = (description: string) =>
  Type.Object(
    {
      value: Nullable(Type.Number()),
      reason: Type.Optional(Type.String({ description: 'why value is null (too few runs, no data)' })),
    },
    { description },
  );

const MetricsReport = Type.Object({
  window: Type.Object({ from: Timestamp(), to: Timestamp() }, { description: 'the KPIs’ last 24 hours' }),
  runs: Type.Object({
    total: Type.Integer({ description: 'runs created in the window' }),
    finished: Type.Integer({ description: 'completed + failed' }),
    completed: Type.Integer(),
    failed: Type.Integer(),
  }),
  success_rate: Kpi('completed / finished; null below 5 finished runs'),
  latency_p50_ms: Kpi('median run duration_ms; null below 5 finished runs'),
  latency_p95_ms: Kpi('95th percentile run duration_ms; null below 5 finished runs'),
  retrieval_hit_rate: Type.Object({
    value: Nullable(Type.Number()),
    reason: Type.Optional(Type.String()),
    searches: Type.Integer(),
    hits: Type.Integer(),
  }),
  cost: Kpi('sum of run cost; null below 5 finished runs'),
  workflows: Type.Object({
    running: Type.Integer(),
    queued: Type.Integer(),
    active: Type.Integer({ description: 'running + queued now' }),
    band: StringEnum(['normal', 'busy', 'overloaded'] as const, {
      description: 'normal below 10, busy 10 to 20, overloaded above 20',
    }),
  }),
  agents: Type.Object({
    total: Type.Integer(),
    active: Type.Integer({ description: 'agents Busy now' }),
    utilisation_percent: Nullable(Type.Number()),
    band: Nullable(
      StringEnum(['under', 'optimal', 'over'] as const, { description: 'optimal is 60 to 80 % inclusive' }),
    ),
  }),
  documents: Type.Object({ processed: Type.Integer(), processing: Type.Integer(), failed: Type.Integer() }),
  system: Type.Object({
    status: StringEnum(['Operational', 'Degraded', 'Down'] as const),
    components: HealthReport.properties.components,
    uptime_percent: Nullable(Type.Number()),
    uptime_reason: Type.Optional(Type.String()),
    uptime_since: Nullable(Timestamp()),
    uptime_window_minutes: Type.Integer(),
    uptime_minutes_recorded: Type.Integer(),
  }),
});

/** Liveness (public) and component health (authenticated). */
export const systemRoutes: FastifyPluginAsyncTypebox<{
  system: SystemService;
  /** Users listed in `PLATFORM_ADMIN_USERS`: the only ones who see across tenants. */
  platformAdmins: ReadonlySet<string>;
}> = async (app, { system, platformAdmins }) => {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        operationId: 'getLiveness',
        tags,
        summary: 'Liveness',
        description:
          'Public liveness probe: answers 200 while the process serves requests. No versions, no component details.',
        security: [],
        response: { 200: Json('The process is up', Type.Object({ status: Type.Literal('ok') })) },
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
        operationId: 'getSystemHealth',
        tags,
        summary: 'System health',
        description:
          'Overall status (Operational, Degraded, Down), one entry per component (API, Database, Redis, Vector Search, LLM Providers) and uptime. Answers 503 when Down (the database is unreachable). Any authenticated user may call it; X-Workspace-ID is not needed. The status follows the platform’s own components: model providers are configured per workspace, so one workspace’s unreachable provider never degrades it. The LLM Providers row counts providers across workspaces and names the workspaces whose endpoints fail for platform operators (PLATFORM_ADMIN_USERS) only; anyone else finds their workspace’s providers in GET /api/system/metrics.',
        security: [{ bearer: [] }],
        response: {
          200: Json('Every component is healthy or degraded', HealthReport),
          503: Json('A component the service needs is down', HealthReport),
        },
      },
    },
    async (request, reply) => {
      const report = await system.health({ operator: platformAdmins.has(request.userId) });
      return reply.status(report.status === 'Down' ? 503 : 200).send(report);
    },
  );

  app.get(
    '/system/metrics',
    {
      schema: {
        operationId: 'getSystemMetrics',
        tags,
        summary: 'System metrics',
        description:
          'The dashboard’s KPIs for the caller’s workspace (docs/analytics.md): over the last 24 hours success rate, run latency p50/p95, retrieval hit-rate and cost, each null with a `reason` below 5 finished runs (5 searches for the hit-rate); running plus queued runs now with their load band; agents, Busy agents and utilisation with its band; documents by state; system status from component health and the uptime percentage over the last 24 hours from recorded heartbeat minutes. The LLM Providers row and the status consider this workspace’s own providers only. One answer is shared by the workspace’s requests for SYSTEM_METRICS_SHARE_MS (5 s by default), so a dashboard polled by many clients costs one computation.',
        response: { 200: Json('The process and database figures', MetricsReport) },
      },
    },
    async (request) => system.metrics(request.caller.workspaceId),
  );
};
