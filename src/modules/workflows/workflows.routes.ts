import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IdParams, Json, NoContent } from '../../http/schemas.ts';
import {
  CreateWorkflowBody,
  ListWorkflowsQuery,
  UpdateWorkflowBody,
  WorkflowPage,
  WorkflowSchema,
} from './workflows.schemas.ts';
import type { WorkflowsService } from './workflows.service.ts';

const tags = ['Workflows'];

/** CRUD for workflows. */
export const workflowsRoutes: FastifyPluginAsyncTypebox<{ workflows: WorkflowsService }> = async (
  app,
  { workflows },
) => {
  app.get(
    '/workflows',
    {
      schema: {
        operationId: 'listWorkflows',
        tags,
        summary: 'List workflows',
        description:
          'Workflows of the current workspace, newest first. Filters: q (name or description, case-insensitive), status, tag, is_template.',
        querystring: ListWorkflowsQuery,
        response: { 200: Json('A page of workflows', WorkflowPage) },
      },
    },
    async (request) => workflows.list(request.caller, request.query),
  );

  app.get(
    '/workflows/:id',
    {
      schema: {
        operationId: 'getWorkflow',
        tags,
        summary: 'Get a workflow',
        description: 'One workflow of the current workspace; another workspace’s workflow is 404.',
        params: IdParams,
        response: { 200: Json('The workflow', WorkflowSchema) },
      },
    },
    async (request) => workflows.get(request.caller, request.params.id),
  );

  app.post(
    '/workflows',
    {
      schema: {
        operationId: 'createWorkflow',
        tags,
        summary: 'Create a workflow',
        description:
          'Creates a workflow; only name is required. Agent ids must exist in this workspace. Execution policy defaults: sequential, stop, 0 retries, 900 s.',
        body: CreateWorkflowBody,
        response: { 201: Json('The created workflow', WorkflowSchema) },
      },
    },
    async (request, reply) => reply.status(201).send(await workflows.create(request.caller, request.body)),
  );

  app.put(
    '/workflows/:id',
    {
      schema: {
        operationId: 'updateWorkflow',
        tags,
        summary: 'Update a workflow',
        description:
          'Partial update: only the fields sent change (a partial execution_policy merges into the current one); updated_at is refreshed.',
        params: IdParams,
        body: UpdateWorkflowBody,
        response: { 200: Json('The updated workflow', WorkflowSchema) },
      },
    },
    async (request) => workflows.update(request.caller, request.params.id, request.body),
  );

  app.delete(
    '/workflows/:id',
    {
      schema: {
        operationId: 'deleteWorkflow',
        tags,
        summary: 'Delete a workflow',
        description: 'Deletes the workflow.',
        params: IdParams,
        response: { 204: NoContent('The workflow is deleted') },
      },
    },
    async (request, reply) => {
      await workflows.delete(request.caller, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
