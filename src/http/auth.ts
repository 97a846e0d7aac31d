import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Caller, hasRole, type Role } from '../caller.ts';
import { AppError, forbidden, invalid, unauthorized } from '../errors.ts';

/** What the auth hook needs from the rest of the service. */
export interface AuthDependencies {
  verifyToken(token: string): Promise<{ subject: string }>;
  /** The caller's membership, or undefined when the workspace is unknown or they are not a member. */
  findMembership(workspaceId: string, userId: string): Promise<{ tenantId: string; role: Role } | undefined>;
  /** The workspace an API key selects, or undefined when the key is unknown, revoked or expired. */
  resolveApiKey(key: string): Promise<{ workspaceId: string; keyId: string } | undefined>;
  /**
   * Spends a single-use ticket (routes with `config.ticket`): who it was issued to, or
   * undefined when it is unknown, already used or expired.
   */
  redeemTicket?(ticket: string): Promise<{ userId: string; workspaceId: string } | undefined>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No authentication at all (health, JWKS, docs). */
    public?: boolean;
    /** Authenticated user, but no workspace needed (create or list one's workspaces). */
    workspace?: false;
    /** Least role needed; defaults to viewer for GET and member for writes. */
    role?: Role;
    /**
     * Also accepts `?ticket=<single-use ticket>` instead of the headers: for WebSocket
     * upgrades from browsers, which cannot set headers on them.
     */
    ticket?: boolean;
  }
  interface FastifyRequest {
    /** Set for every authenticated route. */
    caller: Caller;
    /** Set for authenticated routes, including those without a workspace. */
    userId: string;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Authenticates every route not marked public, before validation, so an anonymous
 * caller learns nothing about a route's input rules. Scheme A: bearer token plus
 * `X-Workspace-ID`. Scheme B: `X-API-Key` selects the workspace, the bearer names the user.
 * Routes with `config.ticket` (the WebSocket) also take `?ticket=`, a single-use ticket
 * that names both, for browsers that cannot send headers on an upgrade.
 */
export function registerAuth(app: FastifyInstance, deps: AuthDependencies): void {
  app.decorateRequest('caller', null as unknown as Caller);
  app.decorateRequest('userId', '');
  app.addHook('onRequest', async (request) => {
    const config = request.routeOptions.config;
    // Only the API is protected; /docs and the development JWKS are public by nature.
    if (config.public || request.is404 || !request.routeOptions.url?.startsWith('/api/')) return;
    const ticket = config.ticket ? ticketOf(request) : undefined;
    if (ticket !== undefined) {
      request.caller = await callerFromTicket(request, ticket, deps);
      request.userId = request.caller.userId;
    } else {
      request.userId = (await deps.verifyToken(bearerToken(request))).subject;
      if (config.workspace === false) return;
      request.caller = await resolveCaller(request, deps);
    }
    const needed =
      config.role ?? (request.method === 'GET' || request.method === 'HEAD' ? 'viewer' : 'member');
    if (!hasRole(request.caller.role, needed)) {
      throw forbidden(
        'insufficient_role',
        `this action needs the ${needed} role or higher; you are ${request.caller.role}`,
      );
    }
  });
}

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header)
    throw unauthorized('the Authorization header with a Bearer token is required', 'invalid_request');
  const match = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header.trim());
  if (!match?.[1]) throw unauthorized('the Authorization header must be "Bearer <token>"', 'invalid_request');
  return match[1];
}

async function resolveCaller(request: FastifyRequest, deps: AuthDependencies): Promise<Caller> {
  const userId = request.userId;
  const apiKey = headerValue(request, 'x-api-key');
  const workspaceHeader = headerValue(request, 'x-workspace-id');
  let workspaceId: string;
  let via: Caller['via'] = 'bearer';
  let apiKeyId: string | undefined;
  if (apiKey !== undefined) {
    const key = await deps.resolveApiKey(apiKey);
    if (!key) {
      throw new AppError(401, 'invalid_api_key', 'the API key is unknown, revoked or expired', undefined, {
        'WWW-Authenticate': 'ApiKey realm="api"',
      });
    }
    if (workspaceHeader !== undefined && workspaceHeader.toLowerCase() !== key.workspaceId) {
      throw invalid('headers.x-workspace-id', "does not match the API key's workspace");
    }
    workspaceId = key.workspaceId;
    via = 'api_key';
    apiKeyId = key.keyId;
  } else {
    if (workspaceHeader === undefined) {
      throw invalid('headers.x-workspace-id', 'is required (or send X-API-Key)');
    }
    if (!UUID.test(workspaceHeader)) throw invalid('headers.x-workspace-id', 'must be a valid UUID');
    workspaceId = workspaceHeader.toLowerCase();
  }
  const membership = await deps.findMembership(workspaceId, userId);
  if (!membership) {
    throw forbidden(
      'workspace_forbidden',
      `workspace ${workspaceId} does not exist or you are not a member of it`,
    );
  }
  return {
    userId,
    workspaceId,
    tenantId: membership.tenantId,
    role: membership.role,
    via,
    ...(apiKeyId === undefined ? {} : { apiKeyId }),
    ipAddress: request.ip,
    requestId: request.id,
  };
}

/** The `ticket` query parameter, when the request carries one. */
function ticketOf(request: FastifyRequest): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.ticket;
  const text = Array.isArray(value) ? value[0] : value;
  return typeof text === 'string' && text !== '' ? text : undefined;
}

/**
 * The caller a ticket speaks for. The ticket is spent whatever follows, and the membership
 * is read again now: a member removed since the ticket was issued is refused.
 */
async function callerFromTicket(
  request: FastifyRequest,
  ticket: string,
  deps: AuthDependencies,
): Promise<Caller> {
  const binding = await deps.redeemTicket?.(ticket);
  if (!binding) throw unauthorized('the ticket is unknown, already used or expired');
  const membership = await deps.findMembership(binding.workspaceId, binding.userId);
  if (!membership) {
    throw forbidden(
      'workspace_forbidden',
      `workspace ${binding.workspaceId} does not exist or you are not a member of it`,
    );
  }
  return {
    userId: binding.userId,
    workspaceId: binding.workspaceId,
    tenantId: membership.tenantId,
    role: membership.role,
    via: 'ticket',
    ipAddress: request.ip,
    requestId: request.id,
  };
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text.trim() === '' ? undefined : text.trim();
}
