/**
 * FP-Growth frequent itemset mining over typed arrays.
 *
 * The engine is pure: no I/O, no HTTP, no database. Callers hand it transactions (strings or integers)
 * and receive itemsets through a callback, one at a time, so a run never builds one giant result array.
 * The design and the measurements behind each optimisation are in docs/mining.md.
 */

/** Which itemsets a run reports. */
export type MiningMode = 'all' | 'closed' | 'maximal';

/** Options shared by the string and the integer entry points. */
export interface MiningOptions {
  /**
   * Minimum support. An integer >= 1 is an absolute transaction count; a value strictly between 0 and 1
   * is a fraction of all transactions (empty ones included), rounded up, because callers think in both.
   */
  minSupport: number;
  /** Longest itemset to report. Bounds the search in 'all' mode, so short patterns stay cheap on dense data. */
  maxLength?: number;
  /**
   * 'closed' keeps itemsets with no superset of equal support (a lossless summary); 'maximal' keeps itemsets
   * with no frequent superset (the shortest listing). With maxLength, closed or maximal itemsets longer
   * than maxLength are left out; a shorter itemset is not promoted.
   */
  mode?: MiningMode;
  /**
   * Report only the k itemsets of highest support (ties at the boundary: first found). The minimum support
   * rises as the heap fills, which prunes the search, so nothing beyond k itemsets is ever held.
   * Results arrive sorted by support, highest first. Not combinable with 'maximal', whose meaning
   * depends on a fixed threshold.
   */
  topK?: number;
  /** Called with (done, total) top-level branches, at most about 100 times, to drive a progress bar. */
  onProgress?: (done: number, total: number) => void;
}

/** What a run did, for logs and for the CLI. */
export interface MiningSummary {
  /** Transactions in the input, empty ones included: the base of fractional supports and lift. */
  transactionCount: number;
  /** The absolute minimum support the run used (after turning a fraction into a count). */
  minSupportCount: number;
  /** Items that reached the minimum support. */
  frequentItemCount: number;
  /** Itemsets reported through the callback. */
  itemsetCount: number;
}

/**
 * Receives one itemset. `items` is a buffer that the engine reuses: read items[0..length) during the call
 * and copy them if you keep them. Reusing the buffer is what makes a million itemsets cost nothing to emit.
 */
export type IntegerItemsetSink = (items: Int32Array, length: number, support: number) => void;

/** Receives one itemset of string items, sorted, owned by the callee. */
export type ItemsetSink = (items: string[], support: number) => void;

const MODE_ALL = 0;
const MODE_CLOSED = 1;
const MODE_MAXIMAL = 2;

/**
 * Turns a count-or-fraction minimum support into a count, because the API accepts both.
 * A fraction is rounded up (a set is frequent when its support >= ceil(fraction * n)), with a tolerance
 * so that 0.07 * 100 gives 7 and not 8 through floating-point error.
 */
export function resolveMinSupport(minSupport: number, transactionCount: number): number {
  if (!Number.isFinite(minSupport) || minSupport <= 0) {
    throw new RangeError(`minSupport must be a count >= 1 or a fraction in (0, 1), got ${minSupport}`);
  }
  if (minSupport >= 1) {
    if (!Number.isInteger(minSupport)) {
      throw new RangeError(`minSupport >= 1 is a count and must be an integer, got ${minSupport}`);
    }
    return minSupport;
  }
  const exact = minSupport * transactionCount;
  const nearest = Math.round(exact);
  const count = Math.abs(exact - nearest) <= 1e-9 * Math.max(1, exact) ? nearest : Math.ceil(exact);
  return Math.max(1, count);
}

function checkOptions(options: MiningOptions): void {
  const { maxLength, topK, mode } = options;
  if (maxLength !== undefined && (!Number.isInteger(maxLength) || maxLength < 1)) {
    throw new RangeError(`maxLength must be an integer >= 1, got ${maxLength}`);
  }
  if (topK !== undefined && (!Number.isInteger(topK) || topK < 1)) {
    throw new RangeError(`topK must be an integer >= 1, got ${topK}`);
  }
  if (mode !== undefined && mode !== 'all' && mode !== 'closed' && mode !== 'maximal') {
    throw new RangeError(`mode must be 'all', 'closed' or 'maximal', got ${String(mode)}`);
  }
  if (topK !== undefined && mode === 'maximal') {
    throw new RangeError('topK cannot be combined with maximal mode');
  }
}

/** Small deterministic PRNG (xorshift32) for the closed-mode transaction hashes. */
function createRandom(seed: number): () => number {
  let state = seed | 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return state;
  };
}

/** A min-heap of the best k itemsets found so far, ordered by support. */
class TopKHeap {
  readonly supports: number[] = [];
  readonly items: Int32Array[] = [];

  readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get full(): boolean {
    return this.supports.length >= this.capacity;
  }

  /** Lowest support held; only meaningful when full. */
  get floor(): number {
    return this.supports[0] ?? 0;
  }

  push(items: Int32Array, support: number): void {
    const s = this.supports;
    const it = this.items;
    if (s.length < this.capacity) {
      s.push(support);
      it.push(items);
      let i = s.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if ((s[p] as number) <= support) break;
        s[i] = s[p] as number;
        it[i] = it[p] as Int32Array;
        i = p;
      }
      s[i] = support;
      it[i] = items;
      return;
    }
    const n = s.length;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && (s[r] as number) < (s[l] as number) ? r : l;
      if ((s[c] as number) >= support) break;
      s[i] = s[c] as number;
      it[i] = it[c] as Int32Array;
      i = c;
    }
    s[i] = support;
    it[i] = items;
  }
}

/** Transactions in compressed rows: transaction t is items[offsets[t] .. offsets[t + 1]). */
export interface TransactionTable {
  /** Every item of every transaction, back to back: one allocation instead of one array per transaction. */
  items: Int32Array;
  /** transactionCount + 1 offsets into `items`. */
  offsets: Int32Array;
}

/** Transactions of non-negative integer items (FIMI data, or strings already mapped to ids). */
export type IntegerTransactions = readonly ArrayLike<number>[];

