import { useQuery } from '@tanstack/react-query';
import { createContext, type ReactNode, useContext, useEffect, useSyncExternalStore } from 'react';
import { api, type Schemas, unwrap } from '../api/client.ts';
import { sessionStore } from '../auth/session.ts';
import { Loading, ProblemAlert } from '../ui/states.tsx';

type Role = 'owner' | 'admin' | 'member' | 'viewer';
const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

export interface CurrentWorkspace {
  workspace: Schemas['Workspace'];
  workspaces: Schemas['Workspace'][];
  role: Role;
  /** True when the caller's role is at least `role`: what the API will allow. */
  can(role: Role): boolean;
}

const WorkspaceContext = createContext<CurrentWorkspace | undefined>(undefined);

export function useWorkspace(): CurrentWorkspace {
  const current = useContext(WorkspaceContext);
  if (!current) throw new Error('useWorkspace outside <WorkspaceProvider>');
  return current;
}

export const useWorkspaceId = () => useSyncExternalStore(sessionStore.subscribe, sessionStore.workspaceId);

/**
 * The caller's workspaces, and the one this tab works in (remembered per tab; the first one
 * when none was chosen or the chosen one is gone). Children render only once it is known.
 */
export function WorkspaceProvider({ children }: { children: ReactNode }) {
  const chosen = useWorkspaceId();
  const list = useQuery({
    queryKey: ['workspaces'],
    queryFn: () => unwrap(api.GET('/api/workspaces')),
  });
  const workspaces = list.data?.items ?? [];
  const workspace = workspaces.find((item) => item.id === chosen) ?? workspaces[0];
  useEffect(() => {
    if (workspace && workspace.id !== chosen) sessionStore.chooseWorkspace(workspace.id);
  }, [workspace, chosen]);

  if (list.isPending) return <Loading what="your workspaces" />;
  if (list.error) return <ProblemAlert error={list.error} />;
  if (workspace && workspace.id !== chosen) return <Loading what="the workspace" />;
  if (!workspace) {
    return (
      <div className="alert info" role="status">
        You are not a member of any workspace yet. Ask a workspace admin to add you, or create one with POST
        /api/workspaces.
      </div>
    );
  }
  const role = workspace.role as Role;
  return (
    <WorkspaceContext.Provider
      value={{ workspace, workspaces, role, can: (needed) => RANK[role] >= RANK[needed] }}
    >
      {children}
    </WorkspaceContext.Provider>
  );
}
