import { and, desc, eq, getTableColumns, ilike, inArray, ne, or, type SQL, sql } from 'drizzle-orm';
import {
  decodeRow,
  likePattern,
  type PageJson,
  PreparedVariants,
  selectJsonPage,
  variantKey,
} from '../../db/queries.ts';
import { type AgentStatus, agents } from '../../db/schema/agents.ts';
import type { Db } from '../../db/transaction.ts';

export type AgentRow = typeof agents.$inferSelect;
export type NewAgent = Omit<typeof agents.$inferInsert, 'id' | 'created_at' | 'updated_at'>;
export type AgentChanges = Partial<Omit<NewAgent, 'workspace_id' | 'created_by'>>;

/** Filters of the agent list; every one is optional. */
export interface AgentFilter {
  q?: string;
  status?: AgentStatus;
  tag?: string;
  limit: number;
  offset: number;
}

/** Data access for agents; every method is scoped by workspace id. */
/** The rows of `ofRunQuery`'s JSON array, as a query would have mapped them. */
export const agentsFromJson = (rows: unknown): AgentRow[] =>
  (rows as Record<string, unknown>[]).map((row) => decodeRow(agents, row));

export function createAgentsRepository(db: Db) {
  const byId = (workspaceId: string, id: string) =>
    and(eq(agents.workspace_id, workspaceId), eq(agents.id, id));

  // The list is the hottest query: one prepared statement per combination of filters
  // saves building the SQL and PostgreSQL planning it on every request, and PostgreSQL
  // writes the page's JSON itself (`selectJsonPage`).
  const keyOf = (filter: AgentFilter) => variantKey('agents', filter.q, filter.status, filter.tag);
  const listStatements = new PreparedVariants((filter: AgentFilter) => {
    const p = (name: string) => sql.placeholder(name);
    return selectJsonPage(db, {
      from: agents,
      fields: getTableColumns(agents),
      where: and(
        eq(agents.workspace_id, p('workspaceId')),
        filter.q ? or(ilike(agents.name, p('pattern')), ilike(agents.description, p('pattern'))) : undefined,
        filter.status ? eq(agents.status, p('status')) : undefined,
        filter.tag ? sql`${agents.tags} @> ARRAY[${p('tag')}]::text[]` : undefined,
      ),
      orderBy: [desc(agents.created_at), desc(agents.id)],
      limit: p('limit'),
      offset: p('offset'),
    }).prepare(`${keyOf(filter)}_page`);
  }, keyOf);

  return {
    async insert(values: NewAgent): Promise<AgentRow> {
      const [row] = await db.insert(agents).values(values).returning();
      if (!row) throw new Error('agent insert returned nothing');
      return row;
    },

    /** One agent; `lock` takes its row lock until the transaction ends (read, compare, write). */
    async find(workspaceId: string, id: string, lock = false): Promise<AgentRow | undefined> {
      const query = db.select().from(agents).where(byId(workspaceId, id));
      const [row] = lock ? await query.for('update') : await query;
      return row;
    },

    /**
     * The agents of the run of a statement's `run` CTE (the runs module's `WriteRun`), as one
     * JSON array of rows: a scalar subquery for the statement's select, so a run's claim reads
     * them without a statement of its own (`agentsFromJson` reads the answer).
     */
    ofRunQuery: (): SQL =>
      sql`(select coalesce(json_agg(${agents}), '[]'::json) from ${agents}
        where ${agents.workspace_id} = run.workspace_id and ${agents.id} = any(run.agent_ids))`,

    /**
     * Newest first, then by id, so pages are stable while rows are added. Answers the
     * page as JSON text (`{items, total, limit, offset}`) for the route to send as it is.
     */
    async list(workspaceId: string, filter: AgentFilter): Promise<PageJson> {
      const [result] = await listStatements.get(filter).execute({
        workspaceId,
        pattern: filter.q ? likePattern(filter.q) : '',
        status: filter.status ?? '',
        tag: filter.tag ?? '',
        limit: filter.limit,
        offset: filter.offset,
      });
      if (!result) throw new Error('the agents page query returned no row');
      return result.body;
    },

    async update(workspaceId: string, id: string, changes: AgentChanges): Promise<AgentRow | undefined> {
      const [row] = await db
        .update(agents)
        .set({ ...changes, updated_at: sql`now()` })
        .where(byId(workspaceId, id))
        .returning();
      return row;
    },

    /** Sets the runtime status only when it differs, so an unchanged status takes no row lock. */
    /**
     * Sets the agent's shown status as a part of a run's statement (see the runs module's
     * `WriteRun`): in the workspace of its `run` CTE, nothing when that has no row, nothing
     * when unchanged.
     */
    statusFromRun: (id: string, status: AgentRow['status']): SQL =>
      db
        .update(agents)
        .set({ status })
        .where(
          and(
            eq(agents.id, id),
            sql`${agents.workspace_id} = (select workspace_id from run)`,
            ne(agents.status, status),
          ),
        )
        .getSQL(),

    /** Deletes the agent; false when the workspace has no such agent. Takes the row lock. */
    async delete(workspaceId: string, id: string): Promise<boolean> {
      const deleted = await db.delete(agents).where(byId(workspaceId, id)).returning({ id: agents.id });
      return deleted.length > 0;
    },

    /**
     * Share-locks the agents of the workspace among `ids` until the transaction ends and
     * returns the ids it found, so none of them can be deleted before the caller commits.
     */
    async lockShared(workspaceId: string, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const found = await db
        .select({ id: agents.id })
        .from(agents)
        .where(and(eq(agents.workspace_id, workspaceId), inArray(agents.id, [...new Set(ids)])))
        .for('share');
      return new Set(found.map((row) => row.id));
    },
  };
}

export type AgentsRepository = ReturnType<typeof createAgentsRepository>;
