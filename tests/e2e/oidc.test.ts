import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, expectAccessible, navigate, startConsole } from '../helpers/console.ts';
import { type OidcProvider, startOidcProvider } from '../helpers/oidc-provider.ts';

/**
 * Signing in to the console at an OpenID Connect provider: the authorization code flow with
 * PKCE against a provider on loopback (tests/helpers/oidc-provider.ts), the service verifying
 * the provider's tokens against its JWKS, the token renewed before it expires, and sign-out.
 */

const USER = 'oidc-alice';
let provider: OidcProvider;
let harness: ConsoleHarness;

beforeAll(async () => {
  // 65 s tokens: the console renews a minute before expiry, so within about 5 s.
  provider = await startOidcProvider({
    clientId: 'console',
    audience: 'agent-platform',
    userId: USER,
    accessTokenSeconds: 65,
  });
  harness = await startConsole({
    env: {
      OIDC_ISSUER: provider.issuer,
      OIDC_AUDIENCE: provider.audience,
      OIDC_JWKS_URL: provider.jwksUrl,
      OIDC_CONSOLE_CLIENT_ID: provider.clientId,
    },
  });
  await harness.t.services.workspaces.createWorkspace(USER, { name: 'Alice at the provider' });
});
afterAll(async () => {
  await harness?.close();
  await provider?.close();
});

describe('signing in with OpenID Connect', () => {
  it('signs in with code and PKCE, returns to the page asked for, renews the token and signs out', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    await page.goto('/workflows');
    // No development sign-in outside development mode.
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Sign in to Agent Platform' }).isVisible())
      .toBe(true);
    expect(await page.getByRole('button', { name: 'Sign in as developer' }).count()).toBe(0);
    await expectAccessible(page);
    await page.getByRole('button', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();

    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Workflows' }).isVisible())
      .toBe(true);
    expect(new URL(page.url()).pathname).toBe('/workflows');
    expect(await page.getByLabel('Workspace').inputValue()).toBeTruthy();
    expect(await page.getByRole('option', { name: 'Alice at the provider' }).count()).toBe(1);
    expect(provider.grants).toEqual(['authorization_code']);
    // Tokens only in this tab's sessionStorage, never localStorage or a cookie.
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(await context.cookies()).toEqual([]);

    // Renewed with the refresh token before it expires; the new token works.
    await expect.poll(() => provider.grants.includes('refresh_token'), { timeout: 30_000 }).toBe(true);
    await navigate(page, 'Agents');
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Agents' }).isVisible()).toBe(true);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Sign in to Agent Platform' }).isVisible())
      .toBe(true);
    await page.reload();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Sign in to Agent Platform' }).isVisible())
      .toBe(true);
    expect(
      await page.evaluate("Object.keys(sessionStorage).filter((key) => key.startsWith('oidc.user')).length"),
    ).toBe(0);
    await context.close();
  });
});
