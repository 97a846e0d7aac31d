import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sendJsonText } from '../../http/json-text.ts';
import { IdParams, Json, NoContent } from '../../http/schemas.ts';
import {
  AgentPage,
  AgentSchema,
  CreateAgentBody,
  ListAgentsQuery,
  UpdateAgentBody,
} from './agents.schemas.ts';
import type { AgentsService } from './agents.service.ts';

const tags = ['Agents'];

/** CRUD for agents. */
export const agentsRoutes: FastifyPluginAsyncTypebox<{ agents: AgentsService }> = async (app, { agents }) => {
  app.get(
    '/agents',
    {
      schema: {
        operationId: 'listAgents',
        tags,
        summary: 'List agents',
        description:
          'Agents of the current workspace, newest first. Filters: q (name or description, case-insensitive), status, tag, tenant_id.',
        querystring: ListAgentsQuery,
        // Documents the page; the body is JSON text the database wrote in this shape,
        // sent as it is (see `selectJsonPage`), so this schema does not serialise it.
        response: { 200: Json('A page of agents', AgentPage) },
      },
    },
    async (request, reply) => sendJsonText(reply, await agents.list(request.caller, request.query)),
  );

  app.get(
    '/agents/:id',
    {
      schema: {
        operationId: 'getAgent',
        tags,
        summary: 'Get an agent',
        description: 'One agent of the current workspace; another workspace’s agent is 404.',
        params: IdParams,
        response: { 200: Json('The agent', AgentSchema) },
      },
    },
    async (request) => agents.get(request.caller, request.params.id),
  );

  app.post(
    '/agents',
    {
      schema: {
        operationId: 'createAgent',
        tags,
        summary: 'Create an agent',
        description:
          'Creates an agent; only name is required. Without model it uses the workspace’s default model (settings/providers). Status defaults to Idle.',
        body: CreateAgentBody,
        response: { 201: Json('The created agent', AgentSchema) },
      },
    },
    async (request, reply) => reply.status(201).send(await agents.create(request.caller, request.body)),
  );

  app.put(
    '/agents/:id',
    {
      schema: {
        operationId: 'updateAgent',
        tags,
        summary: 'Update an agent',
        description: 'Partial update: only the fields sent change; updated_at is refreshed.',
        params: IdParams,
        body: UpdateAgentBody,
        response: { 200: Json('The updated agent', AgentSchema) },
      },
    },
    async (request) => agents.update(request.caller, request.params.id, request.body),
  );

  app.delete(
    '/agents/:id',
    {
      schema: {
        operationId: 'deleteAgent',
        tags,
        summary: 'Delete an agent',
        description:
          'Deletes the agent and removes it from every workflow that lists it, in one transaction.',
        params: IdParams,
        response: { 204: NoContent('The agent is deleted') },
      },
    },
    async (request, reply) => {
      await agents.delete(request.caller, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
