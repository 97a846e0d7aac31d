import { createLocalEventHub } from '../../src/events/event-hub.ts';
import { createLogger } from '../../src/logger.ts';
import { createActivityService } from '../../src/modules/activity/activity.service.ts';
import { createMemoryTicketStore } from '../../src/modules/activity/ws-tickets.ts';
import {
  type CodegraphService,
  createCodegraphService,
} from '../../src/modules/codegraph/codegraph.service.ts';
import type { TestDb } from './test-db.ts';

/**
 * The code graph service on a test database, for service tests that wire the tool registry
 * (it needs the graph for `code_search`) without booting the whole app. Background indexes
 * are not run: nothing consumes the queue here.
 */
export function codegraphOf(db: TestDb): CodegraphService {
  return createCodegraphService({
    db: db.database.db,
    activity: createActivityService(db.database.db, {
      hub: createLocalEventHub(),
      tickets: createMemoryTicketStore(),
    }),
    enqueue: async () => {},
    syncMaxBytes: 2 * 1024 * 1024,
    log: createLogger('silent'),
  });
}
