import type { Role } from './db/schema/workspaces.ts';

/** Roles are declared beside their table; callers and the auth hook name them from here. */
export type { Role } from './db/schema/workspaces.ts';

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** True when `role` is at least `needed`. */
export const hasRole = (role: Role, needed: Role): boolean => RANK[role] >= RANK[needed];
