import { and, asc, count, eq, getTableColumns, lt, lte, type SQL, sql } from 'drizzle-orm';
import { type PageRequest, paginate, totalCount } from '../../db/queries.ts';
import { rowsOf } from '../../db/rows.ts';
import {
  type CodegraphStatus,
  codegraphEdges,
  codegraphProjects,
  codegraphSymbols,
  codegraphUploads,
  type IndexProgress,
  type IndexStats,
  type ProjectSource,
  type SymbolKind,
} from '../../db/schema/codegraph.ts';
import type { Db } from '../../db/transaction.ts';

export type { CodegraphStatus, IndexProgress, IndexStats, ProjectSource } from '../../db/schema/codegraph.ts';

export type ProjectRow = typeof codegraphProjects.$inferSelect;
/** A symbol row to write: every column given (the JSON insert takes no defaults). */
export type NewSymbol = Required<typeof codegraphSymbols.$inferInsert>;
export type NewEdge = Required<Omit<typeof codegraphEdges.$inferInsert, 'id'>>;

/**
 * Rows per INSERT. Rows travel as one JSON parameter unpacked by `jsonb_to_recordset`: a
 * generation is thousands of rows, and one parameter per batch instead of fifteen per row
 * cut the write of this repository's graph several times over (no statement of 15,000
 * parameters to build, send and bind). A thousand rows stay a statement of ~0.1-0.2 s on
 * PGlite, so requests waiting for its one connection are not kept past their deadline.
 */
const BATCH_ROWS = 1000;
/** Entries of a hit's callers and callees lists. */
export const NEIGHBOUR_LIMIT = 20;

/** How a hit matched the query, best first: the order results are ranked in. */
export type MatchKind = 'exact' | 'prefix' | 'fuzzy' | 'text';

export interface SearchQuery {
  q: string;
  limit: number;
  kind?: SymbolKind;
}

export interface SymbolRef {
  symbol_id: number | null;
  qualified_name: string | null;
  kind: SymbolKind | null;
  file: string;
  /** The line of the (first) call. */
  line: number;
  /** Calls between the two. */
  calls: number;
}

export interface SearchHit {
  id: number;
  kind: SymbolKind;
  name: string;
  qualified_name: string;
  file: string;
  language: string;
  start_line: number;
  end_line: number;
  signature: string;
  doc: string | null;
  match: MatchKind;
  score: number;
  caller_count: number;
  callers: SymbolRef[];
  callees: SymbolRef[];
  unresolved_callees: string[];
}