/** Packs arrays of items into a TransactionTable, the layout the engine and the FIMI parser share. */
export function toTransactionTable(transactions: IntegerTransactions): TransactionTable {
  const n = transactions.length;
  const offsets = new Int32Array(n + 1);
  let total = 0;
  for (let t = 0; t < n; t++) {
    total += (transactions[t] as ArrayLike<number>).length;
    offsets[t + 1] = total;
  }
  const items = new Int32Array(total);
  let pos = 0;
  for (let t = 0; t < n; t++) {
    const row = transactions[t] as ArrayLike<number>;
    for (let i = 0; i < row.length; i++) {
      const v = row[i] as number;
      if (!(v >= 0 && v <= 0x7fffffff && Number.isInteger(v))) {
        throw new RangeError(`items must be integers in [0, 2^31), got ${v}`);
      }
      items[pos++] = v;
    }
  }
  return { items, offsets };
}

// Node fields, at offset id * 4 in one Int32Array so that a walk to the root touches one cache line per
// node. Node ids are these offsets; -1 is "none".
const ITEM = 0;
const PARENT = 1;
const COUNT = 2;
const LINK = 3;
const STRIDE = 4;

/** Item slots in the top-level prefix buckets filled per scan of the rows (16 MB). */
const CHUNK_PATH_ITEMS = 1 << 22;

/**
 * The top level runs on rows while their prefix scans take at most this many times the steps of tree
 * walks (about 1.1 on retail and T10I4D100K, 1.3 on kosarak, 5 to 7 on chess and mushroom).
 */
const ROWS_MAX_EXTRA_STEPS = 2;

function grown(a: Int32Array, needed: number, used: number): Int32Array {
  let cap = Math.max(16, a.length * 2);
  while (cap < needed) cap *= 2;
  const b = new Int32Array(cap);
  b.set(a.subarray(0, used));
  return b;
}

/**
 * The FP-Growth search. Items are ranks (0 = most frequent); every tree lives in one set of typed arrays
 * used as a stack arena: a conditional tree is built on top, mined, then dropped by resetting the top
 * pointer, so a run allocates almost nothing after start-up.
 */
class FpGrowthMiner {
  private readonly labels: Int32Array;
  private readonly maxLength: number;
  private readonly mode: number;
  private readonly closed: boolean;
  minSupport: number;
  itemsetCount = 0;

  // Node arena (see ITEM..LINK), first child and next sibling (only used while building a conditional
  // tree) and, in closed mode, a hash of the transactions through each node; the last three by id / 4.
  private nodes: Int32Array;
  private nChild: Int32Array;
  private nSibling: Int32Array;
  private nHash: Int32Array;
  private nTop = 0;

  // Header arena: per tree and local item, first node, support, global rank, transaction hash.
  private hLink: Int32Array;
  private hSupp: Int32Array;
  private hRank: Int32Array;
  private hHash: Int32Array;
  private hTop = 0;

  // Scratch shared by all levels (a level is done with them before it recurses): flat conditional
  // supports, item renumbering for the next tree, the prefix paths read in pass 1 for pass 2.
  private readonly condSupp: Int32Array;
  private readonly condHash: Int32Array;
  private readonly map: Int32Array;
  private pathItems: Int32Array;
  private segEnd: Int32Array;
  private segCount: Int32Array;
  private segHash: Int32Array;
  private readonly path: Int32Array;
  private readonly prevItems: Int32Array;
  private readonly prevNodes: Int32Array;

  // The current itemset: branch items (ranks and labels) then, when emitting, perfect extensions.
  private readonly branchRank: Int32Array;
  private readonly out: Int32Array;
  private readonly perfRank: Int32Array;
  private readonly perfLabel: Int32Array;
  private perfTop = 0;
  private segs = 0;

  // The top level as rows and per-item buckets of their prefixes (see loadTopRows).
  private rowItems: Int32Array = new Int32Array(0);
  private rowStart: Int32Array = new Int32Array(0);
  private rowWeight: Int32Array = new Int32Array(0);
  private rowHash: Int32Array = new Int32Array(0);
  private pathLength: Float64Array = new Float64Array(0);
  private rowCount: Int32Array = new Int32Array(0);
  private bucketStart = new Int32Array(0);
  private bucketSegStart = new Int32Array(0);
  private chunkItems = new Int32Array(0);
  private chunkSegEnd = new Int32Array(0);
  private chunkSegCount = new Int32Array(0);
  private chunkSegHash = new Int32Array(0);
  private chunkLow = 0;
  private topRows = false;

  // Closed and maximal bookkeeping.
  private readonly mark: Int32Array;
  private epoch = 0;
  private readonly closedIndex = new Map<number, number[]>();
  private readonly storedItems: Int32Array[] = [];
  private readonly storedSupport: number[] = [];
  private readonly maximalByItem: (number[] | undefined)[];

  private readonly heap: TopKHeap | undefined;
  private readonly sink: IntegerItemsetSink;
  private readonly onProgress: ((done: number, total: number) => void) | undefined;
  private lastProgress = -1;

  constructor(labels: Int32Array, minSupport: number, options: MiningOptions, sink: IntegerItemsetSink) {
    const f = labels.length;
    this.labels = labels;
    this.minSupport = minSupport;
    this.maxLength = options.maxLength ?? Number.MAX_SAFE_INTEGER;
    this.mode =
      options.mode === 'closed' ? MODE_CLOSED : options.mode === 'maximal' ? MODE_MAXIMAL : MODE_ALL;
    this.closed = this.mode === MODE_CLOSED;
    this.sink = sink;
    this.onProgress = options.onProgress;
    this.heap = options.topK === undefined ? undefined : new TopKHeap(options.topK);
    this.nodes = new Int32Array(0);
    this.nChild = new Int32Array(0);
    this.nSibling = new Int32Array(0);
    this.nHash = new Int32Array(0);
    const hcap = Math.max(16, 4 * f);
    this.hLink = new Int32Array(hcap);
    this.hSupp = new Int32Array(hcap);
    this.hRank = new Int32Array(hcap);
    this.hHash = new Int32Array(this.closed ? hcap : 0);
    this.condSupp = new Int32Array(f + 1);
    this.condHash = new Int32Array(this.closed ? f + 1 : 0);
    this.map = new Int32Array(f + 1);
    this.pathItems = new Int32Array(1024);
    this.segEnd = new Int32Array(256);
    this.segCount = new Int32Array(256);
    this.segHash = new Int32Array(this.closed ? 256 : 0);
    this.path = new Int32Array(f + 1);
    this.prevItems = new Int32Array(f + 1);
    this.prevNodes = new Int32Array(f + 1);
    this.branchRank = new Int32Array(f + 1);
    this.out = new Int32Array(f + 1);
    this.perfRank = new Int32Array(f + 1);
    this.perfLabel = new Int32Array(f + 1);
    this.mark = new Int32Array(f + 1);
    this.maximalByItem = this.mode === MODE_MAXIMAL ? new Array(f) : [];
  }

