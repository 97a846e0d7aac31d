import { and, asc, eq, gt, inArray, max, type SQL } from 'drizzle-orm';
import { type CursorPage, pageByCursor } from '../../db/queries.ts';
import { type ActivityKind, activityEvents } from '../../db/schema/activity.ts';
import type { Db } from '../../db/transaction.ts';

export type { ActivityKind } from '../../db/schema/activity.ts';
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

export type ActivityItem = {
  id: number;
  kind: ActivityKind;
  subject_type: string;
  subject_id: string | null;
  message: string;
  data: Record<string, unknown>;
  actor: string | null;
  created_at: Date;
};

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
    async insert(values: NewActivityEvent): Promise<ActivityItem> {
      const [row] = await db.insert(activityEvents).values(values).returning(itemColumns);
      if (!row) throw new Error('activity insert returned nothing');
      return row;
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

    /** The events after `after`, oldest first: what a live reader has not delivered yet. */
    listAfter(
      workspaceId: string,
      filter: ActivityFilter,
      after: number,
      limit: number,
    ): Promise<ActivityItem[]> {
      return db
        .select(itemColumns)
        .from(activityEvents)
        .where(matching(workspaceId, filter, gt(activityEvents.id, after)))
        .orderBy(asc(activityEvents.id))
        .limit(limit);
    },

    /** The workspace's newest event id, 0 when it has none. */
    async latestId(workspaceId: string): Promise<number> {
      const [row] = await db
        .select({ id: max(activityEvents.id) })
        .from(activityEvents)
        .where(eq(activityEvents.workspace_id, workspaceId));
      return Number(row?.id ?? 0);
    },
  };
}

export type ActivityRepository = ReturnType<typeof createActivityRepository>;
