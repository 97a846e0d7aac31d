/** Workspace roles, most powerful first. */
export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** True when `role` is at least `needed`. */
export const hasRole = (role: Role, needed: Role): boolean => RANK[role] >= RANK[needed];
