import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { IdParams, Json, NoContent } from '../../http/schemas.ts';
import {
  AddMemberBody,
  ApiKeyPage,
  ChangeRoleBody,
  CreateApiKeyBody,
  CreatedApiKeySchema,
  CreateWorkspaceBody,
  CurrentWorkspaceSchema,
  ListQuery,
  MemberPage,
  MemberParams,
  MemberSchema,
  WorkspaceSchema,
} from './workspaces.schemas.ts';
import type { WorkspacesService } from './workspaces.service.ts';

const tags = ['Workspaces'];

/** Workspaces, members and API keys. */
export const workspacesRoutes: FastifyPluginAsyncTypebox<{ workspaces: WorkspacesService }> = async (
  app,
  { workspaces },
) => {
  app.get(
    '/workspaces',
    {
      config: { workspace: false },
      schema: {
        operationId: 'listWorkspaces',
        tags,
        summary: 'List my workspaces',
        description:
          'Every workspace the caller is a member of, with its tenant and the caller’s role. Needs only a bearer token.',
        response: {
          200: Json(
            'The workspaces the caller is a member of',
            Type.Object({ items: Type.Array(WorkspaceSchema) }),
          ),
        },
      },
    },
    async (request) => ({ items: await workspaces.listMine(request.userId) }),
  );

  app.post(
    '/workspaces',
    {
      config: { workspace: false },
      schema: {
        operationId: 'createWorkspace',
        tags,
        summary: 'Create a workspace',
        description:
          'Creates a new tenant with one workspace owned by the caller (self-service sign-up). Needs only a bearer token.',
        body: CreateWorkspaceBody,
        response: { 201: Json('The created workspace, the caller its owner', WorkspaceSchema) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await workspaces.createWorkspace(request.userId, request.body)),
  );

  app.get(
    '/workspaces/current',
    {
      schema: {
        operationId: 'getCurrentWorkspace',
        tags,
        summary: 'Current workspace',
        description:
          'The workspace selected by X-Workspace-ID or the API key, its tenant, and the caller’s role in it.',
        response: { 200: Json('The current workspace', CurrentWorkspaceSchema) },
      },
    },
    async (request) => workspaces.getCurrent(request.caller),
  );

  app.get(
    '/workspaces/members',
    {
      schema: {
        operationId: 'listMembers',
        tags,
        summary: 'List members',
        description: 'Members of the current workspace with their roles, oldest first.',
        querystring: ListQuery,
        response: { 200: Json('A page of members', MemberPage) },
      },
    },
    async (request) => workspaces.listMembers(request.caller, request.query),
  );

  app.post(
    '/workspaces/members',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'addMember',
        tags,
        summary: 'Add a member',
        description:
          'Adds a user (identity provider subject) with a role. Admins and owners; only owners grant owner.',
        body: AddMemberBody,
        response: { 201: Json('The added member', MemberSchema) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await workspaces.addMember(request.caller, request.body)),
  );

  app.put(
    '/workspaces/members/:user_id',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'changeMemberRole',
        tags,
        summary: 'Change a member’s role',
        description:
          'Admins and owners; only owners change an owner’s role. The last owner cannot be demoted (409).',
        params: MemberParams,
        body: ChangeRoleBody,
        response: { 200: Json('The member with the new role', MemberSchema) },
      },
    },
    async (request) => workspaces.changeRole(request.caller, request.params.user_id, request.body.role),
  );

  app.delete(
    '/workspaces/members/:user_id',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'removeMember',
        tags,
        summary: 'Remove a member',
        description:
          'Admins and owners; only owners remove an owner. The last owner cannot be removed (409).',
        params: MemberParams,
        response: { 204: NoContent('The member is removed') },
      },
    },
    async (request, reply) => {
      await workspaces.removeMember(request.caller, request.params.user_id);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/workspaces/api-keys',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'listApiKeys',
        tags,
        summary: 'List API keys',
        description:
          'The workspace’s API keys, newest first. Only the visible prefix is shown, never the key.',
        querystring: ListQuery,
        response: { 200: Json('A page of API keys (never their secrets)', ApiKeyPage) },
      },
    },
    async (request) => workspaces.listApiKeys(request.caller, request.query),
  );

  app.post(
    '/workspaces/api-keys',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'createApiKey',
        tags,
        summary: 'Create an API key',
        description:
          'Creates a key bound to this workspace, optionally expiring. The full key is in this response only; it is stored as a hash.',
        body: CreateApiKeyBody,
        response: { 201: Json('The created API key, its secret shown this once', CreatedApiKeySchema) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await workspaces.createApiKey(request.caller, request.body)),
  );

  app.delete(
    '/workspaces/api-keys/:id',
    {
      config: { role: 'admin' },
      schema: {
        operationId: 'revokeApiKey',
        tags,
        summary: 'Revoke an API key',
        description: 'Revokes the key at once; it stays listed with status revoked.',
        params: IdParams,
        response: { 204: NoContent('The API key is revoked') },
      },
    },
    async (request, reply) => {
      await workspaces.revokeApiKey(request.caller, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