  /**
   * Pass 1 on a tree: walk from each node of `it` to the root, summing conditional supports and keeping
   * the path so that pass 2 reads it sequentially instead of chasing parents again.
   */
  private collectFromTree(base: number, head: number): number {
    const closed = this.closed;
    const condSupp = this.condSupp;
    const condHash = this.condHash;
    const nodes = this.nodes;
    const hash = this.nHash;
    let pathItems = this.pathItems;
    let cap = pathItems.length;
    let bp = 0;
    let segs = 0;
    for (let n = head; n !== -1; n = nodes[n + LINK] as number) {
      const c = nodes[n + COUNT] as number;
      const h = closed ? (hash[n >> 2] as number) : 0;
      for (let a = nodes[n + PARENT] as number; a !== base; a = nodes[a + PARENT] as number) {
        const j = nodes[a + ITEM] as number;
        condSupp[j] = (condSupp[j] as number) + c;
        if (closed) condHash[j] = ((condHash[j] as number) + h) | 0;
        if (bp === cap) {
          this.growPathItems(bp + 1);
          pathItems = this.pathItems;
          cap = pathItems.length;
        }
        pathItems[bp++] = j;
      }
      if (segs === this.segEnd.length) this.growSegments();
      this.segEnd[segs] = bp;
      this.segCount[segs] = c;
      if (closed) this.segHash[segs] = h;
      segs++;
    }
    this.segs = segs;
    return bp;
  }

  /**
   * Builds the top-level tree from transactions already renumbered, sorted and merged: consecutive
   * transactions share their common prefix, so a stack of the previous path replaces any child lookup.
   */
  buildTopTree(db: PreparedDatabase): void {
    const { rowItems: flat, rowStart, weights, hashes, rows, itemSupport, itemHash } = db;
    const k = itemSupport.length;
    const closed = this.closed;
    this.ensureNodes((rowStart[rows] as number) + 1);
    this.ensureHeaders(k);
    const nodes = this.nodes;
    const hash = this.nHash;
    const hLink = this.hLink;
    for (let r = 0; r < k; r++) {
      hLink[r] = -1;
      this.hSupp[r] = itemSupport[r] as number;
      this.hRank[r] = r;
      if (closed) this.hHash[r] = itemHash[r] as number;
    }
    this.hTop = k;
    nodes[ITEM] = -1;
    nodes[PARENT] = -1;
    nodes[COUNT] = 0;
    nodes[LINK] = -1;
    let top = STRIDE;
    const stack = this.prevNodes;
    let prevStart = 0;
    let prevLen = 0;
    for (let t = 0; t < rows; t++) {
      const start = rowStart[t] as number;
      const len = (rowStart[t + 1] as number) - start;
      const w = weights[t] as number;
      const h = hashes[t] as number;
      let d = 0;
      const lim = Math.min(len, prevLen);
      while (d < lim && flat[start + d] === flat[prevStart + d]) {
        const node = stack[d] as number;
        nodes[node + COUNT] = (nodes[node + COUNT] as number) + w;
        if (closed) hash[node >> 2] = ((hash[node >> 2] as number) + h) | 0;
        d++;
      }
      for (; d < len; d++) {
        const r = flat[start + d] as number;
        const node = top;
        top += STRIDE;
        nodes[node + ITEM] = r;
        nodes[node + PARENT] = d === 0 ? 0 : (stack[d - 1] as number);
        nodes[node + COUNT] = w;
        nodes[node + LINK] = hLink[r] as number;
        hLink[r] = node;
        if (closed) hash[node >> 2] = h;
        stack[d] = node;
      }
      prevStart = start;
      prevLen = len;
    }
    this.nTop = top;
  }

  /**
   * Keeps the top level as rows instead of a tree. Pass 1 for a top-level item needs the prefix of every
   * row that contains it; walking a tree of megabytes for that costs a cache miss per step, so instead
   * one sequential scan of the rows copies the prefixes of a chunk of items into per-item buckets
   * (see fillChunk), and pass 1 then reads a bucket straight through.
   */
  loadTopRows(db: PreparedDatabase): void {
    const { itemSupport, itemHash } = db;
    const k = itemSupport.length;
    const closed = this.closed;
    this.ensureHeaders(k);
    for (let r = 0; r < k; r++) {
      this.hSupp[r] = itemSupport[r] as number;
      this.hRank[r] = r;
      if (closed) this.hHash[r] = itemHash[r] as number;
    }
    this.hTop = k;
    this.rowItems = db.rowItems;
    this.rowStart = db.rowStart;
    this.rowWeight = db.weights;
    this.rowHash = db.hashes;
    this.pathLength = db.pathLength;
    this.rowCount = db.rowCount;
    this.bucketStart = new Int32Array(k);
    this.bucketSegStart = new Int32Array(k);
    this.chunkLow = k;
    this.topRows = true;
  }

  /**
   * Fills the buckets of top-level items [low, high) (a chunk bounded to CHUNK_PATH_ITEMS, or one item if
   * that alone is larger) in one pass over the rows: each row's prefix before an item of the chunk,
   * reversed as a walk to the root would give it, plus the row's weight and hash.
   */
  private fillChunk(high: number): void {
    const pathLength = this.pathLength;
    const rowCount = this.rowCount;
    const bucketStart = this.bucketStart;
    const bucketSegStart = this.bucketSegStart;
    let low = high - 1;
    let size = pathLength[low] as number;
    let segs = rowCount[low] as number;
    while (low > 0 && size + (pathLength[low - 1] as number) <= CHUNK_PATH_ITEMS) {
      low--;
      size += pathLength[low] as number;
      segs += rowCount[low] as number;
    }
    if (this.chunkItems.length < size) this.chunkItems = new Int32Array(size);
    if (this.chunkSegEnd.length < segs) {
      this.chunkSegEnd = new Int32Array(segs);
      this.chunkSegCount = new Int32Array(segs);
      if (this.closed) this.chunkSegHash = new Int32Array(segs);
    }
    let p = 0;
    let g = 0;
    for (let r = low; r < high; r++) {
      bucketStart[r] = p;
      bucketSegStart[r] = g;
      p += pathLength[r] as number;
      g += rowCount[r] as number;
    }
    const closed = this.closed;
    const rowItems = this.rowItems;
    const rowStart = this.rowStart;
    const weights = this.rowWeight;
    const hashes = this.rowHash;
    const items = this.chunkItems;
    const segEnd = this.chunkSegEnd;
    const segCount = this.chunkSegCount;
    const segHash = this.chunkSegHash;
    const rows = rowStart.length - 1;
    for (let t = 0; t < rows; t++) {
      const start = rowStart[t] as number;
      const end = rowStart[t + 1] as number;
      const w = weights[t] as number;
      for (let i = start; i < end; i++) {
        const r = rowItems[i] as number;
        if (r >= high) break;
        if (r < low) continue;
        let q = bucketStart[r] as number;
        for (let a = i - 1; a >= start; a--) items[q++] = rowItems[a] as number;
        bucketStart[r] = q;
        const sg = bucketSegStart[r] as number;
        segEnd[sg] = q;
        segCount[sg] = w;
        if (closed) segHash[sg] = hashes[t] as number;
        bucketSegStart[r] = sg + 1;
      }
    }
    // The cursors now sit at each bucket's end; move them back to its start.
    for (let r = low; r < high; r++) {
      bucketStart[r] = (bucketStart[r] as number) - (pathLength[r] as number);
      bucketSegStart[r] = (bucketSegStart[r] as number) - (rowCount[r] as number);
    }
    this.chunkLow = low;
  }

