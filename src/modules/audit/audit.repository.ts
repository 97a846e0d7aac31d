import { and, asc, count, eq, gt, gte, inArray, isNull, lt, max, min, sql } from 'drizzle-orm';
import { type AuditRecord, auditChainHeads, auditPlatformHead, auditRecords } from '../../db/schema/audit.ts';
import type { Db } from '../../db/transaction.ts';

export type { AuditRecord } from '../../db/schema/audit.ts';

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

/** Which trail: a workspace's (its id), or the platform's (null). */
export type Trail = string | null;

/** The records of one trail. */
const trailIs = (trail: Trail) =>
  trail === null ? isNull(auditRecords.workspace_id) : eq(auditRecords.workspace_id, trail);

/** Data access for the audit trails (each workspace's and the platform's) and their chain heads. */
export function createAuditRepository(db: Db) {
  return {
    /**
     * Takes the workspace's chain head (its row lock, held until the transaction ends) and
     * answers the newest hash ('' for an empty chain). An upsert, so the first writer creates
     * the row and every later writer queues on it; the value read is the latest committed one.
     */
    async lockHead(trail: Trail): Promise<string> {
      if (trail === null) {
        const [row] = await db
          .insert(auditPlatformHead)
          .values({ id: 1, hash: '' })
          .onConflictDoUpdate({ target: auditPlatformHead.id, set: { id: sql`excluded.id` } })
          .returning({ hash: auditPlatformHead.hash });
        return row?.hash ?? '';
      }
      const [row] = await db
        .insert(auditChainHeads)
        .values({ workspace_id: trail, hash: '' })
        .onConflictDoUpdate({
          target: auditChainHeads.workspace_id,
          set: { workspace_id: sql`excluded.workspace_id` },
        })
        .returning({ hash: auditChainHeads.hash });
      return row?.hash ?? '';
    },

    /** The trail's chain head, if it ever recorded anything. */
    async head(trail: Trail): Promise<{ hash: string; last_id: number | null } | undefined> {
      if (trail === null) {
        const [row] = await db.select().from(auditPlatformHead);
        return row;
      }
      const [row] = await db.select().from(auditChainHeads).where(eq(auditChainHeads.workspace_id, trail));
      return row;
    },

    /** Appends a record and moves the head to it; call it while holding the head's lock. */
    async append(record: NewAuditRow): Promise<AuditRecord> {
      const [row] = await db.insert(auditRecords).values(record).returning();
      const inserted = row as AuditRecord;
      const trail = record.workspace_id ?? null;
      if (trail === null) {
        await db.update(auditPlatformHead).set({ hash: inserted.hash, last_id: inserted.id });
      } else {
        await db
          .update(auditChainHeads)
          .set({ hash: inserted.hash, last_id: inserted.id })
          .where(eq(auditChainHeads.workspace_id, trail));
      }
      return inserted;
    },

    /** The next records of the chain after `afterId`, in chain (id) order. */
    chainBatch(trail: Trail, afterId: number, limit: number): Promise<AuditRecord[]> {
      return db
        .select()
        .from(auditRecords)
        .where(and(trailIs(trail), gt(auditRecords.id, afterId)))
        .orderBy(asc(auditRecords.id))
        .limit(limit);
    },

    /** The next records in a time range, by (time, id), after the last one read. */
    rangeBatch(trail: Trail, query: AuditRangeQuery): Promise<AuditRecord[]> {
      const { after } = query;
      return db
        .select()
        .from(auditRecords)
        .where(
          and(
            trailIs(trail),
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
    summary(trail: Trail) {
      return db
        .select({
          action: auditRecords.action,
          count: count(),
          oldest: min(auditRecords.created_at),
          newest: max(auditRecords.created_at),
        })
        .from(auditRecords)
        .where(trailIs(trail))
        .groupBy(auditRecords.action)
        .orderBy(asc(auditRecords.action));
    },
  };
}

export type AuditRepository = ReturnType<typeof createAuditRepository>;
