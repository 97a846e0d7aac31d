import { createTestApp } from './tests/helpers/test-app.ts';
import { startOpenAiServer } from './tests/helpers/llm-servers.ts';

const t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
const alice = await t.newWorkspace('alice');
const llm = await startOpenAiServer();
let res = await t.call(alice, 'PUT', '/api/settings/providers', {
  providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: null }],
  default_model: { provider: 'loop', name: 'm' },
});
const agent = (await t.call(alice, 'POST', '/api/agents', { name: 'A', model: null })).json();
const wf = (await t.call(alice, 'POST', '/api/workflows', { name: 'W', goal: 'Answer', agents: [agent.id] })).json();
const raw = t.database.raw as { pglite: { query: Function; exec: Function; transaction: Function } };
const log: string[] = [];
let counting = false;
for (const m of ['query', 'exec'] as const) {
  const orig = raw.pglite[m].bind(raw.pglite);
  raw.pglite[m] = (q: string, ...rest: unknown[]) => {
    if (counting) log.push(`${m}: ${String(q).replace(/\s+/g, ' ').slice(0, 150)}`);
    return orig(q, ...rest);
  };
}
{
  const orig = raw.pglite.transaction.bind(raw.pglite);
  raw.pglite.transaction = (fn: Function) =>
    orig((tx: { query: Function; exec: Function }) => {
      if (counting) log.push('BEGIN');
      for (const m of ['query', 'exec'] as const) {
        const o = tx[m].bind(tx);
        tx[m] = (q: string, ...rest: unknown[]) => {
          if (counting) log.push(`  tx ${m}: ${String(q).replace(/\s+/g, ' ').slice(0, 150)}`);
          return o(q, ...rest);
        };
      }
      return fn(tx);
    });
}
async function runOnce() {
  const run = (await t.call(alice, 'POST', `/api/workflows/${wf.id}/run`, {})).json();
  for (;;) {
    const r = (await t.call(alice, 'GET', `/api/runs/${run.id}`)).json();
    if (['Completed', 'Failed'].includes(r.status)) return r;
    await new Promise((r) => setTimeout(r, 50));
  }
}
await runOnce();
await new Promise((r) => setTimeout(r, 300));
counting = true;
const r = await runOnce();
await new Promise((r) => setTimeout(r, 300));
counting = false;
console.log(r.status, log.filter((l) => !l.includes('from "runs" where') || true).length, 'statements');
for (const l of log) console.log(l);
await llm.close();
await t.close();
