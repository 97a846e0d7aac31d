import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Json } from '../../http/schemas.ts';
import { AgentAnalyticsSchema, AnalyticsQuery, CostsSchema, OverviewSchema } from './analytics.schemas.ts';
import type { AnalyticsService } from './analytics.service.ts';

const tags = ['Analytics'];
const WINDOW =
  'Window `from` (inclusive) to `to` (exclusive), by run creation time; default the last 24 hours, at most 400 days (a longer or empty window is a 400 naming `query.from`). Series buckets are UTC hours or days (`bucket`; default hour up to 2 days, else day; hour at most 31 days). Only the caller’s workspace is counted.';

/** Workspace analytics: overview, cost breakdown and per-agent figures over a window. */
export const analyticsRoutes: FastifyPluginAsyncTypebox<{ analytics: AnalyticsService }> = async (
  app,
  { analytics },
) => {
  app.get(
    '/analytics/overview',
    {
      schema: {
        operationId: 'getAnalyticsOverview',
        tags,
        summary: 'Workspace metrics summary',
        description: `Runs, success rate, input and output tokens, cost, run latency p50/p95, chat conversations and messages: totals and a series. ${WINDOW}`,
        querystring: AnalyticsQuery,
        response: { 200: Json('The workspace metrics for the window', OverviewSchema) },
      },
    },
    async (request) => analytics.overview(request.caller, request.query),
  );

  app.get(
    '/analytics/costs',
    {
      schema: {
        operationId: 'getAnalyticsCosts',
        tags,
        summary: 'LLM cost breakdown',
        description: `Cost and tokens by provider, model and agent (from run steps) and by workflow (from runs), with a cost series. ${WINDOW}`,
        querystring: AnalyticsQuery,
        response: { 200: Json('The cost breakdown for the window', CostsSchema) },
      },
    },
    async (request) => analytics.costs(request.caller, request.query),
  );

  app.get(
    '/analytics/agents',
    {
      schema: {
        operationId: 'getAgentAnalytics',
        tags,
        summary: 'Per-agent analytics',
        description: `Every agent of the workspace: runs it took part in, their success rate, tokens, cost, step latency p50/p95, busy time and utilisation (busy share of the window). ${WINDOW}`,
        querystring: AnalyticsQuery,
        response: { 200: Json('The per-agent figures for the window', AgentAnalyticsSchema) },
      },
    },
    async (request) => analytics.agents(request.caller, request.query),
  );
};
