import { UserManager, WebStorageStateStore } from 'oidc-client-ts';
import type { Schemas } from '../api/client.ts';
import { sessionStore } from './session.ts';

type Settings = Schemas['AuthSettings'];

let manager: UserManager | undefined;

/**
 * The OIDC client: authorization code with PKCE, its state and tokens in sessionStorage (this
 * tab only), tokens renewed before they expire (refresh token, or a silent request).
 */
function managerFor(settings: Settings): UserManager {
  if (manager) return manager;
  if (!settings.console_client_id) throw new Error('the identity provider has no console client configured');
  manager = new UserManager({
    authority: settings.issuer,
    client_id: settings.console_client_id,
    redirect_uri: `${window.location.origin}/auth/callback`,
    post_logout_redirect_uri: window.location.origin,
    response_type: 'code',
    scope: 'openid profile',
    automaticSilentRenew: true,
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
    stateStore: new WebStorageStateStore({ store: window.sessionStorage }),
  });
  manager.events.addUserLoaded((user) =>
    sessionStore.start({ token: user.access_token, expiresAt: (user.expires_at ?? 0) * 1000, via: 'oidc' }),
  );
  manager.events.addAccessTokenExpired(() => sessionStore.end('Your session expired. Sign in again.'));
  return manager;
}

export async function signInWithProvider(settings: Settings | undefined, returnTo: string): Promise<void> {
  if (!settings) throw new Error('the sign-in settings are not loaded yet');
  await managerFor(settings).signinRedirect({ state: { returnTo } });
}

/** Completes the redirect back from the provider; answers where to go next. */
export async function completeSignIn(settings: Settings): Promise<string> {
  const user = await managerFor(settings).signinRedirectCallback();
  sessionStore.start({ token: user.access_token, expiresAt: (user.expires_at ?? 0) * 1000, via: 'oidc' });
  const state = user.state as { returnTo?: string } | undefined;
  return state?.returnTo?.startsWith('/') ? state.returnTo : '/';
}

/**
 * After a reload: the provider's user (in sessionStorage) is loaded again, so its renewal is
 * scheduled again before the access token expires.
 */
export async function resumeProviderSession(settings: Settings): Promise<void> {
  const user = await managerFor(settings).getUser();
  if (!user || user.expired) sessionStore.end('Your session expired. Sign in again.');
}

/** Forgets the provider's tokens kept in this tab (sign-out); the provider's own session is its own. */
export function forgetProviderSession(): void {
  void manager?.removeUser();
  for (const key of Object.keys(sessionStorage)) if (key.startsWith('oidc.')) sessionStorage.removeItem(key);
}
