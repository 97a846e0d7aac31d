import type { Role } from './db/schema/workspaces.ts';

/** Roles are declared beside their table; callers and the auth hook name them from here. */
export type { Role } from './db/schema/workspaces.ts';

/**
 * Who is calling: the one name every layer uses. The auth hook (`http/auth.ts`) builds it
 * from the token, the workspace header or API key and the membership; routes hand it to
 * services, which take the fields they need (`Pick<Caller, 'userId' | 'workspaceId'>`).
 */
export interface Caller {
  /** The token's subject. */
  userId: string;
  /** The workspace the request acts in; every query is scoped by it. */
  workspaceId: string;
  tenantId: string;
  role: Role;
  /**
   * How the workspace was chosen: the `X-Workspace-ID` header, an API key, or a single-use
   * WebSocket ticket (`?ticket=`, bound to a user and workspace when it was issued).
   */
  via: 'bearer' | 'api_key' | 'ticket';
  /** The API key's id when `via` is `api_key`: a live stream ends when that key is revoked. */
  apiKeyId?: string;
  /** The client address, recorded in audit trails; absent outside HTTP (commands, jobs). */
  ipAddress?: string;
  /** The request's id (`X-Request-ID` or generated), recorded in audit trails; absent outside HTTP. */
  requestId?: string;
}

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** True when `role` is at least `needed`. */
export const hasRole = (role: Role, needed: Role): boolean => RANK[role] >= RANK[needed];
