import type { PostingsIndex } from './postings.ts';
import type { PartitionState } from './retrieval.repository.ts';

/** What a build read: the index and the version it holds (unchanged from its start to its end). */
export interface BuiltPartition {
  generation: number;
  version: string;
  index: PostingsIndex;
}

export interface PostingsCacheOptions {
  /** Memory the cached indexes may hold together; 0 turns the cache off. */
  maxBytes: number;
  /** Partitions with fewer chunks are searched in SQL (fast enough there) and never cached. */
  minChunks: number;
  /**
   * Reads a partition; undefined when it changed while being read (the next search that finds
   * it stale tries again).
   */
  load(partition: PartitionState): Promise<BuiltPartition | undefined>;
  /** `REBUILD_SPACING` and `MIN_REBUILD_INTERVAL_MS` unless given (tests rebuild at once). */
  rebuildSpacing?: number;
  minRebuildIntervalMs?: number;
  onError?: (error: unknown) => void;
  now?: () => number;
}

/** Postings and chunk data per token of a partition, for an estimate before any build. */
const BYTES_PER_TOKEN = 6;
const BYTES_PER_CHUNK = 29;

/**
 * After a build of d milliseconds, the same partition is rebuilt no sooner than this many
 * times d later, and not within a second: a partition written without pause costs at most
 * about a fifth of a core in rebuilds.
 */
export const REBUILD_SPACING = 4;
export const MIN_REBUILD_INTERVAL_MS = 1_000;

/** One entry per source: a newer generation's index replaces the older one's. */
const keyOf = (partition: Pick<PartitionState, 'workspaceId' | 'sourceId'>) =>
  `${partition.workspaceId}/${partition.sourceId}`;

/**
 * The in-memory postings of large partitions, shared by every search of the process. A search
 * asks for each partition of its scope with the state its statistics read; it gets the index
 * only when one of exactly that version is held, and otherwise searches that partition in SQL
 * while a build runs in the background (one at a time per partition, spaced by how long the
 * last one took, so a partition written without pause does not keep a core busy rebuilding).
 * Least recently used indexes go first when the memory budget is reached.
 */
export function createPostingsCache(options: PostingsCacheOptions) {
  const now = options.now ?? Date.now;
  const spacing = options.rebuildSpacing ?? REBUILD_SPACING;
  const minInterval = options.minRebuildIntervalMs ?? MIN_REBUILD_INTERVAL_MS;
  const entries = new Map<string, BuiltPartition>();
  const builds = new Map<string, Promise<void>>();
  const lastBuild = new Map<string, { at: number; ms: number }>();
  let bytes = 0;
  let served = 0;

  const fits = (partition: PartitionState) =>
    partition.terms * BYTES_PER_TOKEN + partition.chunks * BYTES_PER_CHUNK <= options.maxBytes;

  function evict(key: string) {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    bytes -= entry.index.bytes;
  }

  function store(key: string, built: BuiltPartition) {
    evict(key);
    if (built.index.bytes > options.maxBytes) return;
    while (bytes + built.index.bytes > options.maxBytes) {
      const oldest = entries.keys().next();
      if (oldest.done) break;
      evict(oldest.value);
    }
    entries.set(key, built);
    bytes += built.index.bytes;
  }

  function build(key: string, partition: PartitionState) {
    const started = now();
    lastBuild.set(key, { at: started, ms: 0 });
    const running = options
      .load(partition)
      .then((built) => {
        if (built) store(key, built);
      })
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        builds.delete(key);
        lastBuild.set(key, { at: started, ms: now() - started });
      });
    builds.set(key, running);
  }

  return {
    /**
     * The partition's index if one of its current version is held; otherwise undefined, and
     * a build starts when the partition is large enough, fits the budget and was not rebuilt
     * too recently.
     */
    lookup(partition: PartitionState): PostingsIndex | undefined {
      if (options.maxBytes <= 0 || partition.chunks < options.minChunks) return undefined;
      const key = keyOf(partition);
      const entry = entries.get(key);
      if (entry && entry.generation === partition.generation && entry.version === partition.version) {
        entries.delete(key);
        entries.set(key, entry);
        served += 1;
        return entry.index;
      }
      if (builds.has(key) || !fits(partition)) return undefined;
      const last = lastBuild.get(key);
      if (last && now() - last.at < Math.max(minInterval, last.ms * spacing)) {
        return undefined;
      }
      build(key, partition);
      return undefined;
    },

    /** Drops a source's index (the source was removed). */
    forget(workspaceId: string, sourceId: string) {
      evict(keyOf({ workspaceId, sourceId }));
    },

    /** Resolves when no build is running (tests, benchmarks). */
    async settled(): Promise<void> {
      while (builds.size > 0) await Promise.all(builds.values());
    },

    /** What the cache holds, and how many partition searches it has answered. */
    usage: () => ({ partitions: entries.size, bytes, building: builds.size, served }),
  };
}

export type PostingsCache = ReturnType<typeof createPostingsCache>;
