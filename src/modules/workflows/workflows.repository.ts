import { and, count, desc, eq, getTableColumns, ilike, ne, or, type SQL, sql } from 'drizzle-orm';
import { likePattern, PreparedVariants, paginate, totalCount, variantKey } from '../../db/queries.ts';
import { type WorkflowStatus, workflows } from '../../db/schema/workflows.ts';
import type { Db } from '../../db/transaction.ts';

export type WorkflowRow = typeof workflows.$inferSelect;
export type NewWorkflow = Omit<typeof workflows.$inferInsert, 'id' | 'created_at' | 'updated_at'>;
export type WorkflowChanges = Partial<Omit<NewWorkflow, 'workspace_id' | 'created_by'>>;

export interface WorkflowFilter {
  q?: string;
  status?: WorkflowStatus;
  tag?: string;
  is_template?: boolean;
  limit: number;
  offset: number;
}

/** Data access for workflows; every method is scoped by workspace id. */
export function createWorkflowsRepository(db: Db) {
  const byId = (workspaceId: string, id: string) =>
    and(eq(workflows.workspace_id, workspaceId), eq(workflows.id, id));

  // One prepared statement per combination of filters (see the agents repository).
  const keyOf = (filter: WorkflowFilter) =>
    variantKey('workflows', filter.q, filter.status, filter.tag, filter.is_template);
  const listStatements = new PreparedVariants((filter: WorkflowFilter) => {
    const p = (name: string) => sql.placeholder(name);
    const where = and(
      eq(workflows.workspace_id, p('workspaceId')),
      filter.q
        ? or(ilike(workflows.name, p('pattern')), ilike(workflows.description, p('pattern')))
        : undefined,
      filter.status ? eq(workflows.status, p('status')) : undefined,
      filter.tag ? sql`${workflows.tags} @> ARRAY[${p('tag')}]::text[]` : undefined,
      filter.is_template !== undefined ? eq(workflows.is_template, p('isTemplate')) : undefined,
    );
    return {
      page: db
        .select({ ...getTableColumns(workflows), total: totalCount() })
        .from(workflows)
        .where(where)
        .orderBy(desc(workflows.created_at), desc(workflows.id))
        .limit(p('limit'))
        .offset(p('offset'))
        .prepare(`${keyOf(filter)}_page`),
      count: db
        .select({ value: count() })
        .from(workflows)
        .where(where)
        .prepare(`${keyOf(filter)}_count`),
    };
  }, keyOf);

  return {
    async insert(values: NewWorkflow): Promise<WorkflowRow> {
      const [row] = await db.insert(workflows).values(values).returning();
      if (!row) throw new Error('workflow insert returned nothing');
      return row;
    },

    async find(workspaceId: string, id: string): Promise<WorkflowRow | undefined> {
      const [row] = await db.select().from(workflows).where(byId(workspaceId, id));
      return row;
    },

    /** Newest first, then by id, so pages are stable while rows are added. */
    async list(workspaceId: string, filter: WorkflowFilter) {
      const params = {
        workspaceId,
        pattern: filter.q ? likePattern(filter.q) : '',
        status: filter.status ?? '',
        tag: filter.tag ?? '',
        isTemplate: filter.is_template ?? false,
        limit: filter.limit,
        offset: filter.offset,
      };
      const { page, count } = listStatements.get(filter);
      return paginate(filter, await page.execute(params), async () => {
        const [result] = await count.execute(params);
        return result?.value ?? 0;
      });
    },

    /** The current row, locked for update until the transaction ends. */
    async findForUpdate(workspaceId: string, id: string): Promise<WorkflowRow | undefined> {
      const [row] = await db.select().from(workflows).where(byId(workspaceId, id)).for('update');
      return row;
    },

    async update(
      workspaceId: string,
      id: string,
      changes: WorkflowChanges,
    ): Promise<WorkflowRow | undefined> {
      const [row] = await db
        .update(workflows)
        .set({ ...changes, updated_at: sql`now()` })
        .where(byId(workspaceId, id))
        .returning();
      return row;
    },

    /** Takes an agent out of every workflow of the workspace that lists it. */
    /** Sets the status only when it differs, so an unchanged status takes no row lock. */
    /**
     * `setStatus` for the workflow of the `run` CTE of a run's statement (the runs module's
     * `WriteRun`): nothing when that has no row or when `when` (over `run`) is false, nothing
     * when unchanged.
     */
    statusFromRun: (status: WorkflowStatus, when: SQL = sql`true`): SQL =>
      db
        .update(workflows)
        .set({ status })
        .where(
          and(
            sql`(${workflows.id}, ${workflows.workspace_id}) = (select workflow_id, workspace_id from run where ${when})`,
            ne(workflows.status, status),
          ),
        )
        .getSQL(),

    async setStatus(workspaceId: string, id: string, status: WorkflowStatus): Promise<void> {
      await db
        .update(workflows)
        .set({ status })
        .where(and(byId(workspaceId, id), ne(workflows.status, status)));
    },

    async removeAgent(workspaceId: string, agentId: string): Promise<void> {
      await db
        .update(workflows)
        .set({ agents: sql`array_remove(${workflows.agents}, ${agentId}::uuid)`, updated_at: sql`now()` })
        .where(
          and(eq(workflows.workspace_id, workspaceId), sql`${workflows.agents} @> ARRAY[${agentId}]::uuid[]`),
        );
    },

    async delete(workspaceId: string, id: string): Promise<boolean> {
      const deleted = await db.delete(workflows).where(byId(workspaceId, id)).returning({ id: workflows.id });
      return deleted.length > 0;
    },
  };
}

export type WorkflowsRepository = ReturnType<typeof createWorkflowsRepository>;