  /** Pass 1 for a top-level item: its bucket becomes the path buffer; same outputs as collectFromTree. */
  private collectFromRows(item: number): number {
    if (item < this.chunkLow) this.fillChunk(item + 1);
    const from = this.bucketStart[item] as number;
    const bp = this.pathLength[item] as number;
    const segFrom = this.bucketSegStart[item] as number;
    const segs = this.rowCount[item] as number;
    if (this.pathItems.length < bp) this.growPathItems(bp);
    while (this.segEnd.length < segs) this.growSegments();
    const pathItems = this.pathItems;
    const segEnd = this.segEnd;
    const segCount = this.segCount;
    pathItems.set(this.chunkItems.subarray(from, from + bp));
    segCount.set(this.chunkSegCount.subarray(segFrom, segFrom + segs));
    if (this.closed) this.segHash.set(this.chunkSegHash.subarray(segFrom, segFrom + segs));
    const chunkSegEnd = this.chunkSegEnd;
    for (let g = 0; g < segs; g++) segEnd[g] = (chunkSegEnd[segFrom + g] as number) - from;
    const closed = this.closed;
    const condSupp = this.condSupp;
    const condHash = this.condHash;
    const segHash = this.segHash;
    let i = 0;
    for (let g = 0; g < segs; g++) {
      const end = segEnd[g] as number;
      const c = segCount[g] as number;
      const h = closed ? (segHash[g] as number) : 0;
      for (; i < end; i++) {
        const x = pathItems[i] as number;
        condSupp[x] = (condSupp[x] as number) + c;
        if (closed) condHash[x] = ((condHash[x] as number) + h) | 0;
      }
    }
    this.segs = segs;
    return bp;
  }

  /** Mines the top-level tree of `k` items; `transactionCount` is the support of the empty prefix. */
  run(transactionCount: number, k: number, topPerfect: Int32Array): void {
    for (let i = 0; i < topPerfect.length; i++) {
      const r = topPerfect[i] as number;
      this.perfRank[this.perfTop] = r;
      this.perfLabel[this.perfTop] = this.labels[r] as number;
      this.perfTop++;
    }
    if (this.perfTop > 0) {
      if (this.mode === MODE_ALL) {
        this.emitSubsets(0, 0, transactionCount);
      } else if (this.mode === MODE_CLOSED || k === 0) {
        this.emitCandidate(0, transactionCount);
      }
    }
    if (k > 0) this.mineTree(0, 0, k, 0);
    if (this.heap) this.flushHeap();
  }

  private reportProgress(done: number, total: number): void {
    if (!this.onProgress) return;
    const pct = Math.floor((done * 100) / total);
    if (pct === this.lastProgress) return;
    this.lastProgress = pct;
    this.onProgress(done, total);
  }

  /** Makes room for `needed` nodes in total; arrays may move, so callers re-read them afterwards. */
  private ensureNodes(needed: number): void {
    if (needed * STRIDE <= this.nodes.length) return;
    const used = this.nTop >> 2;
    this.nodes = grown(this.nodes, needed * STRIDE, this.nTop);
    this.nChild = grown(this.nChild, needed, used);
    this.nSibling = grown(this.nSibling, needed, used);
    if (this.closed) this.nHash = grown(this.nHash, needed, used);
  }

  private ensureHeaders(needed: number): void {
    if (needed <= this.hLink.length) return;
    this.hLink = grown(this.hLink, needed, this.hTop);
    this.hSupp = grown(this.hSupp, needed, this.hTop);
    this.hRank = grown(this.hRank, needed, this.hTop);
    if (this.closed) this.hHash = grown(this.hHash, needed, this.hTop);
  }

  private growPathItems(needed: number): void {
    this.pathItems = grown(this.pathItems, needed, this.pathItems.length);
  }

  private growSegments(): void {
    const n = this.segEnd.length;
    this.segEnd = grown(this.segEnd, n * 2, n);
    this.segCount = grown(this.segCount, n * 2, n);
    if (this.closed) this.segHash = grown(this.segHash, n * 2, n);
  }

