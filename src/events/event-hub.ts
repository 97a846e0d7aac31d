import { EventEmitter } from 'node:events';
import type { Component, ComponentHealth } from '../lifecycle.ts';

/**
 * Wakes readers of an append-only log (run events, activity) when something new was
 * committed. It carries ids only: a reader always reads the rows themselves from the
 * database after the last id it has, so a lost or duplicated notification costs a query,
 * never an event. Topics are `run:<run id>`, `activity:<workspace id>` and
 * `access:<workspace id>` (`accessTopic`).
 */
export interface EventHub extends Component {
  /** Tells every subscriber of `topic`, in every process, that rows up to `id` exist. */
  publish(topic: string, id: number): void;
  /** Calls `listener` on each publish to `topic` until the returned function is called. */
  subscribe(topic: string, listener: (id: number) => void): () => void;
}

/** The hub of a single process (no Redis): an in-memory emitter. */
export function createLocalEventHub(): EventHub {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    name: 'Event hub',
    start: async () => {},
    stop: async () => {
      emitter.removeAllListeners();
    },
    health: async (): Promise<ComponentHealth> => ({ name: 'Event hub', status: 'up', detail: 'in-process' }),
    publish: (topic, id) => {
      emitter.emit(topic, id);
    },
    subscribe: (topic, listener) => {
      emitter.on(topic, listener);
      return () => emitter.off(topic, listener);
    },
  };
}

/**
 * The hub topic on which a workspace's access changes are announced, after commit: a member
 * removed or given another role, an API key revoked, the workspace deleted. The id carries
 * nothing; a listener (a live stream) reads the access it depends on again from the database.
 */
export const accessTopic = (workspaceId: string): string => `access:${workspaceId}`;
