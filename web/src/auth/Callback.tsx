import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';
import { api, unwrap } from '../api/client.ts';
import { ProblemAlert } from '../ui/states.tsx';
import { completeSignIn } from './oidc.ts';

/** Where the identity provider sends the browser back (`/auth/callback`). */
export default function Callback() {
  const navigate = useNavigate();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    unwrap(api.GET('/api/auth/settings'))
      .then(completeSignIn)
      .then((next) => navigate(next, { replace: true }))
      .catch(setError);
  }, [navigate]);
  return (
    <main className="sign-in" id="main">
      <h1>Signing in…</h1>
      <ProblemAlert error={error} title="Could not complete the sign-in" />
    </main>
  );
}
