import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IdParams, Json, NoContent } from '../../http/schemas.ts';
import {
  CreateTenantBody,
  DeleteTenantQuery,
  ListTenantsQuery,
  TenantPage,
  TenantSchema,
  UpdateTenantBody,
} from './tenants.schemas.ts';
import type { TenantsService } from './tenants.service.ts';

const tags = ['Settings'];

/**
 * Tenants as their administrators manage them (spec 4.8; docs/settings.md). A tenant spans
 * workspaces, so these routes need a bearer token but no workspace; the service decides who
 * administers what.
 */
export const tenantsRoutes: FastifyPluginAsyncTypebox<{ tenants: TenantsService }> = async (
  app,
  { tenants },
) => {
  app.get(
    '/settings/tenants',
    {
      config: { workspace: false },
      schema: {
        operationId: 'listTenants',
        tags,
        summary: 'List my tenants',
        description:
          'The tenants the caller administers (owns a workspace of now, or created and has no workspace yet), each with its workspaces and defaults, oldest first. Platform operators (PLATFORM_ADMIN_USERS) see every tenant. Needs only a bearer token.',
        querystring: ListTenantsQuery,
        response: { 200: Json('A page of tenants', TenantPage) },
      },
    },
    async (request) => tenants.list(request.userId, request.query),
  );

  app.post(
    '/settings/tenants',
    {
      config: { workspace: false },
      schema: {
        operationId: 'createTenant',
        tags,
        summary: 'Create a tenant',
        description:
          'Creates a tenant the caller administers, with its defaults (time zone of nightly jobs, default model), and with `workspace_name` its first workspace, owned by the caller and starting with the default model. Any authenticated user may. Records system.settings_changed in the new workspace.',
        body: CreateTenantBody,
        response: { 201: Json('The created tenant', TenantSchema) },
      },
    },
    async (request, reply) => reply.status(201).send(await tenants.create(request.userId, request.body)),
  );

  app.put(
    '/settings/tenants/:id',
    {
      config: { workspace: false },
      schema: {
        operationId: 'updateTenant',
        tags,
        summary: 'Rename a tenant or change its defaults',
        description:
          'The fields given change; null clears a default. Administrators of the tenant only: a member of one of its workspaces who does not administer it gets 403 insufficient_role, anyone else 404. Records system.settings_changed in each of its workspaces.',
        params: IdParams,
        body: UpdateTenantBody,
        response: { 200: Json('The updated tenant', TenantSchema) },
      },
    },
    async (request) => tenants.update(request.userId, request.params.id, request.body),
  );

  app.delete(
    '/settings/tenants/:id',
    {
      config: { workspace: false },
      schema: {
        operationId: 'deleteTenant',
        tags,
        summary: 'Delete a tenant',
        description:
          'Administrators of the tenant only. An empty tenant is deleted at once. One with workspaces needs `?confirm=<the tenant’s name>` and is deleted with its workspaces and everything in them; without it the answer is 409 tenant_not_empty naming them, and a confirmation that is not the name is 400.',
        params: IdParams,
        querystring: DeleteTenantQuery,
        response: { 204: NoContent('The tenant is deleted') },
      },
    },
    async (request, reply) => {
      await tenants.remove(request.userId, request.params.id, request.query.confirm);
      return reply.status(204).send(null);
    },
  );
};
