import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { IdParams } from '../../http/schemas.ts';
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
        tags,
        summary: 'List my workspaces',
        description:
          'Every workspace the caller is a member of, with its tenant and the caller’s role. Needs only a bearer token.',
        response: { 200: Type.Object({ items: Type.Array(WorkspaceSchema) }) },
      },
    },
    async (request) => ({ items: await workspaces.listMine(request.userId) }),
  );

  app.post(
    '/workspaces',
    {
      config: { workspace: false },
      schema: {
        tags,
        summary: 'Create a workspace',
        description:
          'Creates a new tenant with one workspace owned by the caller (self-service sign-up). Needs only a bearer token.',
        body: CreateWorkspaceBody,
        response: { 201: WorkspaceSchema },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await workspaces.createWorkspace(request.userId, request.body)),
  );

  app.get(
    '/workspaces/current',
    {
      schema: {
        tags,
        summary: 'Current workspace',
        description:
          'The workspace selected by X-Workspace-ID or the API key, its tenant, and the caller’s role in it.',
        response: { 200: CurrentWorkspaceSchema },
      },
    },
    async (request) => workspaces.getCurrent(request.caller),
  );

  app.get(
    '/workspaces/members',
    {
      schema: {
        tags,
        summary: 'List members',
        description: 'Members of the current workspace with their roles, oldest first.',
        querystring: ListQuery,
        response: { 200: MemberPage },
      },
    },
    async (request) => workspaces.listMembers(request.caller, request.query),
  );

  app.post(
    '/workspaces/members',
    {
      config: { role: 'admin' },
      schema: {
        tags,
        summary: 'Add a member',
        description:
          'Adds a user (identity provider subject) with a role. Admins and owners; only owners grant owner.',
        body: AddMemberBody,
        response: { 201: MemberSchema },
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
        tags,
        summary: 'Change a member’s role',
        description:
          'Admins and owners; only owners change an owner’s role. The last owner cannot be demoted (409).',
        params: MemberParams,
        body: ChangeRoleBody,
        response: { 200: MemberSchema },
      },
    },
    async (request) => workspaces.changeRole(request.caller, request.params.user_id, request.body.role),
  );

  app.delete(
    '/workspaces/members/:user_id',
    {
      config: { role: 'admin' },
      schema: {
        tags,
        summary: 'Remove a member',
        description:
          'Admins and owners; only owners remove an owner. The last owner cannot be removed (409).',
        params: MemberParams,
        response: { 204: Type.Null() },
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
        tags,
        summary: 'List API keys',
        description:
          'The workspace’s API keys, newest first. Only the visible prefix is shown, never the key.',
        querystring: ListQuery,
        response: { 200: ApiKeyPage },
      },
    },
    async (request) => workspaces.listApiKeys(request.caller, request.query),
  );

  app.post(
    '/workspaces/api-keys',
    {
      config: { role: 'admin' },
      schema: {
        tags,
        summary: 'Create an API key',
        description:
          'Creates a key bound to this workspace, optionally expiring. The full key is in this response only; it is stored as a hash.',
        body: CreateApiKeyBody,
        response: { 201: CreatedApiKeySchema },
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
        tags,
        summary: 'Revoke an API key',
        description: 'Revokes the key at once; it stays listed with status revoked.',
        params: IdParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await workspaces.revokeApiKey(request.caller, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
