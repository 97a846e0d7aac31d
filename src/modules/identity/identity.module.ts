import type { JWK } from 'jose';
import type { Config } from '../../config.ts';
import type { Module } from '../../module.ts';
import { type DevSigningKey, loadDevSigningKey } from './dev-issuer.ts';
import { identityRoutes } from './identity.routes.ts';
import { createTokenVerifier } from './token-verifier.ts';

export interface IdentityModuleDependencies {
  config: Pick<Config, 'auth' | 'dataDir'>;
}

/**
 * Who a bearer token names: tokens of the configured OIDC issuer, or in development mode of the
 * service's own issuer, whose key is kept in DATA_DIR and whose JWKS `buildApp` publishes at
 * the root (not under `/api`).
 */
export async function createIdentityModule(deps: IdentityModuleDependencies) {
  const { auth, dataDir } = deps.config;
  const devKey: DevSigningKey | undefined =
    auth.mode === 'dev' ? await loadDevSigningKey(dataDir) : undefined;
  const devJwks: { keys: JWK[] } | undefined = devKey ? { keys: [devKey.publicJwk] } : undefined;
  return {
    devKey,
    devJwks,
    verifyToken: createTokenVerifier(auth, devJwks),
    routes: (app) => identityRoutes(app, { auth, ...(devKey ? { devKey } : {}) }),
  } satisfies Module;
}
