import type { ActivityKind } from '../../db/schema/activity.ts';
import { afterCommit, type Db, inTransaction } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { createRunsRepository } from './runs.repository.ts';

/** An entry of the workspace's activity feed, written in the transaction it describes. */
export interface ActivityEntry {
  workspaceId: string;
  kind: ActivityKind;
  subjectType: string;
  subjectId?: string;
  message: string;
  data?: Record<string, unknown>;
  actor?: string;
}

/** What runs need of the activity module: writes inside their transaction, one statement for all. */
export interface ActivityRecorder {
  recordAll(tx: Db, entries: ActivityEntry[]): Promise<number[]>;
}

/** What a change to a run may append while its transaction is open. */
export interface RunChangeLog {
  /** Appends to the run's event log (what `GET /api/runs/{id}/events` replays). */
  event(type: string, data?: Record<string, unknown>): void;
  /** Adds an entry to the workspace's activity feed (written last in the transaction). */
  activity(entry: Omit<ActivityEntry, 'workspaceId'>): Promise<void>;
}

export interface RunLogDependencies {
  db: Db;
  hub: Pick<EventHub, 'publish'>;
  activity: ActivityRecorder;
}

/**
 * The one way a run changes: `work` runs in a transaction with a log; the events it logged
 * are appended last in the same transaction, and readers of `run:<id>` are woken only after
 * the commit (the activity service does the same for its feed), so a reader woken up always
 * finds the rows, and a rolled-back change leaves neither rows nor notifications.
 */
export function createRunLog({ db, hub, activity }: RunLogDependencies) {
  /**
   * `run.workspace_id` is read when the log is written, after `work`: a change that claims the
   * run may fill it in then. Every append to a run's events holds the run's row lock until it
   * commits, so its ids become visible in id order; `rowLocked` says `work` has already taken
   * it (an update of the row, or the row's insert), so no statement of its own is needed.
   */
  return async function commitRunChange<T>(
    run: { id: string; workspace_id: string },
    work: (tx: Db, log: RunChangeLog) => Promise<T>,
    options: { rowLocked?: boolean } = {},
  ): Promise<T> {
    return inTransaction(db, async (tx) => {
      const events: { type: string; data: Record<string, unknown> }[] = [];
      const entries: Omit<ActivityEntry, 'workspaceId'>[] = [];
      const log: RunChangeLog = {
        event: (type, data = {}) => {
          events.push({ type, data });
        },
        activity: async (entry) => {
          entries.push(entry);
        },
      };
      const result = await work(tx, log);
      if (events.length > 0) {
        // The run's log becomes visible in id order, so a stream resuming by id skips nothing.
        const topic = `run:${run.id}`;
        const runs = createRunsRepository(tx);
        if (!options.rowLocked) await runs.lockRow(run.id);
        const ids = await runs.appendEvents(run.id, run.workspace_id, events);
        const last = ids.at(-1);
        if (last !== undefined) afterCommit(tx, () => hub.publish(topic, last));
      }
      if (entries.length > 0) {
        await activity.recordAll(
          tx,
          entries.map((entry) => ({ ...entry, workspaceId: run.workspace_id })),
        );
      }
      return result;
    });
  };
}

export type CommitRunChange = ReturnType<typeof createRunLog>;