  /**
   * Mines one tree: for each item from the least frequent up, reports prefix+item, sums the supports of
   * its conditional pattern base into a flat array, moves items as frequent as the prefix into the
   * perfect-extension stack, and builds and mines the conditional tree of the rest.
   */
  private mineTree(base: number, hb: number, k: number, depth: number): void {
    const closed = this.closed;
    const labels = this.labels;
    const condSupp = this.condSupp;
    const condHash = this.condHash;
    const map = this.map;
    for (let it = k - 1; it >= 0; it--) {
      if (depth === 0) this.reportProgress(k - 1 - it, k);
      const s = this.hSupp[hb + it] as number;
      if (s < this.minSupport) continue;
      const rank = this.hRank[hb + it] as number;
      this.branchRank[depth] = rank;
      this.out[depth] = labels[rank] as number;
      const len = depth + 1;
      const pBefore = this.perfTop;

      if (this.mode === MODE_ALL && len >= this.maxLength) {
        this.emitSubsets(len, 0, s);
        continue;
      }

      // Pass 1: conditional supports and prefix paths of `it`.
      condSupp.fill(0, 0, it);
      if (closed) condHash.fill(0, 0, it);
      const bp =
        depth === 0 && this.topRows
          ? this.collectFromRows(it)
          : this.collectFromTree(base, this.hLink[hb + it] as number);
      const segs = this.segs;

      // Classify: perfect extensions (support == prefix support), frequent items, the rest.
      const minSupport = this.minSupport;
      let newK = 0;
      for (let j = 0; j < it; j++) {
        const cs = condSupp[j] as number;
        if (cs === s) {
          const r = this.hRank[hb + j] as number;
          this.perfRank[this.perfTop] = r;
          this.perfLabel[this.perfTop] = labels[r] as number;
          this.perfTop++;
          map[j] = -1;
        } else if (cs >= minSupport) {
          map[j] = newK++;
        } else {
          map[j] = -1;
        }
      }

      if (this.mode === MODE_ALL) {
        this.emitSubsets(len, 0, s);
      } else if (this.mode === MODE_CLOSED) {
        this.emitCandidate(len, s, this.hHash[hb + it] as number);
      } else if (newK === 0) {
        this.emitCandidate(len, s);
      } else if (this.isSubsumedWith(len, hb, it, newK)) {
        newK = 0;
      }

      if (newK > 0) {
        const nb = this.nTop;
        const chb = this.hTop;
        this.ensureNodes((nb >> 2) + bp + 1);
        this.ensureHeaders(chb + newK);
        this.hTop = chb + newK;
        const built = this.buildConditionalTree(nb, chb, hb, it, segs);
        this.nTop = built >> 1;
        const single = (built & 1) === 1;
        if (single && this.mode === MODE_ALL) {
          this.mineSinglePath(nb, chb, len);
        } else {
          this.mineTree(nb, chb, newK, len);
        }
        this.nTop = nb;
        this.hTop = chb;
      }
      this.perfTop = pBefore;
    }
    if (depth === 0) this.reportProgress(k, k);
  }

  /**
   * Pass 2: inserts the prefix paths kept by pass 1, filtered to frequent non-perfect items, into a new
   * tree at `nb`. Consecutive paths are often alike, so the part shared with the previous path is reused
   * without a child lookup. Returns the new arena top times two, plus one if the tree is a single path
   * (one number: a property store after the loop would deoptimise on-stack-replaced code on every call).
   */
  private buildConditionalTree(nb: number, chb: number, hb: number, it: number, segs: number): number {
    const closed = this.closed;
    const map = this.map;
    const condSupp = this.condSupp;
    const nodes = this.nodes;
    const child = this.nChild;
    const sibling = this.nSibling;
    const hash = this.nHash;
    const hLink = this.hLink;
    const pathItems = this.pathItems;
    const path = this.path;
    const prevItems = this.prevItems;
    const prevNodes = this.prevNodes;
    for (let j = 0; j < it; j++) {
      const m = map[j] as number;
      if (m < 0) continue;
      hLink[chb + m] = -1;
      this.hSupp[chb + m] = condSupp[j] as number;
      this.hRank[chb + m] = this.hRank[hb + j] as number;
      if (closed) this.hHash[chb + m] = this.condHash[j] as number;
    }
    nodes[nb + ITEM] = -1;
    nodes[nb + PARENT] = -1;
    nodes[nb + COUNT] = 0;
    nodes[nb + LINK] = -1;
    child[nb >> 2] = -1;
    let top = nb + STRIDE;
    let single = true;
    let prevLen = 0;
    let segStart = 0;
    for (let g = 0; g < segs; g++) {
      const end = this.segEnd[g] as number;
      const c = this.segCount[g] as number;
      const h = closed ? (this.segHash[g] as number) : 0;
      let plen = 0;
      for (let i = end - 1; i >= segStart; i--) {
        const m = map[pathItems[i] as number] as number;
        if (m >= 0) path[plen++] = m;
      }
      segStart = end;
      let d = 0;
      while (d < plen && d < prevLen && path[d] === prevItems[d]) {
        const node = prevNodes[d] as number;
        nodes[node + COUNT] = (nodes[node + COUNT] as number) + c;
        if (closed) hash[node >> 2] = ((hash[node >> 2] as number) + h) | 0;
        d++;
      }
      let cur = d === 0 ? nb : (prevNodes[d - 1] as number);
      let fresh = false;
      for (; d < plen; d++) {
        const m = path[d] as number;
        let ch = -1;
        if (!fresh) {
          ch = child[cur >> 2] as number;
          while (ch !== -1 && nodes[ch + ITEM] !== m) ch = sibling[ch >> 2] as number;
        }
        if (ch === -1) {
          ch = top;
          top += STRIDE;
          nodes[ch + ITEM] = m;
          nodes[ch + PARENT] = cur;
          nodes[ch + COUNT] = c;
          nodes[ch + LINK] = hLink[chb + m] as number;
          hLink[chb + m] = ch;
          const first = child[cur >> 2] as number;
          if (first !== -1) single = false;
          sibling[ch >> 2] = first;
          child[cur >> 2] = ch;
          child[ch >> 2] = -1;
          if (closed) hash[ch >> 2] = h;
          fresh = true;
        } else {
          nodes[ch + COUNT] = (nodes[ch + COUNT] as number) + c;
          if (closed) hash[ch >> 2] = ((hash[ch >> 2] as number) + h) | 0;
        }
        prevItems[d] = m;
        prevNodes[d] = ch;
        cur = ch;
      }
      prevLen = plen;
    }
    return top * 2 + (single ? 1 : 0);
  }

  /**
   * A conditional tree that is one path needs no recursion: every subset whose deepest item is node j has
   * node j's count, so node j is reported with the nodes above it as perfect extensions.
   */
  private mineSinglePath(root: number, hb: number, len: number): void {
    const child = this.nChild;
    const nodes = this.nodes;
    const pBefore = this.perfTop;
    const first = child[root >> 2] as number;
    for (let node = first; node !== -1; node = child[node >> 2] as number) {
      const s = nodes[node + COUNT] as number;
      if (s < this.minSupport) break;
      const r = this.hRank[hb + (nodes[node + ITEM] as number)] as number;
      this.out[len] = this.labels[r] as number;
      this.perfTop = pBefore;
      for (let above = first; above !== node; above = child[above >> 2] as number) {
        const ar = this.hRank[hb + (nodes[above + ITEM] as number)] as number;
        this.perfRank[this.perfTop] = ar;
        this.perfLabel[this.perfTop] = this.labels[ar] as number;
        this.perfTop++;
      }
      this.emitSubsets(len + 1, 0, s);
    }
    this.perfTop = pBefore;
  }
  /**
   * Reports out[0..len) combined with every subset of the perfect extensions from index `from` on: they
   * occur in every transaction of the prefix, so each combination has the prefix's support.
   */
  private emitSubsets(len: number, from: number, support: number): void {
    if (len > 0) this.emit(len, support);
    if (len >= this.maxLength) return;
    const top = this.perfTop;
    for (let j = from; j < top; j++) {
      this.out[len] = this.perfLabel[j] as number;
      this.emitSubsets(len + 1, j + 1, support);
    }
  }

