import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import type { AuthConfig } from '../../config.ts';
import { AppError, unauthorized } from '../../errors.ts';
import { LruCache } from '../../lib/lru-cache.ts';

/** The user_id columns are varchar(255); a longer subject could never be a member. */
const MAX_SUBJECT_LENGTH = 255;

const isStorableText = (text: string) => !text.includes('\u0000') && text.isWellFormed();

/** A verified caller: the token's subject and its claims. */
export interface VerifiedToken {
  subject: string;
  claims: JWTPayload;
}

export type TokenVerifier = (token: string) => Promise<VerifiedToken>;

/**
 * Builds the bearer-token check. With an OIDC issuer the keys come from its JWKS (from
 * `OIDC_JWKS_URL`, or discovered from the issuer's openid-configuration on first use);
 * in development mode from the service's own key. Issuer, audience, expiry and algorithm
 * are always checked; symmetric and `none` algorithms are never accepted.
 */
export function createTokenVerifier(
  auth: AuthConfig,
  localJwks?: { keys: JWK[] },
  fetchImpl: typeof fetch = fetch,
): TokenVerifier {
  let keySet: Promise<JWTVerifyGetKey> | undefined;
  const getKeySet = (): Promise<JWTVerifyGetKey> => {
    if (auth.mode === 'dev' || localJwks) {
      if (!localJwks) throw new Error('development mode needs the local signing key');
      keySet ??= Promise.resolve(createLocalJWKSet(localJwks));
      return keySet;
    }
    keySet ??= resolveJwksUrl(auth.issuer, auth.jwksUrl, fetchImpl).then((url) =>
      createRemoteJWKSet(url, { timeoutDuration: 5000, cooldownDuration: 30_000 }),
    );
    // A failed discovery is retried by the next request instead of being cached forever.
    keySet.catch(() => {
      keySet = undefined;
    });
    return keySet;
  };

  // A signature check costs ~0.3 ms of CPU; a token already verified stays valid until
  // it expires (bearer JWTs cannot be revoked early), so its result is remembered.
  const verified = new LruCache<string, VerifiedToken>(10_000);

  return async (token) => {
    const known = verified.get(token);
    if (known) return known;
    let keys: JWTVerifyGetKey;
    try {
      keys = await getKeySet();
    } catch {
      throw new AppError(503, 'identity_provider_unavailable', 'the identity provider could not be reached');
    }
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: auth.issuer,
        audience: auth.audience,
        algorithms: auth.algorithms,
        clockTolerance: 5,
        requiredClaims: ['exp', 'sub'],
      });
      const subject = payload.sub as string;
      // The subject becomes a user_id (varchar(255)): text PostgreSQL cannot store or
      // compare is refused here as a bad token, not met later as a database error.
      if (subject.length === 0 || subject.length > MAX_SUBJECT_LENGTH || !isStorableText(subject)) {
        throw unauthorized(
          `the access token's "sub" claim must be 1 to ${MAX_SUBJECT_LENGTH} characters of valid text without NUL`,
        );
      }
      const result = { subject, claims: payload };
      verified.set(token, result, (payload.exp as number) * 1000);
      return result;
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw mapJoseError(error);
    }
  };
}

async function resolveJwksUrl(
  issuer: string,
  jwksUrl: string | undefined,
  fetchImpl: typeof fetch,
): Promise<URL> {
  if (jwksUrl) return new URL(jwksUrl);
  const discovery = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const response = await fetchImpl(discovery, { signal: AbortSignal.timeout(5000) });
  if (!response.ok) throw new Error(`OIDC discovery answered HTTP ${response.status}`);
  const document = (await response.json()) as { jwks_uri?: unknown };
  if (typeof document.jwks_uri !== 'string') throw new Error('OIDC discovery document has no jwks_uri');
  return new URL(document.jwks_uri);
}

function mapJoseError(error: unknown): AppError {
  if (error instanceof errors.JWTExpired) return unauthorized('the access token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    return unauthorized(`the access token's "${error.claim}" claim is not accepted`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return unauthorized('the access token is signed with an algorithm that is not accepted');
  if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey) {
    return unauthorized('the access token signature is not valid');
  }
  if (error instanceof errors.JWKSTimeout) {
    return new AppError(503, 'identity_provider_unavailable', 'the identity provider could not be reached');
  }
  if (error instanceof errors.JOSEError) return unauthorized('the access token is malformed');
  if (error instanceof TypeError) {
    return new AppError(503, 'identity_provider_unavailable', 'the identity provider could not be reached');
  }
  return unauthorized('the access token is not valid');
}
