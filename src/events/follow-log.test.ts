import { describe, expect, it } from 'vitest';
import { createLocalEventHub, type EventHub } from './event-hub.ts';
import { followLog } from './follow-log.ts';

/**
 * followLog over an in-memory log: the hub only wakes the reader, what it delivers comes
 * from `readAfter`. Lost, duplicated and lying notifications must never lose or repeat a row.
 */

interface Row {
  id: number;
}

/** An append-only log with a counter of reads; `append` does not notify (the test decides). */
function memoryLog() {
  const rows: Row[] = [];
  const log = {
    rows,
    reads: 0,
    append: (count = 1) => {
      for (let i = 0; i < count; i += 1) rows.push({ id: (rows.at(-1)?.id ?? 0) + 1 });
      return rows.at(-1)?.id ?? 0;
    },
    latestId: async () => rows.at(-1)?.id ?? 0,
    readAfter: async (after: number, limit: number) => {
      log.reads += 1;
      return { rows: rows.filter((row) => row.id > after).slice(0, limit) };
    },
  };
  return log;
}

/** Pulls `count` rows from the iterator, failing after `ms` instead of hanging. */
async function take(iterator: AsyncIterator<Row>, count: number, ms = 2000): Promise<number[]> {
  const ids: number[] = [];
  const deadline = Date.now() + ms;
  while (ids.length < count) {
    const next = await Promise.race([
      iterator.next(),
      new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error(`only ${ids.length} of ${count} rows arrived`)),
          deadline - Date.now(),
        ),
      ),
    ]);
    if (next.done) break;
    ids.push(next.value.id);
  }
  return ids;
}

/** Resolves true when the iterator yields nothing within `ms` (the reader waits). */
async function staysQuiet(
  iterator: AsyncIterator<Row>,
  ms: number,
): Promise<{ quiet: boolean; pending: Promise<IteratorResult<Row>> }> {
  const pending = iterator.next();
  const quiet = await Promise.race([
    pending.then(() => false),
    new Promise<boolean>((r) => setTimeout(() => r(true), ms)),
  ]);
  return { quiet, pending };
}

/** The local hub, counting live subscriptions. */
function countingHub(): { hub: EventHub; subscribed: () => number } {
  const inner = createLocalEventHub();
  let subscribed = 0;
  const hub: EventHub = {
    ...inner,
    subscribe: (topic, listener) => {
      subscribed += 1;
      const off = inner.subscribe(topic, listener);
      return () => {
        subscribed -= 1;
        off();
      };
    },
  };
  return { hub, subscribed: () => subscribed };
}

