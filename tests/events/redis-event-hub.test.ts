/**
 * The event hub across processes, on the machine's Redis (REDIS_URL): each hub here has its
 * own Redis connections and origin, as two processes would. Runs only with REDIS_URL set,
 * and fails (never skips) when it is set but Redis cannot be reached.
 */
import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventHub } from '../../src/events/event-hub.ts';
import { createRedisEventHub } from '../../src/events/redis-event-hub.ts';
import { createRedisConnection, type RedisConnection } from '../../src/lib/redis/redis-connection.ts';
import { captureLog } from '../helpers/test-log.ts';
import { redisUrl, testRedisClient, testRedisPrefix } from '../helpers/test-redis.ts';

const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

/** A hub as one process has it; `subscriber()` is its dedicated subscriber connection. */
async function openHub(prefix: string): Promise<{ hub: EventHub; subscriber(): Redis }> {
  const { log } = captureLog('warn');
  const redis = createRedisConnection({ url: redisUrl as string, log });
  let subscriber: Redis | undefined;
  const watched: RedisConnection = {
    ...redis,
    duplicate: (purpose, options) => {
      subscriber = redis.duplicate(purpose, options);
      return subscriber;
    },
  };
  const hub = createRedisEventHub({ redis: watched, prefix, log });
  await redis.start();
  expect(redis.isReady(), 'Redis at REDIS_URL must be reachable').toBe(true);
  await hub.start();
  await until(async () => (await hub.health()).status === 'up', 'the subscriber to connect');
  stops.push(async () => {
    await hub.stop();
    await redis.stop();
  });
  return { hub, subscriber: () => subscriber as Redis };
}

const until = (probe: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> =>
  expect.poll(probe, { timeout: ms, interval: 10, message: `timed out waiting for ${what}` }).toBe(true);

/** Subscribers Redis knows for a topic's channel. */
async function subscribers(prefix: string, topic: string): Promise<number> {
  const client = testRedisClient();
  await client.connect();
  try {
    const [, count] = (await client.pubsub('NUMSUB', `${prefix}:agent-platform:events:${topic}`)) as [
      string,
      number,
    ];
    return Number(count);
  } finally {
    client.disconnect();
  }
}

describe.runIf(redisUrl)('the Redis event hub', () => {
  it('carries ids between processes, and a process hears its own publish once', async () => {
    const prefix = testRedisPrefix();
    const a = await openHub(prefix);
    const b = await openHub(prefix);
    const heardByA: number[] = [];
    const heardByB: number[] = [];
    a.hub.subscribe('run:1', (id) => heardByA.push(id));
    b.hub.subscribe('run:1', (id) => heardByB.push(id));
    b.hub.subscribe('run:2', (id) => heardByB.push(-id));
    await until(async () => (await subscribers(prefix, 'run:1')) === 2, 'both processes to subscribe');

    a.hub.publish('run:1', 5);
    a.hub.publish('run:2', 6);
    b.hub.publish('run:1', 7);
    await until(() => heardByB.length === 3 && heardByA.length === 2, 'every delivery');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heardByB.sort()).toEqual([-6, 5, 7].sort());
    expect(heardByA).toEqual([5, 7]);
  });

  it('keeps deployments apart by prefix and stops delivering after unsubscribe', async () => {
    const prefix = testRedisPrefix();
    const a = await openHub(prefix);
    const b = await openHub(prefix);
    const elsewhere = await openHub(testRedisPrefix());
    const heard: number[] = [];
    const heardElsewhere: number[] = [];
    const unsubscribe = b.hub.subscribe('activity:w1', (id) => heard.push(id));
    elsewhere.hub.subscribe('activity:w1', (id) => heardElsewhere.push(id));
    await until(async () => (await subscribers(prefix, 'activity:w1')) === 1, 'the subscription');

    a.hub.publish('activity:w1', 1);
    await until(() => heard.length === 1, 'the delivery');
    unsubscribe();
    unsubscribe();
    await until(async () => (await subscribers(prefix, 'activity:w1')) === 0, 'Redis to forget the channel');
    a.hub.publish('activity:w1', 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(heard).toEqual([1]);
    expect(heardElsewhere).toEqual([]);
  });

  it('subscribes again after its connection is lost and wakes its listeners to catch up', async () => {
    const prefix = testRedisPrefix();
    const a = await openHub(prefix);
    const b = await openHub(prefix);
    const heard: number[] = [];
    b.hub.subscribe('run:9', (id) => heard.push(id));
    await until(async () => (await subscribers(prefix, 'run:9')) === 1, 'the subscription');

    const port = b.subscriber().stream.localPort;
    const admin = testRedisClient();
    await admin.connect();
    try {
      expect(await admin.client('KILL', 'ADDR', `127.0.0.1:${port}`)).toBe(1);
    } finally {
      admin.disconnect();
    }
    // Whatever was published while it was away is gone; the listener hears 0 and re-reads.
    await until(() => heard.includes(0), 'the wake-up after the reconnect');
    expect(await b.hub.health()).toMatchObject({ status: 'up' });
    a.hub.publish('run:9', 10);
    await until(() => heard.includes(10), 'a publish after the reconnect');
  });
});