  private emit(len: number, support: number): void {
    const heap = this.heap;
    if (heap) {
      if (heap.full && support <= heap.floor) return;
      heap.push(this.out.slice(0, len), support);
      if (heap.full && heap.floor + 1 > this.minSupport) this.minSupport = heap.floor + 1;
      return;
    }
    this.itemsetCount++;
    this.sink(this.out, len, support);
  }

  private flushHeap(): void {
    const heap = this.heap;
    if (!heap) return;
    const order = heap.supports
      .map((_, i) => i)
      .sort((a, b) => (heap.supports[b] as number) - (heap.supports[a] as number));
    for (const i of order) {
      const items = heap.items[i] as Int32Array;
      this.itemsetCount++;
      this.sink(items, items.length, heap.supports[i] as number);
    }
  }

  /** Closed and maximal modes report one candidate per search node: the branch plus all perfect extensions. */
  private emitCandidate(len: number, support: number, hash = 0): void {
    const total = len + this.perfTop;
    for (let j = 0; j < this.perfTop; j++) this.out[len + j] = this.perfLabel[j] as number;
    const ranks = new Int32Array(total);
    ranks.set(this.branchRank.subarray(0, len));
    ranks.set(this.perfRank.subarray(0, this.perfTop), len);
    if (this.mode === MODE_CLOSED) {
      if (this.hasEqualSuperset(ranks, support, hash)) return;
      this.storeClosed(ranks, support, hash);
    } else {
      if (this.isSubsumed(ranks)) return;
      this.storeMaximal(ranks);
    }
    if (total <= this.maxLength) this.emit(total, support);
  }

  private markItems(ranks: Int32Array): number {
    const e = ++this.epoch;
    for (let i = 0; i < ranks.length; i++) this.mark[ranks[i] as number] = e;
    return e;
  }

  private containsMarked(stored: Int32Array, e: number, need: number): boolean {
    let hits = 0;
    for (let i = 0; i < stored.length; i++) {
      if (this.mark[stored[i] as number] === e && ++hits === need) return true;
    }
    return false;
  }

  /**
   * Closed check. Supersets that add a less frequent item are found earlier in the search, and a superset
   * with equal support has the same transactions, hence the same transaction hash: only that bucket is
   * searched, and the subset test inside it keeps the answer exact even if two hashes collide.
   */
  private hasEqualSuperset(ranks: Int32Array, support: number, hash: number): boolean {
    const bucket = this.closedIndex.get(hash);
    if (!bucket) return false;
    const e = this.markItems(ranks);
    for (let b = bucket.length - 1; b >= 0; b--) {
      const id = bucket[b] as number;
      if (this.storedSupport[id] !== support) continue;
      const stored = this.storedItems[id] as Int32Array;
      if (stored.length > ranks.length && this.containsMarked(stored, e, ranks.length)) return true;
    }
    return false;
  }

  private storeClosed(ranks: Int32Array, support: number, hash: number): void {
    const id = this.storedItems.length;
    this.storedItems.push(ranks);
    this.storedSupport.push(support);
    const bucket = this.closedIndex.get(hash);
    if (bucket) bucket.push(id);
    else this.closedIndex.set(hash, [id]);
  }

  /** Maximal check: is the candidate inside a maximal itemset already found (all of its supersets come first)? */
  private isSubsumed(ranks: Int32Array): boolean {
    if (ranks.length === 0) return false;
    let shortest: number[] | undefined;
    for (let i = 0; i < ranks.length; i++) {
      const list = this.maximalByItem[ranks[i] as number];
      if (!list) return false;
      if (!shortest || list.length < shortest.length) shortest = list;
    }
    if (!shortest) return false;
    const e = this.markItems(ranks);
    for (let b = shortest.length - 1; b >= 0; b--) {
      const stored = this.storedItems[shortest[b] as number] as Int32Array;
      if (stored.length >= ranks.length && this.containsMarked(stored, e, ranks.length)) return true;
    }
    return false;
  }

  /** Look-ahead pruning for maximal mode: skip a subtree whose every item fits in a known maximal itemset. */
  private isSubsumedWith(len: number, hb: number, it: number, newK: number): boolean {
    const ranks = new Int32Array(len + this.perfTop + newK);
    ranks.set(this.branchRank.subarray(0, len));
    ranks.set(this.perfRank.subarray(0, this.perfTop), len);
    let p = len + this.perfTop;
    for (let j = 0; j < it; j++) if ((this.map[j] as number) >= 0) ranks[p++] = this.hRank[hb + j] as number;
    return this.isSubsumed(ranks);
  }

  private storeMaximal(ranks: Int32Array): void {
    const id = this.storedItems.length;
    this.storedItems.push(ranks);
    for (let i = 0; i < ranks.length; i++) {
      const r = ranks[i] as number;
      const list = this.maximalByItem[r];
      if (list) list.push(id);
      else this.maximalByItem[r] = [id];
    }
  }
}

/** Transactions after renumbering, sorting and merging, ready for the top-level tree. */
interface PreparedDatabase {
  /** Distinct rows back to back in lexicographic order, each a rank list sorted ascending. */
  rowItems: Int32Array;
  /** rows + 1 offsets into rowItems. */
  rowStart: Int32Array;
  /** How many identical transactions each row stands for. */
  weights: Int32Array;
  /** Closed mode: a random hash per row, summed along the tree to fingerprint transaction sets. */
  hashes: Int32Array;
  rows: number;
  itemSupport: Int32Array;
  itemHash: Int32Array;
  /** Per rank: the sum over its occurrences of their positions in their rows (its prefix items). */
  pathLength: Float64Array;
  /** Per rank: the number of rows that contain it. */
  rowCount: Int32Array;
  /**
   * Whether the top level runs on rows (loadTopRows) rather than a tree: when rows share few prefixes,
   * scanning them costs about as many steps as walking the tree, and the steps are sequential.
   */
  sparse: boolean;
}

/** Runs of at most this many rows tied on their packed prefix are sorted by insertion. */
const SMALL_RUN = 16;

/**
 * Sorts rows lexicographically. Rows are keyed by their first few ranks packed into one float (with the
 * row's position in the low digits), so the built-in typed-array sort does almost all of the work, fast
 * even before V8 has optimised anything; rows that tie on the packed ranks and go on are sorted the same
 * way on their next ranks, or by insertion when only a few tie.
 */
