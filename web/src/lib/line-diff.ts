/** One row of a side-by-side diff: a line kept, removed, added, or changed (removed beside added). */
export interface DiffRow {
  kind: 'same' | 'removed' | 'added' | 'changed';
  /** 1-based line numbers, when the side has a line. */
  leftNumber?: number;
  rightNumber?: number;
  left?: string;
  right?: string;
}

type Op = { kind: 'same' | 'removed' | 'added'; left?: number; right?: number };

/**
 * A line diff by longest common subsequence (O(n·m) table; policies are small), laid out side by
 * side: a run of removed lines next to the run of added lines that replaces it is paired row by
 * row as `changed`.
 */
export function lineDiff(before: string, after: string): DiffRow[] {
  const a = before.split('\n');
  const b = after.split('\n');
  const n = a.length;
  const m = b.length;
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i -= 1) {
    const row = lcs[i] as Uint32Array;
    const below = lcs[i + 1] as Uint32Array;
    for (let j = m - 1; j >= 0; j -= 1) {
      row[j] =
        a[i] === b[j] ? (below[j + 1] as number) + 1 : Math.max(below[j] as number, row[j + 1] as number);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      ops.push({ kind: 'same', left: i, right: j });
      i += 1;
      j += 1;
    } else if (j < m && (i >= n || (lcs[i]?.[j + 1] ?? 0) >= (lcs[i + 1]?.[j] ?? 0))) {
      ops.push({ kind: 'added', right: j });
      j += 1;
    } else {
      ops.push({ kind: 'removed', left: i });
      i += 1;
    }
  }
  const rows: DiffRow[] = [];
  for (let k = 0; k < ops.length; ) {
    const op = ops[k] as Op;
    if (op.kind === 'same') {
      rows.push(row('same', a, b, op.left, op.right));
      k += 1;
      continue;
    }
    const removed: number[] = [];
    const added: number[] = [];
    while (k < ops.length && (ops[k] as Op).kind !== 'same') {
      const change = ops[k] as Op;
      if (change.kind === 'removed') removed.push(change.left as number);
      else added.push(change.right as number);
      k += 1;
    }
    for (let r = 0; r < Math.max(removed.length, added.length); r += 1) {
      const left = removed[r];
      const right = added[r];
      const kind =
        left !== undefined && right !== undefined ? 'changed' : left !== undefined ? 'removed' : 'added';
      rows.push(row(kind, a, b, left, right));
    }
  }
  return rows;
}

function row(kind: DiffRow['kind'], a: string[], b: string[], left?: number, right?: number): DiffRow {
  return {
    kind,
    ...(left !== undefined ? { leftNumber: left + 1, left: a[left] ?? '' } : {}),
    ...(right !== undefined ? { rightNumber: right + 1, right: b[right] ?? '' } : {}),
  };
}
