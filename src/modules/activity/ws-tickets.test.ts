import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { redisUrl } from '../../../tests/helpers/test-redis.ts';
import {
  createMemoryTicketStore,
  createRedisTicketStore,
  mintTicket,
  type TicketStore,
  ticketHash,
} from './ws-tickets.ts';

const alice = { userId: 'alice', workspaceId: '6f1c5d1e-2a4b-4c3d-8e9f-0a1b2c3d4e5f' };

describe('tickets', () => {
  it('are 32 random bytes, stored by a hash that text of another shape never reaches', () => {
    const { ticket, hash } = mintTicket();
    expect(ticket).toMatch(/^wst_[A-Za-z0-9_-]{43}$/);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).not.toContain(ticket.slice(4));
    expect(ticketHash(ticket)).toBe(hash);
    expect(mintTicket().ticket).not.toBe(ticket);
    for (const text of [
      '',
      'wst_',
      `wst_${'A'.repeat(42)}`,
      `wst_${'A'.repeat(44)}`,
      `xyz_${'A'.repeat(43)}`,
      `wst_${'+'.repeat(43)}`,
    ]) {
      expect(ticketHash(text), text).toBeUndefined();
    }
  });
});

/** What every store promises: a ticket is taken once, and not after it expires. */
function storeContract(name: string, make: () => TicketStore, wait: (ms: number) => Promise<void>) {
  describe(name, () => {
    it('gives a ticket’s binding once', async () => {
      const store = make();
      const { hash } = mintTicket();
      await store.put(hash, alice, 30_000);
      expect(await store.take(hash)).toEqual(alice);
      expect(await store.take(hash)).toBeUndefined();
      expect(await store.take(mintTicket().hash)).toBeUndefined();
    });

    it('forgets a ticket past its time to live', async () => {
      const store = make();
      const { hash } = mintTicket();
      await store.put(hash, alice, 50);
      await wait(120);
      expect(await store.take(hash)).toBeUndefined();
    });

    it('lets only one of many concurrent redemptions win', async () => {
      const store = make();
      const { hash } = mintTicket();
      await store.put(hash, alice, 30_000);
      const results = await Promise.all(Array.from({ length: 20 }, () => store.take(hash)));
      expect(results.filter((binding) => binding !== undefined)).toEqual([alice]);
    });
  });
}

let now = 0;
storeContract(
  'memory ticket store',
  () => createMemoryTicketStore({ now: () => now }),
  async (ms) => {
    now += ms;
  },
);

describe('memory ticket store, bounded', () => {
  it('forgets the oldest tickets past its capacity', async () => {
    const store = createMemoryTicketStore({ maxTickets: 3 });
    const hashes = [1, 2, 3, 4].map(() => mintTicket().hash);
    for (const hash of hashes) await store.put(hash, alice, 30_000);
    expect(await store.take(hashes[0] as string)).toBeUndefined();
    expect(await store.take(hashes[3] as string)).toEqual(alice);
  });
});

describe('redis ticket store, Redis away', () => {
  it('answers 503 redis_unavailable rather than an internal error', async () => {
    // A client that fails fast, as the service's is: nothing listens on port 1.
    const away = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    away.on('error', () => undefined);
    const store = createRedisTicketStore(away);
    const { hash } = mintTicket();
    await expect(store.put(hash, alice, 30_000)).rejects.toMatchObject({
      status: 503,
      code: 'redis_unavailable',
    });
    await expect(store.take(hash)).rejects.toMatchObject({ status: 503, code: 'redis_unavailable' });
    away.disconnect();
  });
});

// Redis is the store shared by several API processes; it runs where Redis is configured (CI).
describe.runIf(redisUrl)('redis ticket store', () => {
  const redis = new Redis(redisUrl ?? '', { lazyConnect: true, maxRetriesPerRequest: 1 });
  const prefix = `ws-ticket-test:${randomBytes(4).toString('hex')}:`;
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });
  storeContract(
    'shared across processes',
    () => createRedisTicketStore(redis, prefix),
    (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  );

  it('keeps only the hash in Redis, never the ticket', async () => {
    const store = createRedisTicketStore(redis, prefix);
    const { ticket, hash } = mintTicket();
    await store.put(hash, alice, 30_000);
    const keys = await redis.keys(`${prefix}*`);
    expect(keys).toContain(`${prefix}${hash}`);
    for (const key of keys) {
      expect(key).not.toContain(ticket.slice(4));
      expect(await redis.get(key)).not.toContain(ticket.slice(4));
    }
    expect(await redis.pttl(`${prefix}${hash}`)).toBeGreaterThan(29_000);
  });
});
