import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';

/**
 * `.env.example` and the README's Configuration table list every variable the service reads,
 * and nothing it does not: an operator copies the one and reads the other.
 */

const root = path.resolve(import.meta.dirname, '../..');

/** Every environment variable `loadConfig` reads, found by reading through a recording environment. */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  // Both sides of every branch that reads more: embedded or PostgreSQL, with or without Redis
  // (the split roles), development or production.
  const settings: NodeJS.ProcessEnv[] = [
    {},
    {
      POSTGRES_HOST: 'db',
      POSTGRES_DB: 'd',
      POSTGRES_USER: 'u',
      POSTGRES_PASSWORD: 'p',
      REDIS_URL: 'redis://r',
    },
    { NODE_ENV: 'production', OIDC_ISSUER: 'https://id.example.com', OIDC_AUDIENCE: 'a' },
  ];
  for (const values of settings) {
    const env = new Proxy(values, {
      get(target, name) {
        if (typeof name === 'string') read.add(name);
        return Reflect.get(target, name);
      },
    });
    try {
      loadConfig(env);
    } catch {
      // Production settings are incomplete on purpose: what matters is what was read.
    }
  }
  return read;
}

describe('the documented configuration', () => {
  const read = variablesRead();

  it('reads the variables this test knows of (the recording works)', () => {
    for (const name of ['PORT', 'DATA_DIR', 'POSTGRES_POOL_MAX', 'RUN_LEASE_MS', 'OIDC_JWKS_URL']) {
      expect(read).toContain(name);
    }
  });

  it('.env.example lists every variable the service reads, each once', () => {
    const text = fs.readFileSync(path.join(root, '.env.example'), 'utf8');
    const listed = [...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] as string);
    expect(new Set(listed).size, 'a variable is listed twice').toBe(listed.length);
    expect([...listed].sort()).toEqual([...read].sort());
  });

  it('the README Configuration table lists every variable the service reads', () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const section = readme.slice(
      readme.indexOf('## Configuration'),
      readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1),
    );
    const listed = [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1] as string);
    expect([...listed].sort()).toEqual([...read].sort());
  });
});