/** Data access for code graph projects and their graphs; scoped by workspace id. */
export function createCodegraphRepository(db: Db) {
  const byName = (workspaceId: string, name: string) =>
    and(eq(codegraphProjects.workspace_id, workspaceId), eq(codegraphProjects.name, name));

  return {
    async findProject(workspaceId: string, name: string): Promise<ProjectRow | undefined> {
      const [row] = await db.select().from(codegraphProjects).where(byName(workspaceId, name));
      return row;
    },

    async findProjectById(workspaceId: string, id: string): Promise<ProjectRow | undefined> {
      const [row] = await db
        .select()
        .from(codegraphProjects)
        .where(and(eq(codegraphProjects.workspace_id, workspaceId), eq(codegraphProjects.id, id)));
      return row;
    },

    /** By name, so a client finds its project where it left it. */
    async listProjects(workspaceId: string, page: PageRequest) {
      const rows = await db
        .select({ ...getTableColumns(codegraphProjects), total: totalCount() })
        .from(codegraphProjects)
        .where(eq(codegraphProjects.workspace_id, workspaceId))
        .orderBy(asc(codegraphProjects.name))
        .limit(page.limit)
        .offset(page.offset);
      return paginate(page, rows, async () => {
        const [result] = await db
          .select({ value: count() })
          .from(codegraphProjects)
          .where(eq(codegraphProjects.workspace_id, workspaceId));
        return result?.value ?? 0;
      });
    },

    /**
     * Creates the project if it is new and starts its next generation: `last_generation` grows
     * by one (the generation this index writes) and the status becomes `indexing`. The graph
     * searched (`active_generation`) is untouched until the new one is complete.
     */
    async beginIndex(
      workspaceId: string,
      name: string,
      source: ProjectSource,
      createdBy: string | null,
      filesTotal: number,
    ): Promise<ProjectRow> {
      const progress: IndexProgress = { phase: 'parsing', files_done: 0, files_total: filesTotal };
      const [row] = await db
        .insert(codegraphProjects)
        .values({
          workspace_id: workspaceId,
          name,
          status: 'indexing',
          last_generation: 1,
          source,
          progress,
          created_by: createdBy,
        })
        .onConflictDoUpdate({
          target: [codegraphProjects.workspace_id, codegraphProjects.name],
          set: {
            last_generation: sql`${codegraphProjects.last_generation} + 1`,
            status: 'indexing',
            source,
            progress,
            error: null,
            updated_at: sql`now()`,
          },
        })
        .returning();
      if (!row) throw new Error('project upsert returned nothing');
      return row;
    },

    /** Records how far the index of `generation` has come, unless a newer request replaced it. */
    async setProgress(
      workspaceId: string,
      projectId: string,
      generation: number,
      progress: IndexProgress,
    ): Promise<void> {
      await db
        .update(codegraphProjects)
        .set({ progress })
        .where(
          and(
            eq(codegraphProjects.workspace_id, workspaceId),
            eq(codegraphProjects.id, projectId),
            eq(codegraphProjects.last_generation, generation),
          ),
        );
    },

    /** `n` fresh symbol ids, so edges can name their symbols before any row is written. */
    async allocateSymbolIds(n: number): Promise<number[]> {
      if (n === 0) return [];
      const result = await db.execute<{ id: string | number }>(
        sql`select nextval(pg_get_serial_sequence('codegraph_symbols', 'id')) as id from generate_series(1, ${n})`,
      );
      return rowsOf<{ id: string | number }>(result).map((row) => Number(row.id));
    },

    async insertSymbols(rows: NewSymbol[]): Promise<void> {
      for (let start = 0; start < rows.length; start += BATCH_ROWS) {
        const batch = JSON.stringify(rows.slice(start, start + BATCH_ROWS));
        await db.execute(sql`
          insert into codegraph_symbols (id, project_id, workspace_id, generation, kind, name, qualified_name,
            file, language, start_line, end_line, signature, doc, parent_id, caller_count)
          select id, project_id, workspace_id, generation, kind, name, qualified_name,
            file, language, start_line, end_line, signature, doc, parent_id, caller_count
          from jsonb_to_recordset(${batch}::jsonb) as r(id bigint, project_id uuid, workspace_id uuid,
            generation integer, kind varchar, name text, qualified_name text, file text, language varchar,
            start_line integer, end_line integer, signature text, doc text, parent_id bigint, caller_count integer)`);
      }
    },

    async insertEdges(rows: NewEdge[]): Promise<void> {
      for (let start = 0; start < rows.length; start += BATCH_ROWS) {
        const batch = JSON.stringify(rows.slice(start, start + BATCH_ROWS));
        await db.execute(sql`
          insert into codegraph_edges (project_id, workspace_id, generation, kind, source_id, target_id,
            file, line, target_name, module, target_file, resolution, occurrences)
          select project_id, workspace_id, generation, kind, source_id, target_id,
            file, line, target_name, module, target_file, resolution, occurrences
          from jsonb_to_recordset(${batch}::jsonb) as r(project_id uuid, workspace_id uuid, generation integer,
            kind varchar, source_id bigint, target_id bigint, file text, line integer, target_name text,
            module text, target_file text, resolution varchar, occurrences integer)`);
      }
    },

    /**
     * Makes `generation` the graph searches read, with its figures, unless a newer one is
     * already active (a slower, older index finishing last never replaces a newer graph). The
     * status becomes `ready` when this was the latest request. True when it became active.
     */
    async activate(
      workspaceId: string,
      projectId: string,
      generation: number,
      stats: IndexStats,
    ): Promise<boolean> {
      const latest = sql`${codegraphProjects.last_generation} = ${generation}`;
      const rows = await db
        .update(codegraphProjects)
        .set({
          active_generation: generation,
          stats,
          indexed_at: sql`now()`,
          updated_at: sql`now()`,
          status: sql`case when ${latest} then 'ready' else ${codegraphProjects.status} end`,
          error: sql`case when ${latest} then null else ${codegraphProjects.error} end`,
          progress: sql`case when ${latest} then null else ${codegraphProjects.progress} end`,
        })
        .where(
          and(
            eq(codegraphProjects.workspace_id, workspaceId),
            eq(codegraphProjects.id, projectId),
            lt(codegraphProjects.active_generation, generation),
          ),
        )
        .returning({ id: codegraphProjects.id });
      return rows.length > 0;
    },

    /**
     * Records that the index of `generation` failed, if it is still the latest request (a
     * newer request's outcome is not overwritten). True when recorded.
     */
    async markFailed(
      workspaceId: string,
      projectId: string,
      generation: number,
      error: string,
    ): Promise<boolean> {
      const rows = await db
        .update(codegraphProjects)
        .set({ status: 'failed' satisfies CodegraphStatus, error, progress: null, updated_at: sql`now()` })
        .where(
          and(
            eq(codegraphProjects.workspace_id, workspaceId),
            eq(codegraphProjects.id, projectId),
            eq(codegraphProjects.last_generation, generation),
          ),
        )
        .returning({ id: codegraphProjects.id });
      return rows.length > 0;
    },

    /** Deletes the graph rows of the generations `which` selects (edges first, then symbols). */
    async removeGenerations(
      workspaceId: string,
      projectId: string,
      which: { below: number } | { only: number },
    ): Promise<void> {
      const pick = (
        generation: typeof codegraphSymbols.generation | typeof codegraphEdges.generation,
      ): SQL => ('below' in which ? lt(generation, which.below) : eq(generation, which.only));
      await db
        .delete(codegraphEdges)
        .where(
          and(
            eq(codegraphEdges.workspace_id, workspaceId),
            eq(codegraphEdges.project_id, projectId),
            pick(codegraphEdges.generation),
          ),
        );
      await db
        .delete(codegraphSymbols)
        .where(
          and(
            eq(codegraphSymbols.workspace_id, workspaceId),
            eq(codegraphSymbols.project_id, projectId),
            pick(codegraphSymbols.generation),
          ),
        );
    },

    async saveUpload(
      workspaceId: string,
      projectId: string,
      generation: number,
      archive: Buffer,
    ): Promise<void> {
      await db
        .insert(codegraphUploads)
        .values({ workspace_id: workspaceId, project_id: projectId, generation, archive });
    },

    async findUpload(
      workspaceId: string,
      projectId: string,
      generation: number,
    ): Promise<Buffer | undefined> {
      const [row] = await db
        .select({ archive: codegraphUploads.archive })
        .from(codegraphUploads)
        .where(
          and(
            eq(codegraphUploads.workspace_id, workspaceId),
            eq(codegraphUploads.project_id, projectId),
            eq(codegraphUploads.generation, generation),
          ),
        );
      return row?.archive;
    },

    /** Removes the uploads of `generation` and of every older one (superseded requests). */
    async removeUploads(workspaceId: string, projectId: string, generation: number): Promise<void> {
      await db
        .delete(codegraphUploads)
        .where(
          and(
            eq(codegraphUploads.workspace_id, workspaceId),
            eq(codegraphUploads.project_id, projectId),
            lte(codegraphUploads.generation, generation),
          ),
        );
    },

    /** Deletes the project and, by cascade, its graphs and uploads. False when there is none. */
    async deleteProject(workspaceId: string, name: string): Promise<boolean> {
      const rows = await db
        .delete(codegraphProjects)
        .where(byName(workspaceId, name))
        .returning({ id: codegraphProjects.id });
      return rows.length > 0;
    },

    /**
     * Every project of every workspace whose latest index has not finished: what a starting
     * worker hands to the queue again (the queue may have lost it). System work, not a request.
     */
    async unfinishedIndexes(): Promise<Array<{ id: string; workspace_id: string; generation: number }>> {
      return db
        .select({
          id: codegraphProjects.id,
          workspace_id: codegraphProjects.workspace_id,
          generation: codegraphProjects.last_generation,
        })
        .from(codegraphProjects)
        .where(eq(codegraphProjects.status, 'indexing'));
    },

    /** Ranked symbols of the project's active graph with their callers and callees (one statement). */
    async search(workspaceId: string, project: ProjectRow, query: SearchQuery): Promise<SearchHit[]> {
      const result = await db.execute(searchStatement(workspaceId, project, query));
      return rowsOf<SearchHit>(result).map((row) => ({
        ...row,
        id: Number(row.id),
        score: Number(row.score),
        callers: row.callers ?? [],
        callees: row.callees ?? [],
        unresolved_callees: row.unresolved_callees ?? [],
      }));
    },
  };
}

