import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/**
 * The machine's Redis for the tests, when `REDIS_URL` is set (CI's second pass). Tests that
 * need Redis run only then, and fail (never skip) when it is set but Redis cannot be reached.
 */
export const redisUrl: string | undefined = process.env.REDIS_URL?.trim() || undefined;

/** A Redis key prefix of its own for one test file (`QUEUE_PREFIX`), so files never see each other's jobs or events. */
export function testRedisPrefix(): string {
  return `test-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** A plain connection to the test Redis (fails at once when it is away), for inspecting and cleaning. */
export function testRedisClient(): Redis {
  if (!redisUrl) throw new Error('REDIS_URL is not set');
  return new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
}

/** Deletes every key under `prefix:` (what a test file left in Redis). */
export async function dropRedisPrefix(prefix: string): Promise<void> {
  const client = testRedisClient();
  client.on('error', () => {});
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await client.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

/**
 * The environment that puts a test app or process on the test Redis under a prefix of its
 * own, and what removes that prefix's keys; nothing at all when REDIS_URL is unset.
 */
export function testRedisEnv(): { env: NodeJS.ProcessEnv; drop(): Promise<void> } {
  if (!redisUrl) return { env: { REDIS_URL: '' }, drop: async () => {} };
  const prefix = testRedisPrefix();
  return { env: { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix }, drop: () => dropRedisPrefix(prefix) };
}
