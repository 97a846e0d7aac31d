import { useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { ProblemAlert } from '../ui/states.tsx';
import { sessionStore } from './session.ts';

/**
 * The sign-in page, shown in place of any page while no one is signed in, so the address (the
 * page asked for) is kept and shown again once signed in.
 */
export function SignIn() {
  const settings = useQuery({
    queryKey: ['auth-settings'],
    queryFn: () => unwrap(api.GET('/api/auth/settings')),
    staleTime: Number.POSITIVE_INFINITY,
  });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [token, setToken] = useState('');
  const [apiKey, setApiKey] = useState('');
  const ended = sessionStore.endedBecause();

  const asDeveloper = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const session = await unwrap(api.POST('/api/auth/dev-session', { body: {} }));
      sessionStore.start({
        token: session.access_token,
        expiresAt: Date.now() + session.expires_in * 1000,
        via: 'developer',
      });
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  const withProvider = async () => {
    setBusy(true);
    try {
      const { signInWithProvider } = await import('./oidc.ts');
      await signInWithProvider(settings.data, window.location.pathname + window.location.search);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  const withToken = (event: FormEvent) => {
    event.preventDefault();
    const trimmed = token.trim().replace(/^Bearer\s+/i, '');
    if (!trimmed) return;
    sessionStore.start({ token: trimmed, via: 'token', ...(apiKey.trim() ? { apiKey: apiKey.trim() } : {}) });
  };

  return (
    <main className="sign-in" id="main">
      <h1>Sign in to Agent Platform</h1>
      {ended && (
        <div className="alert info" role="status">
          {ended}
        </div>
      )}
      <ProblemAlert error={error ?? settings.error} title="Could not sign in" />
      <div className="card">
        {settings.data?.mode === 'development' && (
          <>
            <p className="muted">
              Development mode: the service issues its own tokens. Sign in as the owner of the default
              workspace.
            </p>
            <button type="button" className="primary" onClick={asDeveloper} disabled={busy}>
              Sign in as developer
            </button>
          </>
        )}
        {settings.data?.mode === 'oidc' && settings.data.console_client_id && (
          <button type="button" className="primary" onClick={withProvider} disabled={busy}>
            Sign in with {new URL(settings.data.issuer).host}
          </button>
        )}
        <form onSubmit={withToken} aria-labelledby="token-heading">
          <h2 id="token-heading">Or use an access token</h2>
          <div className="field">
            <label htmlFor="token">Access token</label>
            <textarea
              id="token"
              value={token}
              onChange={(event) => setToken(event.target.value)}
              required
              autoComplete="off"
              spellCheck={false}
            />
            <div className="hint">A bearer token of the identity provider, or `npm run dev-token`.</div>
          </div>
          <div className="field">
            <label htmlFor="api-key">API key (optional)</label>
            <input
              id="api-key"
              type="password"
              value={apiKey}
              onChange={(event) => setApiKey(event.target.value)}
              autoComplete="off"
            />
            <div className="hint">Selects the API key's workspace instead of choosing one.</div>
          </div>
          <button type="submit">Sign in with token</button>
        </form>
      </div>
    </main>
  );
}