function sortRows(
  flat: Int32Array,
  starts: Int32Array,
  lengths: Int32Array,
  rows: number,
  k: number,
): Int32Array {
  const order = new Int32Array(rows);
  const keys = new Float64Array(rows);
  const moved = new Int32Array(rows);
  const radix = k + 1;
  const compare = (a: number, b: number, depth: number): number => {
    let i = (starts[a] as number) + depth;
    let j = (starts[b] as number) + depth;
    const ea = (starts[a] as number) + (lengths[a] as number);
    const eb = (starts[b] as number) + (lengths[b] as number);
    while (i < ea && j < eb) {
      const d = (flat[i] as number) - (flat[j] as number);
      if (d !== 0) return d;
      i++;
      j++;
    }
    return ea - i - (eb - j);
  };
  // Runs still to sort, as (start, end, depth): order[start, end) agrees on its first `depth` ranks.
  const pending: number[] = rows > 1 ? [0, rows, 0] : [];
  while (pending.length > 0) {
    const depth = pending.pop() as number;
    const hi = pending.pop() as number;
    const lo = pending.pop() as number;
    const n = hi - lo;
    // Only the whole table starts at depth 0, in its own order: row o is at position o.
    const whole = depth === 0;
    let width = 1;
    while (width < 6 && radix ** (width + 1) * n < 2 ** 52) width++;
    for (let o = lo; o < hi; o++) {
      const t = whole ? o : (order[o] as number);
      const start = (starts[t] as number) + depth;
      const len = (lengths[t] as number) - depth;
      let key = 0;
      for (let i = 0; i < width; i++) key = key * radix + (i < len ? (flat[start + i] as number) + 1 : 0);
      keys[o] = key * n + (o - lo);
    }
    keys.subarray(lo, hi).sort();
    // Each key becomes its packed ranks times n (equal for rows tied on them) once its position is read.
    for (let o = lo; o < hi; o++) {
      const key = keys[o] as number;
      const at = key % n;
      if (whole) order[o] = at;
      else moved[o] = order[lo + at] as number;
      keys[o] = key - at;
    }
    if (!whole) order.set(moved.subarray(lo, hi), lo);
    const next = depth + width;
    let runStart = lo;
    let runKey = keys[lo] as number;
    for (let o = lo + 1; o <= hi; o++) {
      const key = o < hi ? (keys[o] as number) : -1;
      if (key === runKey) continue;
      if (o - runStart > 1) {
        let needs = false;
        for (let i = runStart; i < o && !needs; i++) needs = (lengths[order[i] as number] as number) > next;
        if (needs && o - runStart > SMALL_RUN) pending.push(runStart, o, next);
        else if (needs) {
          for (let i = runStart + 1; i < o; i++) {
            const t = order[i] as number;
            let j = i;
            while (j > runStart && compare(order[j - 1] as number, t, next) > 0) {
              order[j] = order[j - 1] as number;
              j--;
            }
            order[j] = t;
          }
        }
      }
      runStart = o;
      runKey = key;
    }
  }
  return order;
}

/**
 * Item ids at or above this, and above DENSE_ID_FACTOR times the number of item occurrences, are
 * renumbered densely before mining rather than used to index arrays.
 */
const HUGE_ID = 1 << 24;
const DENSE_ID_FACTOR = 8;

/**
 * Everything before the search: supports, renumbering, sorted and merged rows. Returns undefined when
 * item ids are too sparse to index arrays by (the caller renumbers them first). Each phase is one plain
 * loop over typed arrays: this runs once per mine, mostly before V8 has optimised it.
 */
