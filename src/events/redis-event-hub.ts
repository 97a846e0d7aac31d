import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisConnection } from '../lib/redis/redis-connection.ts';
import type { ComponentHealth } from '../lifecycle.ts';
import type { EventHub } from './event-hub.ts';

export interface RedisEventHubOptions {
  redis: RedisConnection;
  /** Key prefix shared with the queue (`QUEUE_PREFIX`): processes see each other only under the same one. */
  prefix: string;
  log: Logger;
}

/**
 * The event hub across processes: Redis pub/sub, one channel per topic
 * (`<prefix>:agent-platform:events:<topic>`, message `<origin> <id>`), ids only, as the
 * local hub. A process delivers its own publishes to its own listeners directly (so they
 * never depend on Redis) and ignores their echo from Redis.
 *
 * Subscriptions use a dedicated connection (a subscribed connection can run nothing else),
 * subscribed to a topic while this process has a listener for it. After that connection is
 * lost and back, it subscribes again and calls every listener once with id 0: notifications
 * published meanwhile are gone, and a reader reads after its last id on any notification,
 * so this wake-up makes it catch up.
 */
export function createRedisEventHub(options: RedisEventHubOptions): EventHub {
  const { redis, log } = options;
  const channelPrefix = `${options.prefix}:agent-platform:events:`;
  const origin = randomUUID();
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  const listeners = new Map<string, number>();
  let subscriber: Redis | undefined;
  let connectedBefore = false;
  let publishFailedAt = 0;

  const channel = (topic: string) => channelPrefix + topic;

  function deliver(topic: string, id: number): void {
    for (const listener of emitter.listeners(topic) as ((id: number) => void)[]) {
      try {
        listener(id);
      } catch (error) {
        log.error({ err: error, topic }, 'event hub listener failed');
      }
    }
  }

  async function resubscribe(): Promise<void> {
    const topics = [...listeners.keys()];
    try {
      if (topics.length > 0) await subscriber?.subscribe(...topics.map(channel));
    } catch (error) {
      log.warn(
        { reason: (error as Error).message },
        'event hub could not subscribe again; retrying on the next reconnect',
      );
      return;
    }
    if (connectedBefore) for (const topic of topics) deliver(topic, 0);
    connectedBefore = true;
  }

  return {
    name: 'Event hub',

    async start() {
      subscriber = redis.duplicate('events', { waitForReconnect: true, resubscribe: false });
      subscriber.on('ready', () => void resubscribe());
      subscriber.on('message', (from: string, message: string) => {
        if (!from.startsWith(channelPrefix)) return;
        const [sender, text] = message.split(' ');
        const id = Number(text);
        if (sender === origin || !Number.isSafeInteger(id)) return;
        deliver(from.slice(channelPrefix.length), id);
      });
    },

    async stop() {
      emitter.removeAllListeners();
      listeners.clear();
      subscriber?.disconnect();
      subscriber = undefined;
    },

    async health(): Promise<ComponentHealth> {
      return subscriber?.status === 'ready'
        ? { name: 'Event hub', status: 'up', detail: 'Redis pub/sub' }
        : {
            name: 'Event hub',
            status: 'down',
            detail: `subscriber not connected (${subscriber?.status ?? 'not started'})`,
          };
    },

    publish(topic, id) {
      deliver(topic, id);
      if (!redis.isReady()) return;
      redis.client.publish(channel(topic), `${origin} ${id}`).catch((error: Error) => {
        // Readers in other processes catch up on their next notification or poll; say so once a minute.
        if (Date.now() - publishFailedAt < 60_000) return;
        publishFailedAt = Date.now();
        log.warn({ reason: error.message }, 'event hub could not publish to Redis');
      });
    },

    subscribe(topic, listener) {
      emitter.on(topic, listener);
      const count = (listeners.get(topic) ?? 0) + 1;
      listeners.set(topic, count);
      if (count === 1 && subscriber?.status === 'ready') {
        subscriber.subscribe(channel(topic)).catch(() => {
          // The next reconnect subscribes every topic with listeners again.
        });
      }
      let removed = false;
      return () => {
        if (removed) return;
        removed = true;
        emitter.off(topic, listener);
        const left = (listeners.get(topic) ?? 1) - 1;
        if (left > 0) {
          listeners.set(topic, left);
          return;
        }
        listeners.delete(topic);
        if (subscriber?.status === 'ready') subscriber.unsubscribe(channel(topic)).catch(() => {});
      };
    },
  };
}
