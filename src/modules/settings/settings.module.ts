import type { Db } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import type { Module } from '../../module.ts';
import { createSettingsService } from './settings.service.ts';

export interface SettingsModuleDependencies {
  db: Db;
  /** Carries a change to every process, whose caches then drop the workspace's settings. */
  hub: Pick<EventHub, 'publish' | 'subscribe'>;
}

/** Per-workspace settings by namespace; other modules own their namespaces' routes. */
export function createSettingsModule(deps: SettingsModuleDependencies) {
  const service = createSettingsService(deps.db, { hub: deps.hub });
  return { service } satisfies Module;
}
