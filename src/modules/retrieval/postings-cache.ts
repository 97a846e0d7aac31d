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
const REBUILD_SPACING = 4;
const MIN_REBUILD_INTERVAL_MS = 1_000;

/** One entry per source: a newer generation's index replaces the older one's. */
const keyOf = (partition: Pick<PartitionState, 'workspaceId' | 'sourceId'>) =>
  `${partition.workspaceId}/${partition.sourceId}`;

/**
 * The in-memory postings of large partitions, shared by every search of the process. A search
 * asks for each partition of its scope with the state its statistics read; it gets the index
 * only when one of exactly that version is held, and otherwise searches that partition in SQL
 * while the partition waits for a build in the background. Builds run one at a time in the
 * process (a tenant searching many large sources at once queues them, it does not take the
 * cores), and a partition is rebuilt no sooner than `spacing` times its last build's duration
 * after it, so one written without pause does not keep a core busy rebuilding. Least recently
 * used indexes go first when the memory budget is reached.
 */
export function createPostingsCache(options: PostingsCacheOptions) {
  const now = options.now ?? Date.now;
  const spacing = options.rebuildSpacing ?? REBUILD_SPACING;
  const minInterval = options.minRebuildIntervalMs ?? MIN_REBUILD_INTERVAL_MS;
  const entries = new Map<string, BuiltPartition>();
  /** Partitions waiting for a build, in the order they were asked for. */
  const waiting = new Map<string, PartitionState>();
  let building: string | undefined;
  let drained: Promise<void> = Promise.resolve();
  const lastBuild = new Map<string, { at: number; ms: number }>();
  let bytes = 0;
  let served = 0;

  const fits = (partition: PartitionState) =>
    partition.terms * BYTES_PER_TOKEN + partition.chunks * BYTES_PER_CHUNK <= options.maxBytes;

  const rebuiltRecently = (key: string) => {
    const last = lastBuild.get(key);
    return last !== undefined && now() - last.at < Math.max(minInterval, last.ms * spacing);
  };

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

  /** Builds the waiting partitions one after the other. */
  async function drain() {
    for (const [key, partition] of waiting) {
      waiting.delete(key);
      building = key;
      const started = now();
      try {
        const built = await options.load(partition);
        if (built) store(key, built);
      } catch (error) {
        options.onError?.(error);
      } finally {
        building = undefined;
        lastBuild.set(key, { at: started, ms: now() - started });
      }
    }
    // Spacing records of partitions that may be rebuilt again are no longer needed.
    if (lastBuild.size > 10_000) {
      for (const key of lastBuild.keys()) if (!rebuiltRecently(key)) lastBuild.delete(key);
    }
  }

  return {
    /**
     * The partition's index if one of its current version is held; otherwise undefined, and
     * the partition waits for a build when it is large enough, fits the budget and was not
     * rebuilt too recently.
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
      if (building === key || waiting.has(key) || !fits(partition) || rebuiltRecently(key)) return undefined;
      waiting.set(key, partition);
      if (waiting.size === 1 && building === undefined) drained = drain();
      return undefined;
    },

    /** Drops a source's index (the source was removed). */
    forget(workspaceId: string, sourceId: string) {
      const key = keyOf({ workspaceId, sourceId });
      evict(key);
      waiting.delete(key);
      lastBuild.delete(key);
    },

    /** Resolves when no build is running or waiting (tests, benchmarks). */
    async settled(): Promise<void> {
      while (building !== undefined || waiting.size > 0) await drained;
    },

    /** What the cache holds, and how many partition searches it has answered. */
    usage: () => ({
      partitions: entries.size,
      bytes,
      building: waiting.size + (building === undefined ? 0 : 1),
      served,
    }),
  };
}
