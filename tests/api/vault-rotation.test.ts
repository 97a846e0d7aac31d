import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { keyIdOf } from '../../src/lib/crypto/envelope.ts';
import {
  createTestApp,
  createTestDatabaseEnv,
  type TestApp,
  type TestDatabaseEnv,
} from '../helpers/test-app.ts';

vi.setConfig({ testTimeout: 240_000 });

const root = path.resolve(import.meta.dirname, '../..');
const [k1, k2, k3] = [randomBytes(32), randomBytes(32), randomBytes(32)].map((key) =>
  key.toString('base64'),
) as [string, string, string];
const id = (key: string) => keyIdOf(Buffer.from(key, 'base64'));

let env: TestDatabaseEnv;
afterAll(async () => {
  await env?.drop();
});

function run(script: string, extraEnv: NodeJS.ProcessEnv, untilOutput?: RegExp) {
  const child = spawn(process.execPath, [script], {
    cwd: root,
    env: { PATH: process.env.PATH, ...env.env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
    if (untilOutput?.test(output)) child.kill('SIGTERM');
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  return new Promise<{ code: number | null; output: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, output })),
  );
}

async function withApp<T>(keys: NodeJS.ProcessEnv, work: (t: TestApp) => Promise<T>): Promise<T> {
  const t = await createTestApp({ reuse: env, env: keys });
  try {
    return await work(t);
  } finally {
    await t.close({ keep: true });
  }
}

describe('master key rotation', () => {
  it('reads under retired keys, re-wraps to the current one, and works once the old key is dropped', async () => {
    env = await createTestDatabaseEnv();
    const created = await withApp({ ENCRYPTION_KEY: k1 }, async (t) => {
      const results: { workspaceId: string; credentialId: number }[] = [];
      for (const user of ['ann', 'bob', 'cy']) {
        const actor = await t.newWorkspace(user);
        const type = (await t.services.credentials.listTypes(actor, {})).find(
          (x) => x.name === 'api_key_credentials',
        );
        const credential = await t.services.credentials.create(actor, {
          name: 'key',
          credential_type_id: type?.id as number,
          data: { api_key: `secret-of-${user}` },
        });
        results.push({ workspaceId: actor.workspaceId, credentialId: credential.id });
      }
      return results;
    });

    await withApp({ ENCRYPTION_KEY: k2, ENCRYPTION_KEYS_PREVIOUS: k1 }, async (t) => {
      for (const [i, c] of created.entries()) {
        expect(
          await t.services.credentials.access({
            workspaceId: c.workspaceId,
            id: c.credentialId,
            serviceName: 'r',
          }),
        ).toEqual({
          api_key: `secret-of-${['ann', 'bob', 'cy'][i]}`,
        });
      }
      const before = await t.services.vaultKeys.status();
      expect(before.keys.find((k) => k.key_id === id(k1))).toMatchObject({
        workspace_keys: 3,
        configured: true,
        current: false,
      });
      const progress: number[] = [];
      const result = await t.services.vaultKeys.rotate({
        batchSize: 2,
        onBatch: ({ rotated }) => progress.push(rotated),
      });
      expect(result).toEqual({ rotated: 3, failed: 0 });
      expect(progress).toEqual([2, 3]);
      const after = await t.services.vaultKeys.status();
      expect(after.keys.find((k) => k.key_id === id(k1))?.workspace_keys).toBe(0);
      expect(after.keys.find((k) => k.key_id === id(k2))?.workspace_keys).toBe(3);
    });

    await withApp({ ENCRYPTION_KEY: k2 }, async (t) => {
      for (const c of created) {
        const data = await t.services.credentials.access({
          workspaceId: c.workspaceId,
          id: c.credentialId,
          serviceName: 'r',
        });
        expect(String(data.api_key)).toMatch(/^secret-of-/);
        const actor = { userId: 'x', workspaceId: c.workspaceId };
        expect((await t.services.credentials.verifyAudit(actor, c.credentialId)).intact).toBe(true);
      }
      expect(await t.services.vaultKeys.unknownKeyIds()).toEqual([]);
    });

    await withApp({ ENCRYPTION_KEY: k3 }, async (t) => {
      expect(await t.services.vaultKeys.unknownKeyIds()).toEqual([id(k2)]);
      const c = created[0] as { workspaceId: string; credentialId: number };
      await expect(
        t.services.credentials.access({ workspaceId: c.workspaceId, id: c.credentialId, serviceName: 'r' }),
      ).rejects.toMatchObject({ code: 'encryption_key_error' });
    });

    const started = await run(
      'src/main.ts',
      { ENCRYPTION_KEY: k3, PORT: '0', HOST: '127.0.0.1' },
      /Server listening/,
    );
    expect(started.output).toContain(`master key(s) ${id(k2)}, which are not configured`);

    const rotated = await run('src/cli/vault-rotate.ts', {
      ENCRYPTION_KEY: k3,
      ENCRYPTION_KEYS_PREVIOUS: k2,
    });
    expect(rotated.code, rotated.output).toBe(0);
    expect(rotated.output).toContain('done: 3 re-wrapped, 0 could not be opened');
    expect(rotated.output).toContain('ENCRYPTION_KEYS_PREVIOUS can be emptied');
    const again = await run('src/cli/vault-rotate.ts', { ENCRYPTION_KEY: k3, ENCRYPTION_KEYS_PREVIOUS: k2 });
    expect(again.output).toContain('done: 0 re-wrapped');
  });
});