function prepare(
  table: TransactionTable,
  minSupport: number,
  closed: boolean,
): { db: PreparedDatabase; labels: Int32Array; k: number; topPerfect: Int32Array } | undefined {
  const { items, offsets } = table;
  const n = offsets.length - 1;

  // Item supports, counting an item once per transaction even when it is listed twice (seen holds the
  // last transaction + 1 that counted it). The arrays grow with the largest id met, which also checks
  // the ids without a separate pass.
  let universe = 1024;
  let support = new Int32Array(universe);
  let seen = new Int32Array(universe);
  for (let t = 0; t < n; t++) {
    const end = offsets[t + 1] as number;
    const stamp = t + 1;
    for (let i = offsets[t] as number; i < end; i++) {
      const v = items[i] as number;
      if (v >= universe || v < 0) {
        if (v < 0) throw new RangeError(`items must be non-negative, got ${v}`);
        if (v >= HUGE_ID && v >= DENSE_ID_FACTOR * items.length) return undefined;
        universe = Math.max(v + 1, universe * 2);
        const grownSupport = new Int32Array(universe);
        grownSupport.set(support);
        support = grownSupport;
        const grownSeen = new Int32Array(universe);
        grownSeen.set(seen);
        seen = grownSeen;
      }
      if (seen[v] !== stamp) {
        seen[v] = stamp;
        support[v] = (support[v] as number) + 1;
      }
    }
  }

  // Renumber frequent items by descending support: frequent items near the root give a compact tree.
  // Items in every transaction are perfect extensions of the empty prefix: they get the last ranks and
  // stay out of the tree.
  const frequent: number[] = [];
  for (let v = 0; v < universe; v++) if ((support[v] as number) >= minSupport) frequent.push(v);
  frequent.sort((a, b) => (support[b] as number) - (support[a] as number) || a - b);
  const f = frequent.length;
  let perfectCount = 0;
  while (perfectCount < f && support[frequent[perfectCount] as number] === n) perfectCount++;
  const k = f - perfectCount;
  const rank = new Int32Array(universe).fill(-1);
  const labels = new Int32Array(f);
  const topPerfect = new Int32Array(perfectCount);
  for (let i = 0; i < f; i++) {
    const r = i < perfectCount ? k + i : i - perfectCount;
    const v = frequent[i] as number;
    rank[v] = r;
    labels[r] = v;
    if (i < perfectCount) topPerfect[i] = r;
  }

  // Rows of tree ranks, deduplicated and sorted (insertion sort: rows are short).
  const flat = new Int32Array(items.length);
  const starts = new Int32Array(n);
  const lengths = new Int32Array(n);
  let rows = 0;
  let pos = 0;
  seen.fill(0);
  for (let t = 0; t < n; t++) {
    const start = pos;
    const end = offsets[t + 1] as number;
    const stamp = t + 1;
    for (let i = offsets[t] as number; i < end; i++) {
      const v = items[i] as number;
      const r = rank[v] as number;
      if (r < 0 || r >= k || seen[v] === stamp) continue;
      seen[v] = stamp;
      let p = pos++;
      while (p > start && (flat[p - 1] as number) > r) {
        flat[p] = flat[p - 1] as number;
        p--;
      }
      flat[p] = r;
    }
    if (pos > start) {
      starts[rows] = start;
      lengths[rows] = pos - start;
      rows++;
    }
  }

  // Sort rows and merge identical ones with a count, copying them back to back in sorted order: the
  // top tree is then built without child lookups, and the top-level row scans read memory in order.
  const order = sortRows(flat, starts, lengths, rows, k);
  const rowItems = new Int32Array(pos);
  const rowStart = new Int32Array(rows + 1);
  const weights = new Int32Array(rows);
  const hashes = new Int32Array(rows);
  const itemHash = new Int32Array(k);
  const pathLength = new Float64Array(k);
  const rowCount = new Int32Array(k);
  const random = createRandom(0x9e3779b9);
  let merged = 0;
  let used = 0;
  let prevStart = 0;
  let prevLen = -1;
  let rowSteps = 0;
  let treeSteps = 0;
  for (let o = 0; o < rows; o++) {
    const t = order[o] as number;
    const start = starts[t] as number;
    const len = lengths[t] as number;
    // The shared prefix with the previous distinct row: all of it means a duplicate; otherwise it is
    // what the tree saves over a row scan in steps of pass 1 at the top level (a tree walk visits each
    // node's ancestors, a row scan each occurrence's prefix).
    const lim = Math.min(len, prevLen);
    let shared = 0;
    while (shared < lim && flat[start + shared] === rowItems[prevStart + shared]) shared++;
    if (shared === len && len === prevLen) {
      weights[merged - 1] = (weights[merged - 1] as number) + 1;
      continue;
    }
    const rowWalk = (len * (len - 1)) / 2;
    rowSteps += rowWalk;
    treeSteps += rowWalk - (shared * (shared - 1)) / 2;
    const h = closed ? random() : 0;
    for (let i = 0; i < len; i++) {
      const r = flat[start + i] as number;
      rowItems[used + i] = r;
      pathLength[r] = (pathLength[r] as number) + i;
      rowCount[r] = (rowCount[r] as number) + 1;
      if (closed) itemHash[r] = ((itemHash[r] as number) + h) | 0;
    }
    hashes[merged] = h;
    weights[merged] = 1;
    prevStart = used;
    prevLen = len;
    used += len;
    merged++;
    rowStart[merged] = used;
  }
  const itemSupport = new Int32Array(k);
  for (let r = 0; r < k; r++) itemSupport[r] = support[labels[r] as number] as number;
  const db: PreparedDatabase = {
    rowItems,
    rowStart: rowStart.subarray(0, merged + 1),
    weights,
    hashes,
    rows: merged,
    itemSupport,
    itemHash,
    pathLength,
    rowCount,
    sparse: rowSteps <= ROWS_MAX_EXTRA_STEPS * treeSteps,
  };
  return { db, labels, k, topPerfect };
}

/**
 * Mines frequent itemsets from a TransactionTable (what the FIMI parser returns), streaming each itemset
 * to `onItemset`. This is the fast path: items in each reported itemset are the caller's integer ids,
 * least frequent first, in a buffer reused between calls.
 */
export function mineTransactionTable(
  table: TransactionTable,
  options: MiningOptions,
  onItemset: IntegerItemsetSink,
): MiningSummary {
  checkOptions(options);
  const n = table.offsets.length - 1;
  const minSupport = resolveMinSupport(options.minSupport, n);
  const prepared = prepare(table, minSupport, options.mode === 'closed');
  if (prepared === undefined) {
    // Sparse huge ids: renumber them densely first rather than allocate arrays indexed by id.
    const items = table.items;
    const ids = new Map<number, number>();
    const original: number[] = [];
    const dense = new Int32Array(items.length);
    for (let i = 0; i < items.length; i++) {
      const v = items[i] as number;
      if (v < 0) throw new RangeError(`items must be non-negative, got ${v}`);
      let id = ids.get(v);
      if (id === undefined) {
        id = original.length;
        ids.set(v, id);
        original.push(v);
      }
      dense[i] = id;
    }
    const buffer = new Int32Array(original.length);
    return mineTransactionTable({ items: dense, offsets: table.offsets }, options, (ids, length, support) => {
      for (let i = 0; i < length; i++) buffer[i] = original[ids[i] as number] as number;
      onItemset(buffer, length, support);
    });
  }
  const { db, labels, k, topPerfect } = prepared;
  const miner = new FpGrowthMiner(labels, minSupport, options, onItemset);
  if (k > 0 && db.sparse) miner.loadTopRows(db);
  else if (k > 0) miner.buildTopTree(db);
  miner.run(n, k, topPerfect);
  return {
    transactionCount: n,
    minSupportCount: minSupport,
    frequentItemCount: labels.length,
    itemsetCount: miner.itemsetCount,
  };
}

/**
 * Mines frequent itemsets from arrays of integer items; see mineTransactionTable. Accepts the shape
 * most callers (and other libraries) use, at the cost of one copy into a TransactionTable.
 */
export function mineIntegerItemsets(
  transactions: IntegerTransactions,
  options: MiningOptions,
  onItemset: IntegerItemsetSink,
): MiningSummary {
  return mineTransactionTable(toTransactionTable(transactions), options, onItemset);
}

/**
 * Mines frequent itemsets from transactions of string items such as `agent:reviewer` or `tool:github`.
 * Strings are mapped to integers once, the integer engine runs, and each itemset comes back as a sorted
 * array of strings, one callback per itemset, so results can be streamed to a client or a database.
 */
export function mineItemsets(
  transactions: readonly (readonly string[])[],
  options: MiningOptions,
  onItemset: ItemsetSink,
): MiningSummary {
  const ids = new Map<string, number>();
  const names: string[] = [];
  const encoded = transactions.map((t) =>
    t.map((name) => {
      let id = ids.get(name);
      if (id === undefined) {
        id = names.length;
        ids.set(name, id);
        names.push(name);
      }
      return id;
    }),
  );
  return mineIntegerItemsets(encoded, options, (items, length, support) => {
    const out = new Array<string>(length);
    for (let i = 0; i < length; i++) out[i] = names[items[i] as number] as string;
    out.sort();
    onItemset(out, support);
  });
}
