import type { Db } from '../../db/transaction.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { tenantSourcesRoot } from '../../lib/fs/within-root.ts';
import type { Module } from '../../module.ts';
import type { AuditRecorder } from '../audit/audit.service.ts';
import { workspacesRoutes } from './workspaces.routes.ts';
import { createWorkspacesService } from './workspaces.service.ts';

export interface WorkspacesModuleDependencies {
  db: Db;
  audit: AuditRecorder;
  hub: Pick<EventHub, 'publish'>;
  /** SOURCES_ROOT: the folder under which each tenant has its own subtree; absent, none. */
  sourcesRoot?: string;
}

/** Tenancy: workspaces, members and roles, API keys. */
export function createWorkspacesModule(deps: WorkspacesModuleDependencies) {
  const service = createWorkspacesService(deps.db, undefined, deps.audit, deps.hub);
  const { sourcesRoot } = deps;
  return {
    service,
    /**
     * Server-side folders (directory sources, code graph directories): each tenant reads only
     * its own subtree, SOURCES_ROOT/<tenant id>, which the operator provisions. Undefined
     * without SOURCES_ROOT.
     */
    sourcesRootOf: sourcesRoot
      ? async (workspaceId: string) => {
          const tenantId = await service.tenantOf(workspaceId);
          if (!tenantId) throw new Error(`workspace ${workspaceId} has no tenant`);
          return tenantSourcesRoot(sourcesRoot, tenantId);
        }
      : undefined,
    routes: (app) => workspacesRoutes(app, { workspaces: service }),
  } satisfies Module;
}
