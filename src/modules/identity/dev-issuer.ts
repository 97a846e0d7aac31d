import fs from 'node:fs';
import path from 'node:path';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';

type PrivateKey = Awaited<ReturnType<typeof importJWK>>;

/** The development issuer's key pair, kept in DATA_DIR so tokens survive restarts. */
export interface DevSigningKey {
  kid: string;
  privateKey: PrivateKey;
  publicJwk: JWK;
}

const KEY_FILE = 'dev-signing-key.json';
const ALG = 'EdDSA';

/**
 * Loads the development signing key, creating it on first use. Creation is an exclusive
 * write, so the service and `npm run dev-token` starting together end up with one key.
 */
export async function loadDevSigningKey(dataDir: string): Promise<DevSigningKey> {
  const file = path.join(dataDir, KEY_FILE);
  fs.mkdirSync(dataDir, { recursive: true });
  if (!fs.existsSync(file)) {
    const { privateKey } = await generateKeyPair(ALG, { crv: 'Ed25519', extractable: true });
    const jwk = await exportJWK(privateKey);
    const kid = `dev-${Date.now().toString(36)}`;
    try {
      fs.writeFileSync(file, JSON.stringify({ ...jwk, kid, alg: ALG }), { flag: 'wx', mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as JWK & { kid: string };
  const privateKey = await importJWK(stored, ALG);
  const { d: _private, ...publicJwk } = stored;
  return { kid: stored.kid, privateKey, publicJwk: { ...publicJwk, use: 'sig', alg: ALG } };
}

/**
 * The id of the development signing key kept in `dataDir`, or undefined when there is none
 * yet; creates nothing (`npm run dev-token` compares it with a running service's keys).
 */
export function readDevSigningKeyId(dataDir: string): string | undefined {
  try {
    const { kid } = JSON.parse(fs.readFileSync(path.join(dataDir, KEY_FILE), 'utf8')) as { kid?: unknown };
    return typeof kid === 'string' ? kid : undefined;
  } catch {
    return undefined;
  }
}

/** Signs a development access token for `userId`. */
export async function mintDevToken(
  key: DevSigningKey,
  claims: { userId: string; issuer: string; audience: string; ttlSeconds?: number },
): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: ALG, kid: key.kid, typ: 'JWT' })
    .setSubject(claims.userId)
    .setIssuer(claims.issuer)
    .setAudience(claims.audience)
    .setIssuedAt()
    .setExpirationTime(`${claims.ttlSeconds ?? 24 * 3600}s`)
    .sign(key.privateKey);
}
