import { type SQL, sql } from 'drizzle-orm';
import { executePrepared, jsonValue } from '../../db/queries.ts';
import { runEvents } from '../../db/schema/runs.ts';
import { afterCommit, type Db, inTransaction } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import type { ActivityInput, ActivityService, ActivityStatementEntry } from '../activity/activity.service.ts';
import { createRunsRepository } from './runs.repository.ts';

/**
 * The event hub topic of control requests (cancel) for running runs: published with id 0
 * after the request commits; each executing process reads the controls of its runs.
 */
export const RUN_CONTROL_TOPIC = 'run-control';

/**
 * What runs need of the activity module: writes inside their transaction (`recordAll`), or
 * inside their statement (`insertForSource`, then `announce` once it has committed).
 */
export type ActivityRecorder = Pick<ActivityService, 'recordAll' | 'insertForSource' | 'announce'>;

/** What a change to a run may append while its transaction is open. */
export interface RunChangeLog {
  /** Appends to the run's event log (what `GET /api/runs/{id}/events` replays). */
  event(type: string, data?: Record<string, unknown>): void;
  /** Adds an entry to the workspace's activity feed (written last in the transaction). */
  activity(entry: Omit<ActivityInput, 'workspaceId'>): Promise<void>;
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
      const entries: Omit<ActivityInput, 'workspaceId'>[] = [];
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

/** An event appended by a run statement: `data` may be SQL over the run's row (`run`). */
export interface RunStatementEvent {
  type: string;
  data?: Record<string, unknown> | SQL;
  /** Appended only when this holds for the run's row (always when absent). */
  when?: SQL;
}

/**
 * One change of a run as a single statement: data-modifying CTEs, the first named `run` and
 * yielding the run's row (an update of it, or the row selected `FOR NO KEY UPDATE`, which
 * orders the log's appends as `commitRunChange`'s lock does); the others may read `run` and
 * each other. The events and activity entries are written for the run only when `run` has a
 * row, so a change whose guard fails (another worker owns the run) writes nothing.
 */
export interface RunStatement {
  ctes: [name: string, query: SQL][];
  events?: RunStatementEvent[];
  activity?: ActivityStatementEntry[];
  /** What the statement answers for the run's row (`run.*` when absent). */
  select?: SQL;
  /**
   * Whether readers of the run's log are woken once it commits (yes when absent). The statement
   * that creates the run says no: nobody can be waiting for a run whose id no one has seen.
   */
  wakeReaders?: boolean;
}

/**
 * The engine's hot path: a run's change, its log events and its activity in one round trip
 * and one commit (no BEGIN, no COMMIT of its own), where `commitRunChange` takes at least four.
 * Readers are woken once it has returned, that is once it has committed. Resolves to the
 * selected row as the database returned it, or undefined when `run` had no row. A statement
 * whose acknowledgement is lost may have committed: its callers decide from the run's row
 * afterwards (a later claim continues after the last completed step), never by repeating it.
 */
export function createRunWriter({ db, hub, activity }: RunLogDependencies) {
  return async function writeRun(
    runId: string,
    statement: RunStatement,
  ): Promise<Record<string, unknown> | undefined> {
    const events = statement.events ?? [];
    const entries = statement.activity ?? [];
    const ctes = statement.ctes.map(([name, query]) => sql`${sql.identifier(name)} as (${query})`);
    if (events.length > 0) {
      const rows = events.map(
        (event, n) => sql`(${n}::int, ${event.type}::varchar, ${jsonValue(event.data ?? {})},
          ${event.when ?? sql`true`})`,
      );
      ctes.push(sql`run_log as (
        insert into ${runEvents} (run_id, workspace_id, type, data)
        select run.id, run.workspace_id, v.type, v.data
          from run cross join lateral (values ${sql.join(rows, sql`, `)}) as v(n, type, data, ok)
         where v.ok order by v.n
        returning id)`);
    }
    if (entries.length > 0) ctes.push(sql`run_activity as (${activity.insertForSource('run', entries)})`);
    const result = await executePrepared(
      db,
      sql`with ${sql.join(ctes, sql`, `)}
      select ${statement.select ?? sql`run.*`},
        run.workspace_id as log_workspace_id,
        ${events.length > 0 ? sql`(select max(id) from run_log)` : sql`null::bigint`} as last_event_id,
        ${entries.length > 0 ? sql`(select max(id) from run_activity)` : sql`null::bigint`} as last_activity_id
      from run`,
    );
    const row = (result as unknown as { rows: Record<string, unknown>[] }).rows[0];
    if (!row) return undefined;
    if (row.last_event_id !== null && statement.wakeReaders !== false) {
      hub.publish(`run:${runId}`, Number(row.last_event_id));
    }
    if (row.last_activity_id !== null) {
      activity.announce(String(row.log_workspace_id), Number(row.last_activity_id));
    }
    return row;
  };
}

export type WriteRun = ReturnType<typeof createRunWriter>;
