import type { RouteObject } from 'react-router';
import { Loading } from '../ui/states.tsx';
import { Shell } from './Shell.tsx';

/** Each page is its own chunk, loaded when first visited. */
const page = (load: () => Promise<{ default: React.ComponentType }>) => async () => ({
  Component: (await load()).default,
});

export const routes: RouteObject[] = [
  { path: '/auth/callback', lazy: page(() => import('../auth/Callback.tsx')) },
  {
    element: <Shell />,
    hydrateFallbackElement: <Loading what="the console" />,
    children: [
      { index: true, lazy: page(() => import('../pages/Dashboard.tsx')) },
      { path: 'agents', lazy: page(() => import('../pages/agents/AgentList.tsx')) },
      { path: 'agents/new', lazy: page(() => import('../pages/agents/AgentForm.tsx')) },
      { path: 'agents/:id', lazy: page(() => import('../pages/agents/AgentPage.tsx')) },
      { path: 'agents/:id/edit', lazy: page(() => import('../pages/agents/AgentForm.tsx')) },
      { path: 'workflows', lazy: page(() => import('../pages/workflows/WorkflowList.tsx')) },
      { path: 'workflows/new', lazy: page(() => import('../pages/workflows/WorkflowForm.tsx')) },
      { path: 'workflows/:id', lazy: page(() => import('../pages/workflows/WorkflowPage.tsx')) },
      { path: 'workflows/:id/edit', lazy: page(() => import('../pages/workflows/WorkflowForm.tsx')) },
      { path: 'runs', lazy: page(() => import('../pages/runs/RunList.tsx')) },
      { path: 'runs/:id', lazy: page(() => import('../pages/runs/RunPage.tsx')) },
      { path: 'playbooks', lazy: page(() => import('../pages/playbooks/PlaybookList.tsx')) },
      { path: 'playbooks/:id', lazy: page(() => import('../pages/playbooks/PlaybookPage.tsx')) },
      { path: 'policies', lazy: page(() => import('../pages/policies/PolicyList.tsx')) },
      { path: 'policies/:id', lazy: page(() => import('../pages/policies/PolicyPage.tsx')) },
      { path: 'chat/:id?', lazy: page(() => import('../pages/chat/ChatPage.tsx')) },
      { path: 'knowledge/:tab?', lazy: page(() => import('../pages/knowledge/KnowledgePage.tsx')) },
      { path: 'credentials', lazy: page(() => import('../pages/credentials/CredentialList.tsx')) },
      { path: 'credentials/new', lazy: page(() => import('../pages/credentials/CredentialForm.tsx')) },
      { path: 'credentials/:id', lazy: page(() => import('../pages/credentials/CredentialPage.tsx')) },
      { path: 'credentials/:id/edit', lazy: page(() => import('../pages/credentials/CredentialForm.tsx')) },
      { path: 'analytics', lazy: page(() => import('../pages/analytics/AnalyticsPage.tsx')) },
      { path: 'settings/:section?', lazy: page(() => import('../pages/settings/SettingsPage.tsx')) },
      { path: '*', lazy: page(() => import('../pages/NotFound.tsx')) },
    ],
  },
];
