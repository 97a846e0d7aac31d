import { and, asc, count, eq, gt, gte, inArray, lt, max, min, sql } from 'drizzle-orm';
import { auditChainHeads, auditRecords } from '../../db/schema/audit.ts';
import type { Db } from '../../db/transaction.ts';

/** A stored record of the workspace trail. */
export type AuditRow = typeof auditRecords.$inferSelect;

/** What an append stores; the id is the database's. */
export type NewAuditRow = Omit<typeof auditRecords.$inferInsert, 'id'>;

/** A time range and action filter; `after` is the last (time, id) already read. */
export interface AuditRangeQuery {
  from?: Date;
  to?: Date;
  actions?: string[];
  after?: { created_at: Date; id: number };
  limit: number;
}

/** Data access for the workspace audit trail and the heads of its chains. */
export function createAuditRepository(db: Db) {
  return {
    /**
     * Takes the workspace's chain head (its row lock, held until the transaction ends) and
     * answers the newest hash ('' for an empty chain). An upsert, so the first writer creates
     * the row and every later writer queues on it; the value read is the latest committed one.
     */
    async lockHead(workspaceId: string): Promise<string> {
      const [row] = await db
        .insert(auditChainHeads)
        .values({ workspace_id: workspaceId, hash: '' })
        .onConflictDoUpdate({
          target: auditChainHeads.workspace_id,
          set: { workspace_id: sql`excluded.workspace_id` },
        })
        .returning({ hash: auditChainHeads.hash });
      return row?.hash ?? '';
    },

    /** The workspace's chain head, if it ever recorded anything. */
    async head(workspaceId: string) {
      const [row] = await db
        .select()
        .from(auditChainHeads)
        .where(eq(auditChainHeads.workspace_id, workspaceId));
      return row;
    },

    /** Appends a record and moves the head to it; call it while holding the head's lock. */
    async append(record: NewAuditRow): Promise<AuditRow> {
      const [row] = await db.insert(auditRecords).values(record).returning();
      const inserted = row as AuditRow;
      await db
        .update(auditChainHeads)
        .set({ hash: inserted.hash, last_id: inserted.id })
        .where(eq(auditChainHeads.workspace_id, record.workspace_id));
      return inserted;
    },

    /** The next records of the chain after `afterId`, in chain (id) order. */
    chainBatch(workspaceId: string, afterId: number, limit: number): Promise<AuditRow[]> {
      return db
        .select()
        .from(auditRecords)
        .where(and(eq(auditRecords.workspace_id, workspaceId), gt(auditRecords.id, afterId)))
        .orderBy(asc(auditRecords.id))
        .limit(limit);
    },

    /** The next records in a time range, by (time, id), after the last one read. */
    rangeBatch(workspaceId: string, query: AuditRangeQuery): Promise<AuditRow[]> {
      const { after } = query;
      return db
        .select()
        .from(auditRecords)
        .where(
          and(
            eq(auditRecords.workspace_id, workspaceId),
            query.from ? gte(auditRecords.created_at, query.from) : undefined,
            query.to ? lt(auditRecords.created_at, query.to) : undefined,
            query.actions ? inArray(auditRecords.action, query.actions) : undefined,
            // A row comparison, which the (workspace_id, created_at, id) index serves as a range.
            after
              ? sql`(${auditRecords.created_at}, ${auditRecords.id}) > (${after.created_at.toISOString()}::timestamptz, ${after.id})`
              : undefined,
          ),
        )
        .orderBy(asc(auditRecords.created_at), asc(auditRecords.id))
        .limit(query.limit);
    },

    /** Record counts by action, with the oldest and newest time of each. */
    summary(workspaceId: string) {
      return db
        .select({
          action: auditRecords.action,
          count: count(),
          oldest: min(auditRecords.created_at),
          newest: max(auditRecords.created_at),
        })
        .from(auditRecords)
        .where(eq(auditRecords.workspace_id, workspaceId))
        .groupBy(auditRecords.action)
        .orderBy(asc(auditRecords.action));
    },
  };
}

export type AuditRepository = ReturnType<typeof createAuditRepository>;
