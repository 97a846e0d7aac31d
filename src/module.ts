import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { LiveStreams } from './http/live-streams.ts';
import type { RegisteredJob } from './jobs/job.ts';
import type { Component } from './lifecycle.ts';

/** What the HTTP layer lends every module's routes: the parts that exist only once Fastify does. */
export interface HttpParts {
  /** Live streams (SSE, WebSocket), capped per user and workspace, ended when access is withdrawn. */
  streams: LiveStreams;
}

/**
 * A module's route plugin, its services already bound: `buildApp` registers it under `/api`
 * with the HTTP parts.
 */
export type ModuleRoutes = FastifyPluginAsyncTypebox<HttpParts>;

/**
 * What a module contributes to the process, beside its service(s), which each module names
 * itself (`agents.service`, `knowledge.indexer`, ...). A module is built by its one entrypoint,
 * `create<Name>Module(deps)` in `modules/<name>/<name>.module.ts`, from the values of the modules
 * it needs; `services.ts` calls the entrypoints in dependency order (docs/architecture.md).
 */
export interface ModuleParts {
  /** Its HTTP routes, when it has any. */
  routes?: ModuleRoutes;
  /** Its job definitions bound to what their handlers use; consumed when RUN_MODE is worker or all. */
  jobs?: readonly RegisteredJob[];
  /** Its long-lived parts (caches, provider clients), started before the queue. */
  components?: readonly Component[];
  /**
   * Its periodic sweeps (stranded work handed back to the queue, schedules, rollups): started
   * after the queue, and only in a process that consumes jobs (empty otherwise).
   */
  sweeps?: readonly Component[];
}

/** A module's entrypoint result: its parts, and its services under names of its choosing. */
export type Module = ModuleParts & { readonly [service: string]: unknown };
