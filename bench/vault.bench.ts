/**
 * `npm run bench:vault`: the credential vault's throughput in ops/s, through the service
 * layer (what every caller of decrypted access uses), on PostgreSQL (127.0.0.1:5432 or
 * POSTGRES_*) and on PGlite; encryption alone beside it in the same run.
 *
 * - create: C1 validation, id reservation, encryption, insert and the `created` audit record
 * - list: one page of 20 credentials with its total
 * - access: rule C2 with its `accessed` audit record, in one transaction (the target:
 *   >= 2,000/s on PostgreSQL on 2 cores), spread over 100 credentials
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { boot } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import {
  deriveWorkspaceKeys,
  generateDataKey,
  openCredential,
  sealCredential,
} from '../src/lib/crypto/envelope.ts';
import { createBenchPostgres } from './postgres-env.ts';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ACCESS_OPS = Number(process.env.BENCH_ACCESS_OPS ?? 10_000);

interface Row {
  engine: string;
  operation: string;
  ops: number;
  seconds: number;
}

/** Runs `count` operations with `concurrency` in flight; answers ops/s. */
async function measure(count: number, concurrency: number, op: (i: number) => Promise<unknown>) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await op(next++);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { ops: count / seconds, seconds };
}

async function benchEngine(engine: string, env: NodeJS.ProcessEnv): Promise<Row[]> {
  const config = loadConfig({
    ...env,
    LOG_LEVEL: 'silent',
    ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
  });
  const { database, services } = await boot(config);
  const rows: Row[] = [];
  try {
    const workspace = await services.workspaces.createWorkspace('bench', { name: 'vault bench' });
    const actor = { userId: 'bench', workspaceId: workspace.id };
    const types = await services.credentials.listTypes(actor, {});
    const typeId = types.find((t) => t.name === 'postgres_credentials')?.id as number;
    const data = { host: 'db.internal', database: 'app', username: 'app', password: 'not-a-real-password' };
    const create = (i: number) =>
      services.credentials.create(actor, { name: `credential-${i}`, credential_type_id: typeId, data });

    for (let i = 0; i < 20; i++) await create(-1 - i); // warm-up
    const created = await measure(1000, CONCURRENCY, create);
    rows.push({ engine, operation: 'create (+ audit)', ...created });

    const list = () => services.credentials.list(actor, { limit: 20, offset: 0 });
    const listed = await measure(2000, CONCURRENCY, list);
    rows.push({ engine, operation: 'list 20 of 1,020', ...listed });

    const page = await services.credentials.list(actor, { limit: 100, offset: 0 });
    const ids = page.items.map((item) => item.id);
    const access = (i: number) =>
      services.credentials.access({
        workspaceId: workspace.id,
        id: ids[i % ids.length] as number,
        serviceName: 'bench',
        userId: 'bench',
        fields: ['password'],
      });
    for (let i = 0; i < 200; i++) await access(i); // warm-up
    const accessed = await measure(ACCESS_OPS, CONCURRENCY, access);
    rows.push({ engine, operation: 'decrypted access (+ audit)', ...accessed });
  } finally {
    await database.close();
  }
  return rows;
}

function benchEncryption(): Row[] {
  const { credentialKey } = deriveWorkspaceKeys(generateDataKey());
  const binding = { workspaceId: '00000000-0000-4000-8000-000000000000', credentialId: 1, typeId: 1 };
  const data = { host: 'db.internal', database: 'app', username: 'app', password: 'not-a-real-password' };
  const count = 100_000;
  let blob = '';
  let started = performance.now();
  for (let i = 0; i < count; i++) blob = sealCredential(credentialKey, data, binding);
  const sealSeconds = (performance.now() - started) / 1000;
  started = performance.now();
  for (let i = 0; i < count; i++) openCredential(credentialKey, blob, binding);
  const openSeconds = (performance.now() - started) / 1000;
  return [
    {
      engine: 'in memory',
      operation: 'encrypt (AES-256-GCM)',
      ops: count / sealSeconds,
      seconds: sealSeconds,
    },
    {
      engine: 'in memory',
      operation: 'decrypt (AES-256-GCM)',
      ops: count / openSeconds,
      seconds: openSeconds,
    },
  ];
}

const rows: Row[] = [...benchEncryption()];
const postgres = await createBenchPostgres('bench_vault');
if (postgres) {
  try {
    rows.push(...(await benchEngine('PostgreSQL', postgres.env)));
  } finally {
    await postgres.drop();
  }
} else {
  process.stderr.write('PostgreSQL not reachable: skipping its rows\n');
}
const pgliteDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-vault-pglite-'));
try {
  rows.push(...(await benchEngine('PGlite', { DATA_DIR: pgliteDir })));
} finally {
  fs.rmSync(pgliteDir, { recursive: true, force: true });
}

console.log(`\n${CONCURRENCY} operations in flight, ${os.cpus().length} cores, node ${process.version}\n`);
console.log(
  `${'engine'.padEnd(11)} ${'operation'.padEnd(28)} ${'ops/s'.padStart(9)} ${'seconds'.padStart(8)}`,
);
for (const row of rows) {
  console.log(
    `${row.engine.padEnd(11)} ${row.operation.padEnd(28)} ${row.ops.toFixed(0).padStart(9)} ${row.seconds.toFixed(2).padStart(8)}`,
  );
}
const access = rows.find((r) => r.engine === 'PostgreSQL' && r.operation.startsWith('decrypted'));
if (access) {
  console.log(
    `\ntarget (PostgreSQL decrypted access with audit >= 2,000/s): ${access.ops.toFixed(0)}/s -> ${access.ops >= 2000 ? 'met' : 'NOT met'}`,
  );
}
