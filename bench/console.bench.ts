/**
 * `npm run bench:console`: the web console in Chromium on this machine, against the service on
 * the embedded database, with the issue's targets side by side:
 *
 * - size: the JavaScript the first page load (the dashboard, signed in) fetches, gzip, against
 *   250 KB, and the whole console's JavaScript split by route;
 * - the dashboard's first contentful paint (target < 1 s) and the time until it is fully
 *   populated (KPIs, system status, recent runs and the live feed connected; target < 1.5 s),
 *   BENCH_LOADS (10) loads each in a fresh tab, p50 and max;
 * - a run event on the run page: the time from the engine's write (the event's `created_at`) to
 *   its line appearing in the page (a MutationObserver), over every event of BENCH_RUNS (5) runs of
 *   a 10-agent workflow, p50 and p95 (target p50 < 250 ms);
 * - the runs list over 10,000 stored runs: open it and page through BENCH_PAGES (20) pages, the
 *   longest task the browser reports (target: none over 200 ms).
 *
 * Needs Chromium (`apt-get install chromium`, or CHROMIUM_PATH) and a built console
 * (`npm run web:build`, which `npm ci` runs).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { sql } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { buildApp } from '../src/app.ts';
import { boot, startServices } from '../src/boot.ts';
import { loadConfig } from '../src/config.ts';
import { CONSOLE_DIR } from '../src/http/console.ts';
import { readDevIdentity } from '../src/modules/identity/dev-identity.ts';
import { mintDevToken } from '../src/modules/identity/dev-issuer.ts';
import { launchChromium } from '../tests/helpers/browser.ts';
import { startOpenAiServer } from '../tests/helpers/llm-servers.ts';

const LOADS = Number(process.env.BENCH_LOADS ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const PAGES = Number(process.env.BENCH_PAGES ?? 20);
const STORED_RUNS = 10_000;

if (!fs.existsSync(path.join(CONSOLE_DIR, 'index.html'))) {
  console.error('the console is not built: npm run web:build');
  process.exit(1);
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const ms = (value: number) => `${value.toFixed(0)} ms`;
const row = (what: string, measured: string, target: string, met: boolean) =>
  console.log(`| ${what} | ${measured} | ${target} | ${met ? 'met' : 'NOT met'} |`);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-console-'));
const config = loadConfig({
  ...process.env,
  POSTGRES_HOST: '',
  REDIS_URL: '',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  PORT: '0',
  // The run events' model is a loopback server (below).
  VAULT_ALLOW_LOOPBACK: 'true',
});
const { database, services } = await boot(config);
const stopServices = await startServices(services);
const app = await buildApp(services);
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (!address || typeof address === 'string') throw new Error('no port');
const base = `http://127.0.0.1:${address.port}`;
const identity = readDevIdentity(dataDir);
if (!identity || !services.devKey) throw new Error('development mode is needed');
const token = await mintDevToken(services.devKey, {
  userId: identity.user_id,
  issuer: config.auth.issuer,
  audience: config.auth.audience,
});
const headers = {
  authorization: `Bearer ${token}`,
  'x-workspace-id': identity.workspace_id,
  'content-type': 'application/json',
};
// biome-ignore lint/suspicious/noExplicitAny: the API's JSON, read by field
const api = async (method: string, url: string, body?: unknown): Promise<any> => {
  const response = await fetch(`${base}${url}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  return response.json();
};

const browser = await launchChromium();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
// Signed in as a tab that already holds its session (what the sign-in page stores).
// (Scripts that run in the page are strings: the DOM's types are not this project's.)
await context.addInitScript(`
  sessionStorage.setItem('agent-platform.session', ${JSON.stringify(JSON.stringify({ token, via: 'token' }))});
  sessionStorage.setItem('agent-platform.workspace', ${JSON.stringify(JSON.stringify(identity.workspace_id))});
`);

try {
  console.log(`Web console, Chromium ${browser.version()}, embedded database, ${os.cpus().length} cores`);
  console.log('');
  console.log('| measure | measured | target | |');
  console.log('|---|---:|---|---|');

  // 1. The JavaScript of the first page load, and of the whole console.
  const page = await context.newPage();
  const scripts = new Set<string>();
  page.on('response', (response) => {
    if (response.url().endsWith('.js')) scripts.add(new URL(response.url()).pathname);
  });
  await page.goto(`${base}/`);
  await page.getByRole('heading', { name: 'System status' }).waitFor();
  await page.getByText('Live', { exact: true }).waitFor();
  const gzipOf = (pathname: string) =>
    zlib.gzipSync(fs.readFileSync(path.join(CONSOLE_DIR, pathname)), { level: 9 }).length;
  const firstLoad = [...scripts].reduce((sum, script) => sum + gzipOf(script), 0);
  const all = fs
    .readdirSync(path.join(CONSOLE_DIR, 'assets'))
    .filter((name) => name.endsWith('.js'))
    .map((name) => `/assets/${name}`);
  const total = all.reduce((sum, script) => sum + gzipOf(script), 0);
  row(
    `first page load JavaScript (dashboard), gzip, ${scripts.size} files`,
    `${(firstLoad / 1024).toFixed(1)} KB`,
    '< 250 KB',
    firstLoad < 250 * 1024,
  );
  row(
    `all of the console's JavaScript, gzip, ${all.length} files`,
    `${(total / 1024).toFixed(1)} KB`,
    'split by route',
    true,
  );
  await page.close();

  // 2. The dashboard: first contentful paint and fully populated, fresh tabs.
  for (let i = 0; i < 8; i += 1) await api('POST', '/api/agents', { name: `Agent ${i}` });
  const paints: number[] = [];
  const populated: number[] = [];
  for (let i = 0; i < LOADS; i += 1) {
    const tab = await context.newPage();
    await tab.goto(`${base}/`);
    await tab.getByRole('heading', { name: 'System status' }).waitFor();
    await tab.getByText('Live', { exact: true }).waitFor();
    await tab.getByRole('list', { name: 'Recent runs' }).waitFor({ state: 'attached' });
    const done = (await tab.evaluate('performance.now()')) as number;
    const paint = (await tab.evaluate(
      "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN",
    )) as number;
    paints.push(paint);
    populated.push(done);
    await tab.close();
  }
  row(
    `dashboard first contentful paint, ${LOADS} loads (p50 / max)`,
    `${ms(percentile(paints, 50))} / ${ms(Math.max(...paints))}`,
    '< 1 s',
    percentile(paints, 50) < 1000,
  );
  row(
    `dashboard fully populated, ${LOADS} loads (p50 / max)`,
    `${ms(percentile(populated, 50))} / ${ms(Math.max(...populated))}`,
    '< 1.5 s',
    percentile(populated, 50) < 1500,
  );

  // 3. Run events: from the engine's write to the line on the run page.
  const agents = (await api('GET', '/api/agents?limit=8')).items.map((agent: { id: string }) => agent.id);
  const workflow = await api('POST', '/api/workflows', {
    name: 'Ten steps',
    goal: 'Summarise {{topic}}',
    agents: [...agents, agents[0], agents[1]],
  });
  const delays: number[] = [];
  // Each step's model answers after 250 ms (a loopback OpenAI-compatible server), so a run's
  // events are spread over seconds and the page, opened as the run starts, sees them arrive.
  const llm = await startOpenAiServer();
  llm.fallbackReply = { type: 'text', text: ['An ', 'answer.'], firstByteDelayMs: 250 };
  const types = (await api('GET', '/api/credentials/types')).items as { id: number; name: string }[];
  const credential = await api('POST', '/api/credentials', {
    name: 'bench model key',
    credential_type_id: types.find((type) => type.name === 'openai_credentials')?.id,
    data: { api_key: 'sk-bench-console' },
  });
  await api('PUT', '/api/settings/providers', {
    providers: [{ id: 'loop', kind: 'openai_compatible', base_url: llm.url, credential_id: credential.id }],
    default_model: { provider: 'loop', name: 'bench-model' },
  });
  let measuredRuns = 0;
  for (let i = 0; i < RUNS; i += 1) {
    const run = await api('POST', `/api/workflows/${workflow.id}/run`, { inputs: { topic: `t${i}` } });
    const tab = await context.newPage();
    await tab.goto(`${base}/runs/${run.id}`);
    await tab.getByRole('list', { name: 'Run events' }).waitFor({ state: 'attached' });
    await installEventClock(tab);
    // Only what the engine writes from here on is measured (the page may replay what came before).
    const watching = Date.now() + 50;
    await tab
      .getByRole('list', { name: 'Run events' })
      .getByText('run completed')
      .waitFor({ timeout: 60_000 });
    const shownAt = new Map((await tab.evaluate('window.seen')) as [string, number][]);
    for (const event of await eventsOf(run.id)) {
      const at = shownAt.get(event.key);
      if (at !== undefined && event.created >= watching) delays.push(at - event.created);
    }
    measuredRuns += 1;
    await tab.close();
  }
  await llm.close();
  row(
    `run event: engine write to the run page, ${delays.length} events of ${measuredRuns} runs (p50 / p95)`,
    `${ms(percentile(delays, 50))} / ${ms(percentile(delays, 95))}`,
    'p50 < 250 ms',
    percentile(delays, 50) < 250,
  );

  // 4. The runs list over 10,000 runs: page through, the longest task.
  await database.db.execute(sql`
    insert into runs (workspace_id, workflow_id, workflow_name, status, plan, agent_ids, cost, tokens_in,
      tokens_out, duration_ms, created_at, started_at, finished_at)
    select ${identity.workspace_id}, ${workflow.id}, 'Ten steps', 'Completed',
      '{"goal":"g","execution_policy":{"mode":"sequential","error_handling":"stop","max_retries":0,"timeout_seconds":900}}'::jsonb,
      '{}'::uuid[], (g % 97) / 1000.0, 200 + g % 1800, 50 + g % 700, 100 + g % 5000,
      now() - g * interval '1 minute', now() - g * interval '1 minute', now() - g * interval '1 minute' + interval '1 second'
    from generate_series(1, ${STORED_RUNS}) g`);
  const list = await context.newPage();
  await list.addInitScript(`
    window.longest = { value: 0, count: 0 };
    new PerformanceObserver((entries) => {
      for (const entry of entries.getEntries()) {
        window.longest.value = Math.max(window.longest.value, entry.duration);
        window.longest.count += 1;
      }
    }).observe({ type: 'longtask', buffered: true });
  `);
  const opened = performance.now();
  await list.goto(`${base}/runs`);
  await list.getByRole('navigation', { name: 'Runs pages' }).waitFor();
  const firstPage = performance.now() - opened;
  const pageTimes: number[] = [];
  for (let i = 0; i < PAGES; i += 1) {
    const before = await list.getByRole('navigation', { name: 'Runs pages' }).textContent();
    const started = performance.now();
    await list.getByRole('button', { name: 'Next page' }).click();
    await list.waitForFunction(
      `document.querySelector('nav[aria-label="Runs pages"]')?.textContent !== ${JSON.stringify(before)}`,
    );
    pageTimes.push(performance.now() - started);
  }
  await list.mouse.wheel(0, 4000);
  const longest = (await list.evaluate('window.longest')) as { value: number; count: number };
  row(
    `runs list of ${STORED_RUNS.toLocaleString('en')} runs: first page, then ${PAGES} pages (p50 / max)`,
    `${ms(firstPage)}; ${ms(percentile(pageTimes, 50))} / ${ms(Math.max(...pageTimes))}`,
    'no long task > 200 ms',
    longest.value <= 200,
  );
  row(
    'runs list: longest task (count of tasks over 50 ms)',
    `${ms(longest.value)} (${longest.count})`,
    '<= 200 ms',
    longest.value <= 200,
  );
  console.log('');
  console.log(
    `load average at the end: ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}`,
  );
} finally {
  await browser.close();
  await app.close();
  await stopServices();
  await database.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

/** Records, in the page, when each run event's line appears (epoch milliseconds). */
async function installEventClock(tab: Page): Promise<void> {
  await tab.evaluate(`
    window.seen = [];
    new MutationObserver((mutations) => {
      const now = performance.timeOrigin + performance.now();
      for (const mutation of mutations) {
        for (const node of mutation.addedNodes) {
          const text = node.querySelector?.('strong')?.textContent;
          if (text) window.seen.push([text, now]);
        }
      }
    }).observe(document.querySelector('ol[aria-label="Run events"]'), { childList: true });
  `);
}

