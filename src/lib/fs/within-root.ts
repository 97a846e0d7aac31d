import fs from 'node:fs/promises';
import path from 'node:path';

/** Why a requested path was refused; the message is safe to show (it names no server path). */
export class PathOutsideRootError extends Error {
  readonly reason: 'absolute' | 'outside_root' | 'no_root' | 'not_found' | 'not_a_directory' | 'not_a_file';

  constructor(reason: PathOutsideRootError['reason'], message: string) {
    super(message);
    this.name = 'PathOutsideRootError';
    this.reason = reason;
  }
}

/**
 * Resolves `requested` (a path relative to `root`, as a client names it) to a real path inside
 * `root`, or throws. `..` segments, absolute paths and symbolic links that lead out of the root
 * are refused: the check is made on the real path, after every link is followed, so a link
 * planted inside the root cannot reach `/etc`. `root` must be absolute.
 */
export async function resolveWithinRoot(
  root: string,
  requested: string,
  expect: 'directory' | 'file' | 'any' = 'any',
): Promise<string> {
  if (path.isAbsolute(requested) || /^[A-Za-z]:[\\/]/.test(requested)) {
    throw new PathOutsideRootError('absolute', 'the path must be relative to the configured sources root');
  }
  let realRoot: string;
  try {
    realRoot = await fs.realpath(root);
  } catch {
    throw new PathOutsideRootError(
      'no_root',
      'no server-side folder has been provisioned for this tenant under the sources root (the operator creates it)',
    );
  }
  const candidate = path.resolve(realRoot, requested);
  if (!isInside(realRoot, candidate)) {
    throw new PathOutsideRootError('outside_root', 'the path leads outside the configured sources root');
  }
  let real: string;
  try {
    real = await fs.realpath(candidate);
  } catch {
    throw new PathOutsideRootError(
      'not_found',
      'no such file or directory under the configured sources root',
    );
  }
  if (!isInside(realRoot, real)) {
    throw new PathOutsideRootError('outside_root', 'the path leads outside the configured sources root');
  }
  if (expect !== 'any') {
    const stat = await fs.stat(real);
    if (expect === 'directory' && !stat.isDirectory()) {
      throw new PathOutsideRootError('not_a_directory', 'the path is not a directory');
    }
    if (expect === 'file' && !stat.isFile())
      throw new PathOutsideRootError('not_a_file', 'the path is not a file');
  }
  return real;
}

/**
 * The subtree of `SOURCES_ROOT` one tenant reads: `<root>/<tenant id>`. A tenant is the unit an
 * operator provisions (its workspaces share its folders); a tenant id is a UUID, so it names
 * exactly one folder directly below the root, never a path.
 */
export function tenantSourcesRoot(root: string, tenantId: string): string {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(tenantId)) {
    throw new Error('a tenant id is a UUID');
  }
  return path.join(root, tenantId.toLowerCase());
}

/** True when `target` is `root` itself or lies below it (both absolute and normalised). */
export function isInside(root: string, target: string): boolean {
  const relative = path.relative(root, target);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}
