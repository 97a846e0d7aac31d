import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { Component, ComponentHealth } from '../../lifecycle.ts';

/**
 * ioredis, loaded when a connection is made: a process without REDIS_URL never loads it (about
 * 120 ms of start-up, bench/RESULTS.md). A CommonJS package, so `require` loads it synchronously.
 */
const loadIoredis = (): typeof import('ioredis') => createRequire(import.meta.url)('ioredis');

/**
 * The process's connection to Redis, as a component (`start`, `stop`, `health`).
 *
 * Redis may go away and come back at any time (a restart, a failover, a network cut): the
 * process must neither crash nor hang. So every connection made here
 *  - reconnects forever (capped exponential backoff with jitter),
 *  - has an `error` listener (an unhandled `error` event would kill the process), logging
 *    one warning when the connection is lost and one line when it is back, not one per retry;
 *
 * and the two kinds of connection differ in what a command does while Redis is away:
 *  - `client` (commands whose caller must learn at once: enqueue, publish, health) has no
 *    offline queue: a command fails fast with a clear error instead of waiting forever;
 *  - `duplicate({ waitForReconnect: true })` (BullMQ workers, the event hub's subscriber)
 *    holds commands until the connection is back, which is what a consumer loop wants.
 *
 * The URL may carry a password: it is never logged; logs name the host and port only.
 */
export interface RedisConnection extends Component {
  /** The fail-fast command connection (no offline queue, one retry per command). */
  readonly client: Redis;
  /** True while `client` is connected and ready for commands. */
  isReady(): boolean;
  /**
   * Another connection to the same server with the same reconnect policy and logging.
   * `waitForReconnect` holds commands while Redis is away (BullMQ's blocking connections
   * require it). `resubscribe: false` leaves re-subscribing after a reconnect to the caller,
   * who then knows when it happened. The caller owns the connection and closes it; `stop()`
   * closes any left open.
   */
  duplicate(purpose: string, options: { waitForReconnect: boolean; resubscribe?: boolean }): Redis;
}

export interface RedisConnectionOptions {
  /** `redis://` or `rediss://` URL, with optional user, password and database number. */
  url: string;
  log: Logger;
  /** How long `health()` waits for PING before it reports `down` (1 s). */
  pingTimeoutMs?: number;
  /** How long `start()` waits for the first connection before it goes on without it (5 s). */
  connectTimeoutMs?: number;
}

/** Reconnect delay: 100 ms doubling to a 2 s cap, plus up to 25 % jitter so processes do not reconnect in step. */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(100 * 2 ** Math.max(0, attempt - 1), 2000);
  return Math.round(base + base * 0.25 * random());
}

/**
 * Opens nothing until `start()`. A Redis that is down at start-up does not stop the process:
 * `start()` waits up to `connectTimeoutMs`, logs, and the connection keeps retrying; the
 * health report says `down` meanwhile.
 */
export function createRedisConnection(options: RedisConnectionOptions): RedisConnection {
  const { log } = options;
  const pingTimeoutMs = options.pingTimeoutMs ?? 1000;
  const parsed = new URL(options.url);
  const where = `${parsed.hostname}:${parsed.port || '6379'}`;
  const base: RedisOptions = {
    lazyConnect: true,
    retryStrategy: (attempt) => reconnectDelayMs(attempt),
    // Redis answers in well under a millisecond; a connect that hangs is a dead network path.
    connectTimeout: 5000,
  };
  const client = new (loadIoredis().Redis)(options.url, {
    ...base,
    connectionName: 'agent-platform:commands',
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 5000,
    // Commands issued in one tick (a statement's run and feed notifications, many runs' at
    // once under load) leave in one write: on this kind of machine a socket write costs more
    // than the command. Only here: the duplicates carry blocking commands, which must not.
    enableAutoPipelining: true,
  });
  watch(client, 'commands');
  const duplicates = new Set<Redis>();
  let stopped = false;

  /** Logs a lost connection once per outage and its return once; never crashes on `error`. */
  function watch(connection: Redis, purpose: string): void {
    let lost = false;
    connection.on('error', (error: Error) => {
      if (stopped || lost) return;
      lost = true;
      log.warn(
        { redis: where, connection: purpose, reason: error.message },
        'Redis connection lost; reconnecting',
      );
    });
    connection.on('close', () => {
      if (!stopped && !lost && connection.status !== 'end') {
        lost = true;
        log.warn(
          { redis: where, connection: purpose, reason: 'closed' },
          'Redis connection lost; reconnecting',
        );
      }
    });
    connection.on('ready', () => {
      if (lost) log.info({ redis: where, connection: purpose }, 'Redis connection is back');
      lost = false;
    });
  }

  async function close(connection: Redis): Promise<void> {
    if (connection.status === 'end') return;
    // QUIT lets replies in flight arrive; a connection that is away cannot take it.
    if (connection.status === 'ready') {
      await Promise.race([connection.quit().catch(() => {}), delay(1000)]);
    }
    connection.disconnect();
  }

  return {
    name: 'Redis',
    client,
    isReady: () => client.status === 'ready',

    duplicate(purpose, { waitForReconnect, resubscribe = true }) {
      const connection = client.duplicate({
        ...base,
        lazyConnect: false,
        autoResubscribe: resubscribe,
        connectionName: `agent-platform:${purpose}`,
        enableOfflineQueue: waitForReconnect,
        maxRetriesPerRequest: waitForReconnect ? null : 1,
        commandTimeout: undefined,
        enableAutoPipelining: false,
      });
      watch(connection, purpose);
      duplicates.add(connection);
      connection.once('end', () => duplicates.delete(connection));
      return connection;
    },

    async start() {
      stopped = false;
      const connected = client.connect().then(
        () => true,
        () => false,
      );
      const ready = await Promise.race([
        connected,
        delay(options.connectTimeoutMs ?? 5000).then(() => false),
      ]);
      if (!ready) {
        log.error(
          { redis: where },
          'Redis is not reachable; starting without it and retrying in the background (jobs cannot be enqueued meanwhile)',
        );
      }
    },

    async stop() {
      stopped = true;
      await Promise.all([...duplicates].map(close));
      await close(client);
    },

    async health(): Promise<ComponentHealth> {
      if (client.status !== 'ready') {
        return { name: 'Redis', status: 'down', detail: `not connected (${client.status})` };
      }
      const started = performance.now();
      try {
        const answer = await withTimeout(
          client.ping(),
          pingTimeoutMs,
          `no answer to PING within ${pingTimeoutMs} ms`,
        );
        if (answer !== 'PONG') throw new Error('unexpected answer to PING');
        return {
          name: 'Redis',
          status: 'up',
          latency_ms: Math.round((performance.now() - started) * 10) / 10,
        };
      } catch (error) {
        return { name: 'Redis', status: 'down', detail: (error as Error).message };
      }
    },
  };
}

/** `promise`, or a rejection with `message` after `ms`; the timer never outlives the race. */
export function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
