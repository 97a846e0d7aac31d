import { and, asc, desc, eq, inArray, type SQL, sql } from 'drizzle-orm';
import { type CursorPage, jsonValue, pageByCursor } from '../../db/queries.ts';
import { type ActivityKind, type ActivitySubjectType, activityEvents } from '../../db/schema/activity.ts';
import type { Db } from '../../db/transaction.ts';

export type { ActivityKind, ActivitySubjectType } from '../../db/schema/activity.ts';
export { ACTIVITY_KINDS } from '../../db/schema/activity.ts';

export type NewActivityEvent = Omit<typeof activityEvents.$inferInsert, 'id' | 'created_at'>;

/** What the feed shows of an event: everything but the workspace, which the caller already has. */
const itemColumns = {
  id: activityEvents.id,
  kind: activityEvents.kind,
  subject_type: activityEvents.subject_type,
  subject_id: activityEvents.subject_id,
  message: activityEvents.message,
  data: activityEvents.data,
  actor: activityEvents.actor,
  created_at: activityEvents.created_at,
};

/** An event as the feed shows it: the columns of `itemColumns`. */
export type ActivityItem = Omit<typeof activityEvents.$inferSelect, 'workspace_id' | 'tx'>;

/**
 * The oldest transaction of this database still open at the statement's snapshot (as a bigint
 * `xid8`), or the next transaction id when none is: every transaction below it has committed
 * or rolled back, so no feed row ordered before `(horizon, 0)` can appear any more. The
 * snapshot's in-progress list covers the whole cluster, so transactions that
 * `pg_stat_activity` shows in another database are left out (their xids, 32-bit there, are
 * compared on the low 32 bits); one that ended since the snapshot is not shown anywhere and
 * is kept, which can only delay a row, never lose one.
 */
const openHorizon = sql`(
  select coalesce(min(open.xid), pg_snapshot_xmax(pg_current_snapshot())::text::bigint)
  from (select xip::text::bigint as xid from pg_snapshot_xip(pg_current_snapshot()) as xip) as open
  where (open.xid & 4294967295) not in (
    select elsewhere.backend_xid::text::bigint from pg_stat_activity as elsewhere
    where elsewhere.backend_xid is not null
      and elsewhere.datid <> (select oid from pg_database where datname = current_database())
  )
)`;

/**
 * An entry written by a statement that also makes the change it records (see
 * `insertForSource`): `data` may be SQL over that statement's source row, and `when` a
 * condition on it.
 */
export interface ActivityStatementEntry {
  kind: ActivityKind;
  subjectType: ActivitySubjectType;
  subjectId?: string;
  /** The text, or SQL over the source row (`'Workflow “' || run.workflow_name || '” started'`). */
  message: string | SQL;
  data?: Record<string, unknown> | SQL;
  actor?: string;
  /** Written only when this holds for the source row (always when absent). */
  when?: SQL;
}

/**
 * The body of a CTE inserting `entries`, in order, for the workspace of the row of `source`
 * (another CTE of the same statement, named as given): nothing when it has no row. Returns
 * the ids; the statement announces the greatest after it commits.
 */
export function insertForSource(source: string, entries: ActivityStatementEntry[]): SQL {
  const from = sql.raw(`"${source}"`);
  const rows = entries.map(
    (entry, n) => sql`(${n}::int, ${entry.kind}::varchar, ${entry.subjectType}::varchar,
      ${entry.subjectId ?? null}::varchar, (${entry.message})::text, ${jsonValue(entry.data ?? {})},
      ${entry.actor ?? null}::varchar, ${entry.when ?? sql`true`})`,
  );
  return sql`insert into ${activityEvents} (workspace_id, kind, subject_type, subject_id, message, data, actor)
    select ${from}.workspace_id, v.kind, v.subject_type, v.subject_id, v.message, v.data, v.actor
      from ${from} cross join lateral (values ${sql.join(rows, sql`, `)})
        as v(n, kind, subject_type, subject_id, message, data, actor, ok)
     where v.ok order by v.n
    returning id`;
}

