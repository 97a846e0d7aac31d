import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError } from '../../errors.ts';
import { LruCache } from '../../lib/lru-cache.ts';

/**
 * Single-use tickets for WebSocket upgrades from browsers, which cannot set headers on
 * one. A ticket is 32 random bytes (`wst_` + base64url), handed to the client once and
 * stored only as its SHA-256 hash, bound to a user and a workspace, for 30 seconds.
 * Redeeming takes it out of the store atomically, so it opens one socket at most; the
 * upgrade then checks the membership again, as a header-authenticated request would.
 */

/** Seconds a ticket stays valid. */
export const TICKET_TTL_SECONDS = 30;

const TICKET = /^wst_[A-Za-z0-9_-]{43}$/;

/** Who a ticket speaks for. */
export interface TicketBinding {
  userId: string;
  workspaceId: string;
}

/**
 * Where tickets wait to be redeemed, by hash. One process: in memory. Several API
 * processes: Redis, so a ticket issued by one can be redeemed by another, still once.
 */
export interface TicketStore {
  put(hash: string, binding: TicketBinding, ttlMs: number): Promise<void>;
  /** Removes and returns the binding; undefined when unknown, expired or already taken. */
  take(hash: string): Promise<TicketBinding | undefined>;
}

/** A new ticket and the hash it is stored under. */
export function mintTicket(): { ticket: string; hash: string } {
  const ticket = `wst_${randomBytes(32).toString('base64url')}`;
  return { ticket, hash: hashTicket(ticket) };
}

/** The stored form of a ticket; undefined for text that cannot be one (no store lookup). */
export function ticketHash(ticket: string): string | undefined {
  return TICKET.test(ticket) ? hashTicket(ticket) : undefined;
}

const hashTicket = (ticket: string) => createHash('sha256').update(ticket).digest('hex');

/**
 * Tickets in this process's memory. Bounded: past `maxTickets` outstanding, the oldest are
 * forgotten (their holders ask again), so minting many cannot grow memory without limit.
 */
export function createMemoryTicketStore(
  options: { maxTickets?: number; now?: () => number } = {},
): TicketStore {
  const now = options.now ?? Date.now;
  const tickets = new LruCache<string, TicketBinding>(options.maxTickets ?? 10_000, now);
  return {
    async put(hash, binding, ttlMs) {
      tickets.set(hash, binding, now() + ttlMs);
    },
    async take(hash) {
      const binding = tickets.get(hash);
      tickets.delete(hash);
      return binding;
    },
  };
}

/** What a request that needed the ticket store gets while Redis cannot be reached. */
const storeUnavailable = (error: unknown): AppError =>
  Object.assign(
    new AppError(
      503,
      'redis_unavailable',
      'the ticket store (Redis) is unavailable; retry shortly',
      undefined,
      {
        'Retry-After': '1',
      },
    ),
    { cause: error },
  );

/**
 * Tickets in Redis, shared by every API process: `SET ... PX` on issue, `GETDEL` on
 * redemption, so two processes racing for one ticket cannot both get it. Give it a client
 * that fails fast while disconnected: a request then answers 503 `redis_unavailable` at once.
 */
export function createRedisTicketStore(
  redis: Pick<Redis, 'set' | 'getdel'>,
  prefix = 'ws-ticket:',
): TicketStore {
  return {
    async put(hash, binding, ttlMs) {
      try {
        await redis.set(`${prefix}${hash}`, JSON.stringify(binding), 'PX', ttlMs);
      } catch (error) {
        throw storeUnavailable(error);
      }
    },
    async take(hash) {
      let stored: string | null;
      try {
        stored = await redis.getdel(`${prefix}${hash}`);
      } catch (error) {
        throw storeUnavailable(error);
      }
      if (stored === null) return undefined;
      const binding = JSON.parse(stored) as Partial<TicketBinding>;
      return typeof binding.userId === 'string' && typeof binding.workspaceId === 'string'
        ? { userId: binding.userId, workspaceId: binding.workspaceId }
        : undefined;
    },
  };
}