/**
 * The search as one statement, so the active generation, the hits and their callers and
 * callees come from one snapshot (a re-index committing in between cannot mix two graphs).
 *
 * Ranking, best first: the name is the query (case-sensitive, then not; a qualified name
 * `Class.method` counts), the name starts with it (shorter names first), the name is like it
 * (it contains the query, or pg_trgm similarity / word similarity), and last the query's
 * words all appear in the signature or doc comment. Ties go to the symbol with more callers.
 */
function searchStatement(workspaceId: string, project: ProjectRow, query: SearchQuery): SQL {
  const q = query.q.trim();
  const lowered = q.toLowerCase();
  const escaped = lowered.replace(/[\\%_]/g, '\\$&');
  const prefix = `${escaped}%`;
  const contains = `%${escaped}%`;
  const terms = lowered
    .split(/\s+/)
    .filter((term) => term !== '')
    .slice(0, 8)
    .map((term) => `%${term.replace(/[\\%_]/g, '\\$&')}%`);
  // Words are looked for where a reader would: the name, the signature, the doc comment (not the
  // qualified name, which would make every member of `createRunEngine` match "engine").
  const text = sql`lower(s.name || ' ' || s.signature || ' ' || coalesce(s.doc, ''))`;
  const allTerms =
    terms.length === 0
      ? sql`false`
      : sql.join(
          terms.map((term) => sql`${text} like ${term}`),
          sql` and `,
        );
  const kindFilter = query.kind ? sql`and s.kind = ${query.kind}` : sql``;
  return sql`
    with candidates as (
      select s.*,
        case
          when s.name = ${q} or s.qualified_name = ${q} then 0
          when lower(s.name) = ${lowered} or lower(s.qualified_name) = ${lowered} then 1
          when lower(s.name) like ${prefix} or lower(s.qualified_name) like ${prefix} then 2
          when lower(s.name) like ${contains} or s.name % ${q} or ${q} <% s.name then 3
          else 4
        end as tier,
        greatest(similarity(s.name, ${q}), word_similarity(${q}, s.name)) as likeness
      from codegraph_symbols s
      where s.project_id = ${project.id}
        and s.workspace_id = ${workspaceId}
        -- The active generation as this statement's snapshot sees it, not as an earlier read
        -- did: a re-index activating its graph and removing the old one in between would
        -- otherwise leave this search the old graph's half-removed rows.
        and s.generation = (select p.active_generation from codegraph_projects p
          where p.id = ${project.id} and p.workspace_id = ${workspaceId})
        ${kindFilter}
        and (
          lower(s.name) like ${prefix}
          or lower(s.qualified_name) like ${prefix}
          or lower(s.name) like ${contains}
          or s.name % ${q}
          or ${q} <% s.name
          or (${allTerms})
        )
    ),
    ranked as (
      select c.*,
        case c.tier
          when 0 then 1.0
          when 1 then 0.95
          when 2 then case
            when lower(c.name) like ${prefix} then 0.75 + 0.15 * length(${q}) / greatest(length(c.name), 1)
            else 0.7 + 0.05 * length(${q}) / greatest(length(c.qualified_name), 1)
          end
          when 3 then 0.4 + 0.3 * greatest(
            c.likeness,
            case when lower(c.name) like ${contains} then 0.5 + 0.5 * length(${q}) / greatest(length(c.name), 1) else 0 end
          )
          else 0.2
        end as score
      from candidates c
      order by tier, score desc, c.caller_count desc, c.qualified_name, c.file, c.start_line
      limit ${query.limit}
    )
    select r.id, r.kind, r.name, r.qualified_name, r.file, r.language, r.start_line, r.end_line,
      r.signature, r.doc, r.caller_count,
      (array['exact', 'exact', 'prefix', 'fuzzy', 'text'])[r.tier + 1] as match,
      round(r.score::numeric, 4) as score,
      (select json_agg(c) from (
        select e.source_id as symbol_id, src.qualified_name, src.kind, e.file,
          min(e.line) as line, sum(e.occurrences)::int as calls
        from codegraph_edges e
        left join codegraph_symbols src on src.id = e.source_id
        where e.target_id = r.id and e.kind = 'calls'
        group by e.source_id, src.qualified_name, src.kind, e.file
        order by src.qualified_name nulls last, e.file, min(e.line)
        limit ${NEIGHBOUR_LIMIT}
      ) c) as callers,
      (select json_agg(c) from (
        select e.target_id as symbol_id, t.qualified_name, t.kind, t.file,
          min(e.line) as line, sum(e.occurrences)::int as calls
        from codegraph_edges e
        join codegraph_symbols t on t.id = e.target_id
        where e.source_id = r.id and e.kind = 'calls'
        group by e.target_id, t.qualified_name, t.kind, t.file
        order by min(e.line)
        limit ${NEIGHBOUR_LIMIT}
      ) c) as callees,
      (select array_agg(u.target_name) from (
        select e.target_name, min(e.line) as line
        from codegraph_edges e
        where e.source_id = r.id and e.kind = 'calls' and e.target_id is null
        group by e.target_name
        order by min(e.line)
        limit ${NEIGHBOUR_LIMIT}
      ) u) as unresolved_callees
    from ranked r
    order by r.tier, r.score desc, r.caller_count desc, r.qualified_name, r.file, r.start_line
  `;
}
