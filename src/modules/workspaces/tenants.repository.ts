import { and, asc, eq, exists, inArray, or, type SQL, sql } from 'drizzle-orm';
import { type PageRequest, paginate, totalCount } from '../../db/queries.ts';
import { tenants, workspaceMembers, workspaces } from '../../db/schema/workspaces.ts';
import type { Db } from '../../db/transaction.ts';

export type TenantRow = typeof tenants.$inferSelect;

/** What a create or an update sets (the repository stamps `updated_at`). */
export type TenantWrite = Partial<Pick<TenantRow, 'name' | 'time_zone' | 'default_model'>>;

/**
 * The outer query's tenant id, spelled out: drizzle writes a column of a select list without
 * its table, which inside a subquery would name the subquery's own `id`.
 */
const TENANT_ID = sql.raw('"tenants"."id"');

/** `userId` owns at least one workspace of the tenant (a correlated subquery on `tenants`). */
const OWNER_OF_A_WORKSPACE = (userId: string) =>
  exists(
    sql`(select 1 from ${workspaces} w join ${workspaceMembers} m on m.workspace_id = w.id
      where w.tenant_id = ${TENANT_ID} and m.user_id = ${userId} and m.role = 'owner')`,
  );

/** The tenant has no workspace (a correlated subquery on `tenants`). */
const WITHOUT_WORKSPACES = sql`not exists (select 1 from ${workspaces} w where w.tenant_id = ${TENANT_ID})`;

/**
 * `userId` administers the tenant by current roles only: an owner of one of its workspaces, or
 * its creator while it has no workspace at all (nobody else's work is in it). A creator removed
 * from every workspace, or no longer an owner, administers nothing of it.
 */
const ADMINISTERS = (userId: string): SQL =>
  or(OWNER_OF_A_WORKSPACE(userId), and(eq(tenants.created_by, userId), WITHOUT_WORKSPACES)) as SQL;

/** Data access for tenants as their administrators see them (the settings API). */
export function createTenantsRepository(db: Db) {
  /** The tenants `userId` administers (see `ADMINISTERS`); all when `everyone`. */
  const administeredBy = (userId: string, everyone: boolean): SQL | undefined =>
    everyone ? undefined : ADMINISTERS(userId);

  return {
    /** A page of the tenants `userId` administers, oldest first. */
    async listAdministered(userId: string, everyone: boolean, page: PageRequest) {
      const where = administeredBy(userId, everyone);
      const rows = await db
        .select({ ...tenantColumns, total: totalCount() })
        .from(tenants)
        .where(where)
        .orderBy(asc(tenants.created_at), asc(tenants.id))
        .limit(page.limit)
        .offset(page.offset);
      return paginate(page, rows, async () => {
        const [row] = await db
          .select({ n: sql<number>`count(*)`.mapWith(Number) })
          .from(tenants)
          .where(where);
        return row?.n ?? 0;
      });
    },

    /**
     * One tenant with how `userId` relates to it now: `administers` (see `ADMINISTERS`) and
     * `member` (in any of its workspaces, whatever the role). `lock` holds the row until the
     * transaction ends.
     */
    async findForUser(id: string, userId: string, lock = false) {
      const query = db
        .select({
          ...tenantColumns,
          administers: sql<boolean>`(${ADMINISTERS(userId)})`,
          member: sql<boolean>`exists (select 1 from ${workspaces} w join ${workspaceMembers} m
            on m.workspace_id = w.id where w.tenant_id = ${TENANT_ID} and m.user_id = ${userId})`,
        })
        .from(tenants)
        .where(eq(tenants.id, id));
      const [row] = lock ? await query.for('update', { of: tenants }) : await query;
      return row;
    },

    /** The workspaces of these tenants, oldest first. */
    workspacesOf(tenantIds: string[]) {
      if (tenantIds.length === 0) return Promise.resolve([]);
      return db
        .select({
          id: workspaces.id,
          tenant_id: workspaces.tenant_id,
          name: workspaces.name,
          created_at: workspaces.created_at,
        })
        .from(workspaces)
        .where(inArray(workspaces.tenant_id, tenantIds))
        .orderBy(asc(workspaces.created_at), asc(workspaces.id));
    },

    async insert(values: TenantWrite & { name: string; created_by: string }): Promise<TenantRow> {
      const [row] = await db.insert(tenants).values(values).returning();
      if (!row) throw new Error('tenant insert returned nothing');
      return row;
    },

    /** A workspace of the tenant, owned by `ownerId`. */
    async insertWorkspace(tenantId: string, name: string, ownerId: string) {
      const [workspace] = await db.insert(workspaces).values({ tenant_id: tenantId, name }).returning();
      if (!workspace) throw new Error('workspace insert returned nothing');
      await db
        .insert(workspaceMembers)
        .values({ workspace_id: workspace.id, user_id: ownerId, role: 'owner' });
      return workspace;
    },

    async update(id: string, values: TenantWrite): Promise<TenantRow | undefined> {
      const [row] = await db
        .update(tenants)
        .set({ ...values, updated_at: sql`now()` })
        .where(eq(tenants.id, id))
        .returning();
      return row;
    },

    /** Deletes the tenant; its workspaces and everything in them go with it (foreign keys cascade). */
    async delete(id: string): Promise<boolean> {
      const rows = await db.delete(tenants).where(eq(tenants.id, id)).returning({ id: tenants.id });
      return rows.length === 1;
    },
  };
}

const tenantColumns = {
  id: tenants.id,
  name: tenants.name,
  created_by: tenants.created_by,
  time_zone: tenants.time_zone,
  default_model: tenants.default_model,
  created_at: tenants.created_at,
  updated_at: tenants.updated_at,
};

export type TenantsRepository = ReturnType<typeof createTenantsRepository>;
