import type { Caller } from '../../caller.ts';
import { afterCommit, type Db, inTransaction, isTransaction } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { type FollowedLog, followLog } from '../../events/follow-log.ts';
import {
  type ActivityFilter,
  type ActivityItem,
  type ActivityKind,
  type ActivitySubjectType,
  createActivityRepository,
  insertForSource,
} from './activity.repository.ts';
import {
  mintTicket,
  TICKET_TTL_SECONDS,
  type TicketBinding,
  type TicketStore,
  ticketHash,
} from './ws-tickets.ts';

export type {
  ActivityFilter,
  ActivityItem,
  ActivityKind,
  ActivityStatementEntry,
  ActivitySubjectType,
} from './activity.repository.ts';

/** One event to record, in the transaction of the change it describes. */
export interface ActivityInput {
  workspaceId: string;
  kind: ActivityKind;
  subjectType: ActivitySubjectType;
  /** The subject's id (an agent's uuid, a run's id), when it has one. */
  subjectId?: string;
  /** Human-readable, shown as it is: `Agent “Researcher” created`. */
  message: string;
  /** Machine-readable details for clients (names, statuses, durations); never secrets. */
  data?: Record<string, unknown>;
  /** The user whose request caused it; absent for the system's own work. */
  actor?: string;
}

/** The hub topic of a workspace's feed; writers publish the new id there after commit. */
export const activityTopic = (workspaceId: string): string => `activity:${workspaceId}`;

export interface ActivityDependencies {
  hub: EventHub;
  tickets: TicketStore;
  /** While caught up, a live reader reads again this often without a notification (ms). */
  recheckMs?: number;
}

/**
 * The workspace activity feed (spec section 6): events written in the transaction of the
 * change they record, listed newest first by cursor, and followed live (SSE, WebSocket)
 * through the event hub, which carries ids only.
 */
export function createActivityService(db: Db, deps: ActivityDependencies) {
  const repo = createActivityRepository(db);

  /** Inserts in `tx` with one statement and publishes each feed's last id once `tx` commits. */
  async function recordIn(tx: Db, events: ActivityInput[]): Promise<number[]> {
    if (events.length === 0) return [];
    const ids = await createActivityRepository(tx).insertMany(
      events.map((event) => ({
        workspace_id: event.workspaceId,
        kind: event.kind,
        subject_type: event.subjectType,
        subject_id: event.subjectId ?? null,
        message: event.message,
        data: event.data ?? {},
        actor: event.actor ?? null,
      })),
    );
    const lastIdOfFeed = new Map(
      events.map((event, index) => [activityTopic(event.workspaceId), ids[index] ?? 0]),
    );
    for (const [topic, id] of lastIdOfFeed) afterCommit(tx, () => deps.hub.publish(topic, id));
    return ids;
  }

  /** Records several events as `record` does, with one statement; their ids in order. */
  function recordAll(tx: Db, events: ActivityInput[]): Promise<number[]> {
    return isTransaction(tx) ? recordIn(tx, events) : inTransaction(tx, (own) => recordIn(own, events));
  }

  return {
    /**
     * Records an event inside the caller's transaction `tx`, so it exists exactly when the
     * change it describes does, and publishes its id on `activity:<workspace id>` after the
     * commit (`afterCommit`), never before: a woken reader always finds the row. It takes no
     * feed-wide lock: readers deliver in commit order (`listAfter`), so concurrent writers
     * to one workspace's feed never wait for each other. Given the database itself rather
     * than a transaction, it opens one of its own.
     */
    async record(tx: Db, event: ActivityInput): Promise<number> {
      const [id] = await recordAll(tx, [event]);
      return id as number;
    },

    recordAll,

    /** The insert of entries by a statement that makes the change they record (see the repository). */
    insertForSource,

    /**
     * Tells the readers of the workspace's feed that rows up to `id` exist: for a statement
     * that wrote its entries itself (`insertForSource`), once it has committed.
     */
    announce(workspaceId: string, id: number): void {
      deps.hub.publish(activityTopic(workspaceId), id);
    },

    /** Newest first, by cursor: `before` is the previous page's `next_cursor`. */
    list(caller: Pick<Caller, 'workspaceId'>, query: ActivityFilter & { before?: number; limit: number }) {
      const { before, limit, ...filter } = query;
      return repo.page(caller.workspaceId, filter, { before, limit });
    },

    /**
     * Follows the workspace's feed: the events after `after` (from now on when undefined),
     * then each new one as it is committed, until `signal` aborts. Resolves once subscribed
     * and after the first read, so an unreachable database is an error here, not a broken
     * stream. Only ever reads the caller's workspace.
     */
    follow(
      caller: Pick<Caller, 'workspaceId'>,
      options: { after?: number; filter?: ActivityFilter },
      signal: AbortSignal,
    ): Promise<FollowedLog<ActivityItem>> {
      const filter = options.filter ?? {};
      return followLog({
        hub: deps.hub,
        topic: activityTopic(caller.workspaceId),
        after: options.after,
        latestId: () => repo.latestId(caller.workspaceId),
        readAfter: (after, limit) => repo.listAfter(caller.workspaceId, filter, after, limit),
        signal,
        recheckMs: deps.recheckMs,
      });
    },

    /** A single-use WebSocket ticket for the caller's user and workspace, valid 30 s. */
    async issueTicket(caller: Pick<Caller, 'userId' | 'workspaceId'>) {
      const { ticket, hash } = mintTicket();
      await deps.tickets.put(
        hash,
        { userId: caller.userId, workspaceId: caller.workspaceId },
        TICKET_TTL_SECONDS * 1000,
      );
      return { ticket, expires_in: TICKET_TTL_SECONDS };
    },

    /** Spends a ticket: who it was issued to, or undefined when unknown, used or expired. */
    async redeemTicket(ticket: string): Promise<TicketBinding | undefined> {
      const hash = ticketHash(ticket);
      return hash === undefined ? undefined : deps.tickets.take(hash);
    },
  };
}

export type ActivityService = ReturnType<typeof createActivityService>;
