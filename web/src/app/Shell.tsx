import { useQueryClient } from '@tanstack/react-query';
import { Suspense } from 'react';
import { NavLink, Outlet } from 'react-router';
import { sessionStore } from '../auth/session.ts';
import { Loading } from '../ui/states.tsx';
import { useWorkspace, WorkspaceProvider } from './workspace.tsx';

const PAGES = [
  { to: '/', label: 'Dashboard', end: true },
  { to: '/agents', label: 'Agents' },
  { to: '/workflows', label: 'Workflows' },
  { to: '/runs', label: 'Runs' },
  { to: '/chat', label: 'Chat' },
  { to: '/knowledge', label: 'Knowledge' },
  { to: '/playbooks', label: 'Playbooks' },
  { to: '/policies', label: 'Policies' },
  { to: '/credentials', label: 'Credentials' },
  { to: '/analytics', label: 'Analytics' },
  { to: '/settings', label: 'Settings' },
];

function WorkspaceSwitcher() {
  const { workspace, workspaces, role } = useWorkspace();
  const queryClient = useQueryClient();
  return (
    <div className="row">
      <label htmlFor="workspace" className="visually-hidden">
        Workspace
      </label>
      <select
        id="workspace"
        value={workspace.id}
        onChange={(event) => {
          // Nothing of one workspace may be shown under another's name.
          queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== 'workspaces' });
          sessionStore.chooseWorkspace(event.target.value);
        }}
      >
        {workspaces.map((item) => (
          <option key={item.id} value={item.id}>
            {item.name}
          </option>
        ))}
      </select>
      <span className="badge neutral" title="Your role in this workspace">
        {role}
      </span>
    </div>
  );
}

/** The console's frame: the navigation landmark, the workspace switcher, and the page. */
export function Shell() {
  const queryClient = useQueryClient();
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <nav aria-label="Main">
        <div className="brand">Agent Platform</div>
        <ul>
          {PAGES.map((page) => (
            <li key={page.to}>
              <NavLink to={page.to} end={page.end ?? false}>
                {page.label}
              </NavLink>
            </li>
          ))}
        </ul>
      </nav>
      <div>
        <WorkspaceProvider>
          <header className="topbar">
            <WorkspaceSwitcher />
            <button
              type="button"
              onClick={() => {
                const via = sessionStore.get()?.via;
                queryClient.clear();
                sessionStore.end('You signed out.');
                if (via === 'oidc')
                  void import('../auth/oidc.ts').then((oidc) => oidc.forgetProviderSession());
              }}
            >
              Sign out
            </button>
          </header>
          <main id="main" tabIndex={-1}>
            <Suspense fallback={<Loading what="the page" />}>
              <WorkspacePage />
            </Suspense>
          </main>
        </WorkspaceProvider>
      </div>
    </div>
  );
}

/** The page, rebuilt from scratch when the workspace changes. */
function WorkspacePage() {
  const { workspace } = useWorkspace();
  return <Outlet key={workspace.id} />;
}
