import { Worker } from 'node:worker_threads';
import { ExtractionError } from './document.ts';
import type { ChunkingJob, ExtractionJob, ExtractionMessage, ExtractionOutcome } from './extract-worker.ts';

/**
 * Worker threads that read files, at most `size` at a time, each file under a time limit and each
 * thread under a memory limit. Threads are kept between files (starting one and loading the
 * parsers costs more than reading a typical file) and ended after `idleMs` without work; an idle
 * thread never keeps the process alive. A thread whose file runs out of time or memory, or whose
 * caller aborts, is ended (a parse in progress cannot be interrupted any other way) and replaced
 * by the next file that needs one. Files beyond `size` wait their turn; the time limit counts
 * from when the thread starts reading the file: a new thread first loads the parsers, which
 * is the service's own cost, bounded separately (`BOOT_TIMEOUT_MS`).
 */

export interface ExtractionPoolOptions {
  /** Files read at the same time. */
  size: number;
  /** Wall-clock time a file may take before it is abandoned as `corrupt`. */
  timeoutMs: number;
  /** Each thread's old-generation heap (V8 `maxOldGenerationSizeMb`); a file that needs more is `corrupt`. */
  memoryMb: number;
  /** How long a thread waits for another file before it ends. */
  idleMs: number;
}

const WORKER_URL = new URL('./extract-worker.ts', import.meta.url);

/** How long a thread may take to start and take a file; far beyond what starting takes, even under load. */
const BOOT_TIMEOUT_MS = 30_000;

interface PooledWorker {
  worker: Worker;
  idleTimer?: NodeJS.Timeout;
}

export class ExtractionPool {
  private readonly options: ExtractionPoolOptions;
  private readonly idle: PooledWorker[] = [];
  private readonly busy = new Set<PooledWorker>();
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  private nextId = 0;
  private closed = false;

  constructor(options: ExtractionPoolOptions) {
    this.options = options;
  }

  /** Reads (or chunks) one file in a worker; `displayName` names it in limit messages. */
  async run(
    job: ExtractionJob | ChunkingJob,
    displayName: string,
    signal?: AbortSignal,
  ): Promise<ExtractionOutcome> {
    await this.takeTurn(signal);
    try {
      return await this.runOnWorker(this.takeWorker(), job, displayName, signal);
    } finally {
      this.running -= 1;
      this.waiting.shift()?.();
    }
  }

  /** Ends every thread; files being read or waiting are rejected, and so are later `run` calls. */
  async close(): Promise<void> {
    this.closed = true;
    for (const start of this.waiting.splice(0)) start();
    const all = [...this.idle.splice(0), ...this.busy];
    await Promise.all(all.map((pooled) => this.end(pooled)));
  }

  private async takeTurn(signal: AbortSignal | undefined): Promise<void> {
    if (this.closed) throw new Error('the document extraction pool is closed');
    signal?.throwIfAborted();
    if (this.running < this.options.size) {
      this.running += 1;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const index = this.waiting.indexOf(start);
        if (index !== -1) this.waiting.splice(index, 1);
        reject(signal?.reason);
      };
      const start = () => {
        signal?.removeEventListener('abort', onAbort);
        this.running += 1;
        resolve();
      };
      this.waiting.push(start);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    if (this.closed) {
      this.running -= 1;
      throw new Error('the document extraction pool is closed');
    }
  }

  private takeWorker(): PooledWorker {
    let pooled = this.idle.pop();
    if (pooled) {
      clearTimeout(pooled.idleTimer);
      pooled.worker.ref();
    } else {
      const resourceLimits = { maxOldGenerationSizeMb: this.options.memoryMb };
      const worker = new Worker(WORKER_URL, { resourceLimits });
      // A thread's errors are reported to the file it is reading (runOnWorker); this listener
      // only keeps one that arrives between files from being an unhandled 'error' event.
      worker.on('error', () => undefined);
      pooled = { worker };
    }
    this.busy.add(pooled);
    return pooled;
  }

  private release(pooled: PooledWorker): void {
    this.busy.delete(pooled);
    if (this.closed) {
      void this.end(pooled);
      return;
    }
    pooled.worker.unref();
    pooled.idleTimer = setTimeout(() => {
      const index = this.idle.indexOf(pooled);
      if (index !== -1) this.idle.splice(index, 1);
      void this.end(pooled);
    }, this.options.idleMs);
    pooled.idleTimer.unref();
    this.idle.push(pooled);
  }

  private async end(pooled: PooledWorker): Promise<void> {
    this.busy.delete(pooled);
    clearTimeout(pooled.idleTimer);
    await pooled.worker.terminate();
  }

  private runOnWorker(
    pooled: PooledWorker,
    job: ExtractionJob | ChunkingJob,
    displayName: string,
    signal: AbortSignal | undefined,
  ): Promise<ExtractionOutcome> {
    const { worker } = pooled;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      let settled = false;
      /** Settles once; a worker that answered goes back to the pool, any other is ended. */
      const settle = (reusable: boolean, finish: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        if (reusable) this.release(pooled);
        else void this.end(pooled);
        finish();
      };
      const onMessage = (message: ExtractionMessage) => {
        if (message.id !== id) return;
        if ('started' in message) {
          clearTimeout(timer);
          timer = startTimer();
        } else settle(true, () => resolve(message.outcome));
      };
      const onError = (error: Error & { code?: string }) => {
        if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
          const message = `${displayName} needs more than ${this.options.memoryMb} MB of memory to read`;
          settle(false, () => reject(new ExtractionError('corrupt', message)));
        } else settle(false, () => reject(error));
      };
      const onExit = (code: number) =>
        settle(false, () => reject(new Error(`the document extraction worker stopped (exit code ${code})`)));
      const onAbort = () => settle(false, () => reject(signal?.reason));
      const startTimer = () =>
        setTimeout(() => {
          const seconds = Math.round(this.options.timeoutMs / 100) / 10;
          const message = `${displayName} took longer than ${seconds} s to read`;
          settle(false, () => reject(new ExtractionError('corrupt', message)));
        }, this.options.timeoutMs);
      let timer = setTimeout(() => {
        const message = `the document extraction worker did not start within ${BOOT_TIMEOUT_MS / 1000} s`;
        settle(false, () => reject(new Error(message)));
      }, BOOT_TIMEOUT_MS);
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      signal?.addEventListener('abort', onAbort, { once: true });
      worker.postMessage({ id, job });
    });
  }
}
