import { and, asc, count, desc, eq, getTableColumns, gt, isNull, or, sql } from 'drizzle-orm';
import { type PageRequest, paginate, totalCount } from '../../db/queries.ts';
import { apiKeys, type Role, tenants, workspaceMembers, workspaces } from '../../db/schema/workspaces.ts';
import type { Db } from '../../db/transaction.ts';

/** The roles vocabulary, for the service (which imports no db/ file but transaction.ts). */
export type { Role } from '../../db/schema/workspaces.ts';

export type MemberRow = typeof workspaceMembers.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;

/** Data access for tenants, workspaces, members and API keys. */
export function createWorkspacesRepository(db: Db) {
  const memberKey = (workspaceId: string, userId: string) =>
    and(eq(workspaceMembers.workspace_id, workspaceId), eq(workspaceMembers.user_id, userId));

  return {
    /** The caller's role and tenant in one round trip; undefined when not a member. */
    async findMembership(workspaceId: string, userId: string) {
      const [row] = await db
        .select({ role: workspaceMembers.role, tenant_id: workspaces.tenant_id })
        .from(workspaceMembers)
        .innerJoin(workspaces, eq(workspaces.id, workspaceMembers.workspace_id))
        .where(and(eq(workspaceMembers.workspace_id, workspaceId), eq(workspaceMembers.user_id, userId)));
      return row;
    },

    async findWorkspace(workspaceId: string) {
      const [row] = await db
        .select({
          id: workspaces.id,
          name: workspaces.name,
          created_at: workspaces.created_at,
          tenant_id: tenants.id,
          tenant_name: tenants.name,
        })
        .from(workspaces)
        .innerJoin(tenants, eq(tenants.id, workspaces.tenant_id))
        .where(eq(workspaces.id, workspaceId));
      return row;
    },

    /** Every workspace the user belongs to, oldest first. */
    async listWorkspacesOfUser(userId: string) {
      return db
        .select({
          id: workspaces.id,
          name: workspaces.name,
          created_at: workspaces.created_at,
          tenant_id: tenants.id,
          tenant_name: tenants.name,
          role: workspaceMembers.role,
        })
        .from(workspaceMembers)
        .innerJoin(workspaces, eq(workspaces.id, workspaceMembers.workspace_id))
        .innerJoin(tenants, eq(tenants.id, workspaces.tenant_id))
        .where(eq(workspaceMembers.user_id, userId))
        .orderBy(asc(workspaces.created_at), asc(workspaces.id));
    },

    async insertTenant(name: string) {
      const [tenant] = await db.insert(tenants).values({ name }).returning();
      if (!tenant) throw new Error('tenant insert returned nothing');
      return tenant;
    },

    async insertWorkspace(tenantId: string, name: string) {
      const [workspace] = await db.insert(workspaces).values({ tenant_id: tenantId, name }).returning();
      if (!workspace) throw new Error('workspace insert returned nothing');
      return workspace;
    },

    /** Oldest member first. */
    async listMembers(workspaceId: string, page: PageRequest) {
      const where = eq(workspaceMembers.workspace_id, workspaceId);
      const rows = await db
        .select({ ...getTableColumns(workspaceMembers), total: totalCount() })
        .from(workspaceMembers)
        .where(where)
        .orderBy(asc(workspaceMembers.created_at), asc(workspaceMembers.user_id))
        .limit(page.limit)
        .offset(page.offset);
      return paginate(page, rows, async () => {
        const [result] = await db.select({ value: count() }).from(workspaceMembers).where(where);
        return result?.value ?? 0;
      });
    },

    /** One member; `lock` takes the row lock until the transaction ends. */
    async findMember(workspaceId: string, userId: string, lock = false) {
      const query = db.select().from(workspaceMembers).where(memberKey(workspaceId, userId));
      const [row] = lock ? await query.for('update') : await query;
      return row;
    },

    /** Inserts a member; undefined when the user already is one. */
    async insertMember(workspaceId: string, userId: string, role: Role) {
      const [row] = await db
        .insert(workspaceMembers)
        .values({ workspace_id: workspaceId, user_id: userId, role })
        .onConflictDoNothing()
        .returning();
      return row;
    },

    /** Locks the workspace's owners until the transaction ends and returns their ids. */
    async lockOwners(workspaceId: string): Promise<string[]> {
      const owners = await db
        .select({ user_id: workspaceMembers.user_id })
        .from(workspaceMembers)
        .where(and(eq(workspaceMembers.workspace_id, workspaceId), eq(workspaceMembers.role, 'owner')))
        .for('update');
      return owners.map((owner) => owner.user_id);
    },

    async updateMemberRole(workspaceId: string, userId: string, role: Role) {
      const [row] = await db
        .update(workspaceMembers)
        .set({ role, updated_at: sql`now()` })
        .where(memberKey(workspaceId, userId))
        .returning();
      return row;
    },

    async deleteMember(workspaceId: string, userId: string): Promise<void> {
      await db.delete(workspaceMembers).where(memberKey(workspaceId, userId));
    },

    async insertApiKey(values: typeof apiKeys.$inferInsert) {
      const [row] = await db.insert(apiKeys).values(values).returning();
      if (!row) throw new Error('api key insert returned nothing');
      return row;
    },

    /** Newest key first. */
    async listApiKeys(workspaceId: string, page: PageRequest) {
      const where = eq(apiKeys.workspace_id, workspaceId);
      const rows = await db
        .select({ ...getTableColumns(apiKeys), total: totalCount() })
        .from(apiKeys)
        .where(where)
        .orderBy(desc(apiKeys.created_at), desc(apiKeys.id))
        .limit(page.limit)
        .offset(page.offset);
      return paginate(page, rows, async () => {
        const [result] = await db.select({ value: count() }).from(apiKeys).where(where);
        return result?.value ?? 0;
      });
    },

    async findApiKeyByHash(keyHash: string) {
      const [row] = await db.select().from(apiKeys).where(eq(apiKeys.key_hash, keyHash));
      return row;
    },

    async touchApiKey(id: string) {
      await db.update(apiKeys).set({ last_used_at: sql`now()` }).where(eq(apiKeys.id, id));
    },

    /** One of the workspace's keys, locked until the transaction ends (a revocation reads it first). */
    async findApiKey(workspaceId: string, id: string) {
      const [row] = await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.workspace_id, workspaceId), eq(apiKeys.id, id)))
        .for('update');
      return row;
    },

    /** True while the workspace's key is neither revoked nor expired (read now, never cached). */
    async isApiKeyActive(workspaceId: string, id: string): Promise<boolean> {
      const [row] = await db
        .select({ id: apiKeys.id })
        .from(apiKeys)
        .where(
          and(
            eq(apiKeys.workspace_id, workspaceId),
            eq(apiKeys.id, id),
            isNull(apiKeys.revoked_at),
            or(isNull(apiKeys.expires_at), gt(apiKeys.expires_at, sql`now()`)),
          ),
        );
      return row !== undefined;
    },

    /** Marks a key revoked; undefined when it is not this workspace's key. */
    async revokeApiKey(workspaceId: string, id: string) {
      const [row] = await db
        .update(apiKeys)
        .set({ revoked_at: sql`coalesce(${apiKeys.revoked_at}, now())` })
        .where(and(eq(apiKeys.workspace_id, workspaceId), eq(apiKeys.id, id)))
        .returning();
      return row;
    },
  };
}

export type WorkspacesRepository = ReturnType<typeof createWorkspacesRepository>;
