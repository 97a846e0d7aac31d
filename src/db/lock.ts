import fs from 'node:fs';
import path from 'node:path';

/** What a lock file says about its holder; `url` lets tools reach a running service. */
export interface LockHolder {
  pid: number;
  started_at: string;
  [key: string]: unknown;
}

export interface DirectoryLock {
  file: string;
  /** Adds facts to the lock file (the URL once the server listens). */
  update(info: Record<string, unknown>): void;
  release(): void;
}

/** Thrown when another live process holds the directory. */
export class DirectoryLockedError extends Error {
  readonly directory: string;
  readonly holder: LockHolder;

  constructor(directory: string, holder: LockHolder) {
    super(
      `the database directory ${directory} is in use by process ${holder.pid} (since ${holder.started_at}); ` +
        'stop that process or point DATA_DIR elsewhere — two processes must never open one PGlite directory',
    );
    this.name = 'DirectoryLockedError';
    this.directory = directory;
    this.holder = holder;
  }
}

const LOCK_NAME = 'pglite.lock';

/** Reads the current holder of `dataDir`, or undefined when nobody alive holds it. */
export function readLockHolder(dataDir: string): LockHolder | undefined {
  const file = path.join(dataDir, LOCK_NAME);
  let holder: LockHolder;
  try {
    holder = JSON.parse(fs.readFileSync(file, 'utf8')) as LockHolder;
  } catch {
    return undefined;
  }
  return isAlive(holder.pid) ? holder : undefined;
}

/**
 * Takes `DATA_DIR/pglite.lock` with an exclusive create. A lock left by a process that
 * died (its pid no longer runs) is stale and taken over.
 */
export function acquireDirectoryLock(dataDir: string, info: Record<string, unknown> = {}): DirectoryLock {
  const file = path.join(dataDir, LOCK_NAME);
  let content: LockHolder = { pid: process.pid, started_at: new Date().toISOString(), ...info };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(content), { flag: 'wx', mode: 0o600 });
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        process.off('exit', release);
        try {
          const current = JSON.parse(fs.readFileSync(file, 'utf8')) as LockHolder;
          if (current.pid === process.pid) fs.unlinkSync(file);
        } catch {
          // already gone
        }
      };
      process.on('exit', release);
      return {
        file,
        update(extra) {
          content = { ...content, ...extra };
          fs.writeFileSync(file, JSON.stringify(content), { mode: 0o600 });
        },
        release,
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readLockHolder(dataDir);
      if (holder) throw new DirectoryLockedError(dataDir, holder);
      fs.rmSync(file, { force: true });
    }
  }
  throw new Error(`could not take the lock ${file}`);
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
