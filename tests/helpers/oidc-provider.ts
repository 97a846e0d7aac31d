import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/**
 * A minimal OpenID Connect provider on loopback, speaking the real protocol the console's
 * `oidc-client-ts` uses: discovery, the authorization endpoint (it signs the one configured user
 * in at once, as a provider with a live session does), the token endpoint (authorization code
 * with PKCE S256 checked, and refresh tokens), the JWKS, and CORS for the browser's token calls.
 * The service verifies its access tokens against its JWKS like any issuer's.
 */
export interface OidcProvider {
  issuer: string;
  jwksUrl: string;
  clientId: string;
  audience: string;
  /** Every token request, in order (grant types, to see a renewal happen). */
  grants: string[];
  close(): Promise<void>;
}

export async function startOidcProvider(options: {
  clientId: string;
  audience: string;
  userId: string;
  /** Access token lifetime; short ones make the console renew soon. */
  accessTokenSeconds?: number;
}): Promise<OidcProvider> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { challenge: string; redirectUri: string }>();
  const refreshTokens = new Set<string>();
  const grants: string[] = [];
  const lifetime = options.accessTokenSeconds ?? 3600;
  let issuer = '';

  const sign = (claims: Record<string, unknown>, audience: string, seconds: number) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'test-key', typ: 'JWT' })
      .setIssuer(issuer)
      .setSubject(options.userId)
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime(`${seconds}s`)
      .sign(privateKey);

  const tokens = async () => {
    const refresh = randomBytes(16).toString('hex');
    refreshTokens.add(refresh);
    return {
      access_token: await sign({ scope: 'openid profile' }, options.audience, lifetime),
      id_token: await sign({}, options.clientId, lifetime),
      refresh_token: refresh,
      token_type: 'Bearer',
      expires_in: lifetime,
      scope: 'openid profile',
    };
  };

  const server = http.createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', issuer);
    const cors = {
      'access-control-allow-origin': request.headers.origin ?? '*',
      'access-control-allow-headers': 'content-type, authorization',
      'access-control-allow-methods': 'GET, POST',
    };
    const json = (status: number, body: unknown) => {
      response.writeHead(status, {
        'content-type': 'application/json',
        'cache-control': 'no-store',
        ...cors,
      });
      response.end(JSON.stringify(body));
    };
    if (request.method === 'OPTIONS') {
      response.writeHead(204, cors);
      response.end();
      return;
    }
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        token_endpoint_auth_methods_supported: ['none'],
      });
    }
    if (url.pathname === '/jwks') return json(200, { keys: [publicJwk] });
    if (url.pathname === '/authorize') {
      const params = url.searchParams;
      const redirectUri = params.get('redirect_uri') ?? '';
      if (params.get('client_id') !== options.clientId || params.get('response_type') !== 'code') {
        return json(400, { error: 'invalid_request' });
      }
      if (params.get('code_challenge_method') !== 'S256' || !params.get('code_challenge')) {
        return json(400, { error: 'invalid_request', error_description: 'PKCE S256 is required' });
      }
      const code = randomBytes(16).toString('hex');
      codes.set(code, { challenge: params.get('code_challenge') ?? '', redirectUri });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', params.get('state') ?? '');
      response.writeHead(302, { location: back.toString() });
      response.end();
      return;
    }
    if (url.pathname === '/token' && request.method === 'POST') {
      let text = '';
      for await (const chunk of request) text += chunk;
      const form = new URLSearchParams(text);
      const grant = form.get('grant_type') ?? '';
      grants.push(grant);
      if (form.get('client_id') !== options.clientId) return json(401, { error: 'invalid_client' });
      if (grant === 'authorization_code') {
        const pending = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        const challenge = createHash('sha256').update(verifier).digest('base64url');
        if (!pending || pending.challenge !== challenge || pending.redirectUri !== form.get('redirect_uri')) {
          return json(400, { error: 'invalid_grant' });
        }
        return json(200, await tokens());
      }
      if (grant === 'refresh_token' && refreshTokens.delete(form.get('refresh_token') ?? '')) {
        return json(200, await tokens());
      }
      return json(400, { error: 'invalid_grant' });
    }
    json(404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    clientId: options.clientId,
    audience: options.audience,
    grants,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
