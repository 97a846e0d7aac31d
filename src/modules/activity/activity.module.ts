import type { Db } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import type { RedisConnection } from '../../lib/redis/redis-connection.ts';
import type { Module } from '../../module.ts';
import { activityRoutes } from './activity.routes.ts';
import { createActivityService } from './activity.service.ts';
import { createMemoryTicketStore, createRedisTicketStore, type TicketStore } from './ws-tickets.ts';

export interface ActivityModuleDependencies {
  db: Db;
  hub: EventHub;
  /**
   * Where WebSocket tickets wait to be redeemed. Absent: on Redis when there is one (any API
   * process redeems a ticket another issued; its command connection fails fast when down),
   * else in this process's memory.
   */
  tickets?: TicketStore;
  redis?: Pick<RedisConnection, 'client'>;
  /** The Redis key prefix (`QUEUE_PREFIX`). */
  prefix: string;
  /** How often a WebSocket is pinged (WS_PING_INTERVAL_MS). */
  pingIntervalMs: number;
}

/** The workspace activity feed: recorded in each change's transaction, listed, followed live. */
export function createActivityModule(deps: ActivityModuleDependencies) {
  const tickets =
    deps.tickets ??
    (deps.redis
      ? createRedisTicketStore(deps.redis.client, `${deps.prefix}:agent-platform:ws-ticket:`)
      : createMemoryTicketStore());
  const service = createActivityService(deps.db, { hub: deps.hub, tickets });
  return {
    service,
    routes: (app, { streams }) =>
      activityRoutes(app, { activity: service, streams, pingIntervalMs: deps.pingIntervalMs }),
  } satisfies Module;
}