/** Which events a reader wants; every field is optional. */
export interface ActivityFilter {
  /** Any of these kinds. */
  kind?: ActivityKind[];
  subject_type?: string;
  subject_id?: string;
}

/** Data access for the activity feed; every method is scoped by workspace id. */
export function createActivityRepository(db: Db) {
  const matching = (workspaceId: string, filter: ActivityFilter, ...more: (SQL | undefined)[]) =>
    and(
      eq(activityEvents.workspace_id, workspaceId),
      filter.kind?.length ? inArray(activityEvents.kind, filter.kind) : undefined,
      filter.subject_type !== undefined ? eq(activityEvents.subject_type, filter.subject_type) : undefined,
      filter.subject_id !== undefined ? eq(activityEvents.subject_id, filter.subject_id) : undefined,
      ...more,
    );

  return {
    /** Inserts the events in order with one statement; their ids, increasing. */
    async insertMany(values: NewActivityEvent[]): Promise<number[]> {
      const rows = await db.insert(activityEvents).values(values).returning({ id: activityEvents.id });
      return rows.map((row) => row.id).sort((a, b) => a - b);
    },

    /** Newest first, keyset-paginated: `before` is the previous page's `next_cursor`. */
    page(
      workspaceId: string,
      filter: ActivityFilter,
      request: { before?: number; limit: number },
    ): Promise<CursorPage<ActivityItem>> {
      return pageByCursor(
        { after: request.before, limit: request.limit, order: 'newest_first' },
        activityEvents.id,
        ({ where, orderBy, limit }) =>
          db
            .select(itemColumns)
            .from(activityEvents)
            .where(matching(workspaceId, filter, where))
            .orderBy(orderBy)
            .limit(limit),
      );
    },

    /**
     * The events after the event `after`, in commit order `(tx, id)`: what a live reader has
     * not delivered yet. Rows whose order is final (their transaction is older than every
     * open one) come first and are delivered; `pending` says committed rows follow them that
     * an open transaction could still precede. An `after` that is not an event of this
     * workspace resumes after the workspace's latest event below it; 0 is the beginning.
     */
    async listAfter(
      workspaceId: string,
      filter: ActivityFilter,
      after: number,
      limit: number,
    ): Promise<{ rows: ActivityItem[]; pending: boolean }> {
      const afterTx = sql`coalesce((select a.tx from activity_events a where a.workspace_id = ${workspaceId} and a.id <= ${after} order by a.id desc limit 1), 0)`;
      const found = await db
        .select({ ...itemColumns, final: sql<boolean>`${activityEvents.tx} < ${openHorizon}` })
        .from(activityEvents)
        .where(
          matching(
            workspaceId,
            filter,
            sql`(${activityEvents.tx}, ${activityEvents.id}) > (${afterTx}, ${after})`,
          ),
        )
        .orderBy(asc(activityEvents.tx), asc(activityEvents.id))
        .limit(limit);
      const deliverable = found.findIndex((row) => !row.final);
      const rows = (deliverable === -1 ? found : found.slice(0, deliverable)).map(
        ({ final: _, ...row }) => row,
      );
      return { rows, pending: deliverable !== -1 };
    },

    /** The workspace's latest event whose commit order is final (0 when none): a live follow starts after it. */
    async latestId(workspaceId: string): Promise<number> {
      const [row] = await db
        .select({ id: activityEvents.id })
        .from(activityEvents)
        .where(and(eq(activityEvents.workspace_id, workspaceId), sql`${activityEvents.tx} < ${openHorizon}`))
        .orderBy(desc(activityEvents.tx), desc(activityEvents.id))
        .limit(1);
      return row?.id ?? 0;
    },
  };
}

export type ActivityRepository = ReturnType<typeof createActivityRepository>;
