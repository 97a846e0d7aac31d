import { createTestApp } from './tests/helpers/test-app.ts';
import { startOpenAiServer } from './tests/helpers/llm-servers.ts';

const t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
const alice = await t.newWorkspace('alice');
const llm = await startOpenAiServer();
let res = await t.call(alice, 'PUT', '/api/settings/providers', {
  providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
  default_model: { provider: 'loop', name: 'm' },
});
if (res.statusCode !== 200) throw new Error(res.body);
const N = Number(process.env.N ?? 600);
const raw = t.database.raw as { pglite: { query: Function; exec: Function; transaction: Function } };
const log: string[] = [];
let counting = false;
for (const m of ['query', 'exec'] as const) {
  const orig = raw.pglite[m].bind(raw.pglite);
  raw.pglite[m] = (q: string, ...rest: unknown[]) => {
    if (counting) log.push(`${m}: ${String(q).replace(/\s+/g, ' ').slice(0, 140)}`);
    return orig(q, ...rest);
  };
}
{
  const orig = raw.pglite.transaction.bind(raw.pglite);
  raw.pglite.transaction = (fn: Function) =>
    orig((tx: { query: Function; exec: Function }) => {
      for (const m of ['query', 'exec'] as const) {
        const o = tx[m].bind(tx);
        tx[m] = (q: string, ...rest: unknown[]) => {
          if (counting) log.push(`tx ${m}: ${String(q).replace(/\s+/g, ' ').slice(0, 140)}`);
          return o(q, ...rest);
        };
      }
      return fn(tx);
    });
}
await t.call(alice, 'POST', '/api/chat', { message: 'warm' });
counting = true;
await t.call(alice, 'POST', '/api/chat', { message: 'counted' });
counting = false;
console.log(log.length, 'statements per chat');
for (const l of log) console.log('  ', l);

const took: number[] = [];
for (let i = 0; i < N; i++) {
  const t0 = performance.now();
  res = await t.call(alice, 'POST', '/api/chat', { message: `hello ${i}` });
  took.push(performance.now() - t0);
  if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
}
took.sort((a, b) => a - b);
console.log('p50 full chat (inject, incl. provider)', took[Math.floor(N / 2)]?.toFixed(2), 'ms');
console.log(res.body.slice(0, 300));
await llm.close();
await t.close();