/** The run's events as the page words them, with the time the engine wrote each. */
async function eventsOf(runId: string): Promise<{ key: string; created: number }[]> {
  const response = await fetch(`${base}/api/runs/${runId}/events`, {
    headers: { ...headers, accept: 'text/event-stream' },
  });
  const text = await response.text();
  const events: { key: string; created: number }[] = [];
  for (const block of text.split('\n\n')) {
    const name = /^event: (.+)$/m.exec(block)?.[1];
    const data = /^data: (.+)$/m.exec(block)?.[1];
    if (!name || !data || name === 'run') continue;
    const payload = JSON.parse(data) as Record<string, unknown>;
    const created = Date.parse(String(payload.created_at));
    events.push({ key: describe(name, payload), created });
  }
  return events;
}

/** The line the run page shows for an event (pages/runs/RunPage.tsx `summarize`). */
function describe(name: string, data: Record<string, unknown>): string {
  switch (name) {
    case 'step.started':
      return `step ${Number(data.position) + 1} started${typeof data.agent === 'string' ? ` (${data.agent})` : ''}`;
    case 'step.completed':
      return `step ${Number(data.position) + 1} completed${data.model ? ` by ${data.provider}/${data.model}` : ''}`;
    case 'step.failed':
      return `step ${Number(data.position) + 1} failed: ${String(data.error ?? '')}`;
    case 'tool_call':
      return `tool ${String(data.name)}${data.error ? ` failed: ${String(data.error)}` : ''}`;
    default:
      return name.replace('.', ' ');
  }
}