describe('followLog', () => {
  it('replays the rows after the resume point, in batches, then waits', async () => {
    const hub = createLocalEventHub();
    const log = memoryLog();
    log.append(25);
    const controller = new AbortController();
    const followed = await followLog({
      hub,
      topic: 't',
      after: 3,
      ...log,
      signal: controller.signal,
      batchSize: 10,
    });
    expect(followed.after).toBe(3);
    const iterator = followed.rows[Symbol.asyncIterator]();
    expect(await take(iterator, 22)).toEqual(Array.from({ length: 22 }, (_, i) => i + 4));
    const { quiet } = await staysQuiet(iterator, 50);
    expect(quiet).toBe(true);
    controller.abort();
  });

  it('starts at the end of the log without a resume point, then delivers each new row once', async () => {
    const hub = createLocalEventHub();
    const log = memoryLog();
    log.append(5);
    const controller = new AbortController();
    const followed = await followLog({
      hub,
      topic: 't',
      after: undefined,
      ...log,
      signal: controller.signal,
    });
    expect(followed.after).toBe(5);
    const iterator = followed.rows[Symbol.asyncIterator]();
    const { quiet, pending } = await staysQuiet(iterator, 30);
    expect(quiet).toBe(true);
    const id = log.append();
    hub.publish('t', id);
    // Duplicates and a notification with a wrong id change nothing: the log is the truth.
    hub.publish('t', id);
    hub.publish('t', 999);
    expect((await pending).value).toEqual({ id: 6 });
    log.append(2);
    hub.publish('t', 1);
    expect(await take(iterator, 2)).toEqual([7, 8]);
    const after = await staysQuiet(iterator, 50);
    expect(after.quiet).toBe(true);
    controller.abort();
    expect((await after.pending).done).toBe(true);
  });

  it('finds a row whose notification was lost at the next recheck', async () => {
    const hub = createLocalEventHub();
    const log = memoryLog();
    const controller = new AbortController();
    const followed = await followLog({
      hub,
      topic: 't',
      after: 0,
      ...log,
      signal: controller.signal,
      recheckMs: 40,
    });
    const iterator = followed.rows[Symbol.asyncIterator]();
    const pending = iterator.next();
    log.append();
    const started = Date.now();
    expect((await pending).value).toEqual({ id: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(20);
    controller.abort();
  });

  it('reads again when a notification arrives during a read', async () => {
    const hub = createLocalEventHub();
    const log = memoryLog();
    const controller = new AbortController();
    let racing = true;
    const followed = await followLog({
      hub,
      topic: 't',
      after: 0,
      latestId: log.latestId,
      // The first live read misses a row that is appended and announced while it runs.
      readAfter: async (after, limit) => {
        const rows = await log.readAfter(after, limit);
        if (racing && log.reads === 2) {
          racing = false;
          hub.publish('t', log.append());
        }
        return rows;
      },
      signal: controller.signal,
    });
    const iterator = followed.rows[Symbol.asyncIterator]();
    log.append();
    hub.publish('t', 1);
    expect(await take(iterator, 2, 500)).toEqual([1, 2]);
    controller.abort();
  });

  it('reads pending rows again soon, without a notification, until they are deliverable', async () => {
    const hub = createLocalEventHub();
    const log = memoryLog();
    const controller = new AbortController();
    // Rows 1 and 2 are committed, but row 2 stays pending for three reads (a transaction
    // that could still commit a row before it is open); no notification is ever sent.
    log.append(2);
    let holdFor = 3;
    const followed = await followLog({
      hub,
      topic: 't',
      after: 0,
      latestId: log.latestId,
      readAfter: async (after, limit) => {
        const { rows } = await log.readAfter(after, limit);
        if (holdFor <= 0) return { rows };
        holdFor -= 1;
        return { rows: rows.filter((row) => row.id < 2), pending: true };
      },
      signal: controller.signal,
      recheckMs: 60_000,
    });
    const iterator = followed.rows[Symbol.asyncIterator]();
    expect(await take(iterator, 2, 1000)).toEqual([1, 2]);
    expect(holdFor).toBe(0);
    controller.abort();
  });

  it('unsubscribes when aborted, and ends a waiting iteration at once', async () => {
    const { hub, subscribed } = countingHub();
    const log = memoryLog();
    const controller = new AbortController();
    const followed = await followLog({ hub, topic: 't', after: 0, ...log, signal: controller.signal });
    expect(subscribed()).toBe(1);
    const iterator = followed.rows[Symbol.asyncIterator]();
    const pending = iterator.next();
    controller.abort();
    expect((await pending).done).toBe(true);
    expect(subscribed()).toBe(0);
    const reads = log.reads;
    hub.publish('t', log.append());
    expect(log.reads).toBe(reads);
  });

  it('ends at once when aborted while the consumer holds a row', async () => {
    const { hub, subscribed } = countingHub();
    const log = memoryLog();
    log.append();
    const controller = new AbortController();
    const followed = await followLog({
      hub,
      topic: 't',
      after: 0,
      ...log,
      signal: controller.signal,
      recheckMs: 60_000,
    });
    const iterator = followed.rows[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ id: 1 });
    controller.abort();
    const { quiet, pending } = await staysQuiet(iterator, 200);
    expect(quiet).toBe(false);
    expect((await pending).done).toBe(true);
    expect(subscribed()).toBe(0);
  });

  it('fails without subscribing when the first read fails', async () => {
    const { hub, subscribed } = countingHub();
    await expect(
      followLog({
        hub,
        topic: 't',
        after: 0,
        latestId: async () => 0,
        readAfter: async () => {
          throw new Error('database down');
        },
        signal: new AbortController().signal,
      }),
    ).rejects.toThrow('database down');
    expect(subscribed()).toBe(0);
  });

  it('drops the subscription when aborted before the rows are iterated', async () => {
    const { hub, subscribed } = countingHub();
    const controller = new AbortController();
    await followLog({ hub, topic: 't', after: 0, ...memoryLog(), signal: controller.signal });
    expect(subscribed()).toBe(1);
    controller.abort();
    expect(subscribed()).toBe(0);
  });
});
