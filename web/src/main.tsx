import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode, useSyncExternalStore } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { ApiError, api, unwrap } from './api/client.ts';
import { routes } from './app/routes.tsx';
import { SignIn } from './auth/SignIn.tsx';
import { sessionStore } from './auth/session.ts';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      // A 4xx will not change by asking again; an outage (503) or a network error may.
      retry: (failures, error) => !(error instanceof ApiError && error.status < 500) && failures < 2,
      refetchOnWindowFocus: false,
    },
  },
  queryCache: new QueryCache(),
  mutationCache: new MutationCache(),
});

const router = createBrowserRouter(routes);

/** A session signed in at the identity provider keeps renewing its token after a reload. */
if (sessionStore.get()?.via === 'oidc') {
  void Promise.all([import('./auth/oidc.ts'), unwrap(api.GET('/api/auth/settings'))])
    .then(([oidc, settings]) => oidc.resumeProviderSession(settings))
    .catch(() => undefined);
}

function App() {
  const session = useSyncExternalStore(sessionStore.subscribe, sessionStore.get);
  // Signed out (or the token refused): sign in right here, on the page that was asked for.
  if (!session && window.location.pathname !== '/auth/callback') return <SignIn />;
  return <RouterProvider router={router} />;
}

const root = document.getElementById('root');
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <App />
      </QueryClientProvider>
    </StrictMode>,
  );
}
