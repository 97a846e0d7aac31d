import WebSocket from 'ws';

/**
 * A real WebSocket client (`ws`) over a real port. It queues the JSON messages that arrive;
 * `next(n)` takes the next n or fails after a deadline instead of hanging. An upgrade the
 * server refuses resolves as that answer (status and problem details), as a non-browser
 * client can read it.
 */

/** Items arriving over time, taken in order. */
class Inbox<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | undefined;
  ended = false;

  push(item: T): void {
    this.items.push(item);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  /** The next `count` items; fails naming what did arrive when they do not within `ms`. */
  async next(count: number, ms = 10_000): Promise<T[]> {
    const deadline = Date.now() + ms;
    while (this.items.length < count) {
      if (this.ended) throw new Error(`the channel ended after ${this.items.length} of ${count} items`);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `only ${this.items.length} of ${count} items within ${ms} ms: ${JSON.stringify(this.items)}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    return this.items.splice(0, count);
  }

  /** True when nothing arrives within `ms` (what is already queued counts as arrived). */
  async quietFor(ms: number): Promise<boolean> {
    if (this.items.length > 0) return false;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.items.length === 0;
  }
}

export interface SocketClient {
  socket: WebSocket;
  /** The next `count` JSON messages. */
  next(count: number, ms?: number): Promise<Record<string, unknown>[]>;
  quietFor(ms: number): Promise<boolean>;
  send(message: unknown): void;
  /** Resolves with the close code and reason once the socket is closed. */
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

/** An upgrade the server answered with HTTP instead: its status and problem details. */
export interface RefusedUpgrade {
  status: number;
  contentType: string | undefined;
  problem: Record<string, unknown>;
}

/** Opens a WebSocket; resolves with the client once open, or with the refusal. */
export function openSocket(
  url: string,
  options: { headers?: Record<string, string>; autoPong?: boolean } = {},
): Promise<SocketClient | RefusedUpgrade> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: options.headers, autoPong: options.autoPong ?? true });
    const inbox = new Inbox<Record<string, unknown>>();
    const closed = new Promise<{ code: number; reason: string }>((done) => {
      socket.on('close', (code, reason) => {
        inbox.end();
        done({ code, reason: reason.toString() });
      });
    });
    socket.on('message', (data) => inbox.push(JSON.parse(data.toString())));
    socket.on('unexpected-response', (_request, response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      response.on('end', () => {
        resolve({
          status: response.statusCode ?? 0,
          contentType: response.headers['content-type'],
          problem: JSON.parse(text),
        });
        socket.terminate();
      });
    });
    socket.on('error', (error) => {
      if (socket.readyState === socket.CONNECTING) reject(error);
    });
    socket.on('open', () =>
      resolve({
        socket,
        next: (count, ms) => inbox.next(count, ms),
        quietFor: (ms) => inbox.quietFor(ms),
        send: (message) => socket.send(JSON.stringify(message)),
        closed,
        close: () => socket.close(),
      }),
    );
  });
}

/** Narrows an `openSocket` result to an open socket, failing with the refusal otherwise. */
export function opened(result: SocketClient | RefusedUpgrade): SocketClient {
  if ('status' in result)
    throw new Error(`the upgrade was refused: ${result.status} ${JSON.stringify(result.problem)}`);
  return result;
}

/** Narrows an `openSocket` result to a refusal, failing when the socket opened. */
export function refused(result: SocketClient | RefusedUpgrade): RefusedUpgrade {
  if (!('status' in result)) {
    result.close();
    throw new Error('the upgrade was accepted');
  }
  return result;
}
