import type { EventHub } from './event-hub.ts';

/** How a reader follows one append-only log (an activity feed, a run's events). */
export interface FollowLogOptions<Row extends { id: number }> {
  hub: Pick<EventHub, 'subscribe'>;
  /** The hub topic the log's writers publish to after commit (`activity:<workspace id>`). */
  topic: string;
  /**
   * Where to start: rows with a greater id are delivered. Undefined starts at the log's
   * current end (`latestId`), so only what is appended from now on is delivered.
   */
  after: number | undefined;
  /** The greatest id in the log now (0 when empty): the start of a live-only follow. */
  latestId(): Promise<number>;
  /** The rows after `after`, oldest first, at most `limit`, read from the database. */
  readAfter(after: number, limit: number): Promise<LogRead<Row>>;
  /** Ends the follow: the iteration finishes and the hub subscription is dropped. */
  signal: AbortSignal;
  /** Rows per read (100). */
  batchSize?: number;
  /**
   * While caught up, read again after this many ms even without a notification (30 s):
   * bounds how long a notification the hub lost (Redis reconnecting) can delay a row.
   */
  recheckMs?: number;
}

/** What one read of a log found. */
export interface LogRead<Row> {
  /** Deliverable rows, oldest first. */
  rows: Row[];
  /**
   * More rows are already committed but not deliverable yet, because a transaction still
   * open could commit rows ordered before them (the activity feed's commit order): the
   * reader reads again after a short pause instead of waiting for the next notification.
   */
  pending?: boolean;
}

/** First and last pause before reading a log again while its newest rows are pending (ms). */
const PENDING_RETRY_MS = { first: 5, max: 500 };

/** A follow that has started: where it started, and the rows from there on, until aborted. */
export interface FollowedLog<Row> {
  /** The id the delivery starts after (the resume point, or the log's end at start). */
  after: number;
  rows: AsyncIterable<Row>;
}

/**
 * Follows an append-only log: the rows after a point, then every row appended later,
 * until `signal` aborts. The hub only wakes the reader; what it delivers is always read
 * from the database after the last id it delivered, so a lost, late or duplicated
 * notification costs a read (or a delay up to `recheckMs`), never a row, and a payload is
 * never trusted. This relies on `readAfter` delivering rows in an order that no later commit
 * can insert into: ids visible in id order (writers take `lockAppendOrder`, db/transaction.ts),
 * or the activity feed's commit order, where rows that could still be preceded are `pending`.
 *
 * It subscribes before the first read, so nothing committed in between is missed, and
 * performs that first read before resolving, so a failure there is the caller's error
 * (an HTTP answer) rather than a broken stream.
 */
export async function followLog<Row extends { id: number }>(
  options: FollowLogOptions<Row>,
): Promise<FollowedLog<Row>> {
  const { signal } = options;
  const batchSize = options.batchSize ?? 100;
  const recheckMs = options.recheckMs ?? 30_000;

  let notified = false;
  let closed = false;
  let wake: (() => void) | undefined;
  const unsubscribe = options.hub.subscribe(options.topic, () => {
    notified = true;
    wake?.();
  });
  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    signal.removeEventListener('abort', close);
    wake?.();
  };
  signal.addEventListener('abort', close, { once: true });
  if (signal.aborted) close();

  /** Resolves on the next notification, after `ms`, or when the follow closes. */
  const waitForWake = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  let after: number;
  let first: LogRead<Row>;
  try {
    after = options.after ?? (await options.latestId());
    first = await options.readAfter(after, batchSize);
  } catch (error) {
    close();
    throw error;
  }

  async function* rows(): AsyncGenerator<Row> {
    try {
      let page = first;
      let last = after;
      let pendingRetryMs = PENDING_RETRY_MS.first;
      while (!closed) {
        for (const row of page.rows) {
          if (closed) return;
          yield row;
          last = row.id;
        }
        if (closed) return;
        // A full page means more may be waiting: read on without waiting. Pending rows are
        // read again soon, backing off while a long transaction holds them back.
        if (page.rows.length < batchSize && !notified) {
          await waitForWake(page.pending ? pendingRetryMs : recheckMs);
        }
        pendingRetryMs = page.pending
          ? Math.min(pendingRetryMs * 2, PENDING_RETRY_MS.max)
          : PENDING_RETRY_MS.first;
        if (closed) return;
        // Cleared before the read: a notification arriving during it causes one more read.
        notified = false;
        page = await options.readAfter(last, batchSize);
      }
    } finally {
      close();
    }
  }

  return { after, rows: rows() };
}
