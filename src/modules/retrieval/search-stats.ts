import type { Component } from '../../lifecycle.ts';
import type { SearchCount, SearchMode } from './retrieval.repository.ts';

/** How often counted searches are written. */
export const FLUSH_INTERVAL_MS = 5_000;

/** The retrieval hit-rate of a workspace: the share of searches that found a result at or above their `min_score`. */
export interface HitRate {
  searches: number;
  hits: number;
  /** hits / searches; null before the first search. */
  rate: number | null;
}

export interface SearchStatsDependencies {
  /** Adds counts to the `search_stats` table. */
  write(counts: SearchCount[]): Promise<void>;
  /** Searches and hits stored for a workspace since a day (`YYYY-MM-DD`). */
  read(workspaceId: string, sinceDay: string): Promise<{ searches: number; hits: number }>;
  now?: () => Date;
  /** Told when a flush fails; the counts are kept for the next one. */
  onError?: (error: unknown) => void;
}

const dayOf = (date: Date): string => date.toISOString().slice(0, 10);

/**
 * Counts searches per workspace, UTC day and mode in memory and adds them to the database in
 * one statement every `FLUSH_INTERVAL_MS` (and at stop), so a search never waits for a write
 * nor contends on a counter row. A process that dies loses at most that interval's counts.
 * Several processes add to the same rows. A component: `start` begins the flushes, `stop` ends
 * them with a last one.
 */
export function createSearchStats(deps: SearchStatsDependencies) {
  const now = deps.now ?? (() => new Date());
  let pending = new Map<string, SearchCount>();
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();

  async function writePending(): Promise<void> {
    if (pending.size === 0) return;
    const counts = [...pending.values()];
    pending = new Map();
    try {
      await deps.write(counts);
    } catch (error) {
      // Put them back: the next flush adds them with whatever was counted meanwhile.
      for (const count of counts) add(count);
      deps.onError?.(error);
    }
  }

  function add(count: SearchCount) {
    const key = `${count.workspaceId}|${count.day}|${count.mode}`;
    const seen = pending.get(key);
    if (seen) {
      seen.searches += count.searches;
      seen.hits += count.hits;
      seen.results += count.results;
    } else pending.set(key, { ...count });
  }

  /** Writes what is counted; concurrent calls run one after another. */
  function flush(): Promise<void> {
    flushing = flushing.then(writePending);
    return flushing;
  }

  const component: Component = {
    name: 'Retrieval statistics',
    async start() {
      timer ??= setInterval(() => void flush(), FLUSH_INTERVAL_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await flush();
    },
    health: async () => ({ name: 'Retrieval statistics', status: 'up' as const }),
  };

  return {
    component,
    flush,

    /** Counts one search: its mode, how many results it returned, and whether one met `min_score`. */
    record(workspaceId: string, mode: SearchMode, results: number, hit: boolean) {
      add({ workspaceId, day: dayOf(now()), mode, searches: 1, hits: hit ? 1 : 0, results });
    },

    /**
     * The workspace's hit-rate over the whole UTC days since `since` (default: yesterday and
     * today, so at least the last 24 hours), pending counts included.
     */
    async hitRate(workspaceId: string, since?: Date): Promise<HitRate> {
      await flush();
      const from = since ?? new Date(now().getTime() - 86_400_000);
      const { searches, hits } = await deps.read(workspaceId, dayOf(from));
      return { searches, hits, rate: searches > 0 ? hits / searches : null };
    },
  };
}

export type SearchStats = ReturnType<typeof createSearchStats>;
