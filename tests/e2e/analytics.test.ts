import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import {
  type ConsoleHarness,
  expectAccessible,
  navigate,
  screenshot as shot,
  signIn,
  startConsole,
} from '../helpers/console.ts';
import { buildAgent, buildWorkflow, configureLoopbackModel } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import type { TestApp } from '../helpers/test-app.ts';

/**
 * The analytics page after a few runs on a priced model (a loopback OpenAI-compatible server):
 * uPlot charts, bar tables of the costs and the per-agent table, over a chosen range.
 */

let harness: ConsoleHarness;
let t: TestApp;
let llm: LlmServer;

async function runToCompletion(actor: Actor, workflowId: string): Promise<void> {
  const started = await t.call(actor, 'POST', `/api/workflows/${workflowId}/run`, {});
  expect(started.statusCode, started.body).toBe(202);
  const id = started.json().id as string;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const status = (await t.call(actor, 'GET', `/api/runs/${id}`)).json().status;
    if (status === 'Completed') return;
    if (status === 'Failed' || Date.now() > deadline) throw new Error(`run ${id} ended ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  harness = await startConsole({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  t = harness.t;
  llm = await startOpenAiServer();
  llm.fallbackReply = { type: 'text', text: 'Done.', usage: { input_tokens: 1200, output_tokens: 300 } };
  await configureLoopbackModel(t, t.owner, llm.url);
  const summarizer = await buildAgent(t, t.owner, { name: 'Summarizer', model: null });
  const checker = await buildAgent(t, t.owner, { name: 'Checker', model: null });
  const workflow = await buildWorkflow(t, t.owner, { name: 'Digest', agents: [summarizer.id, checker.id] });
  for (let i = 0; i < 3; i += 1) await runToCompletion(t.owner, workflow.id);
});
afterAll(async () => {
  await llm?.close();
  await harness?.close();
});

describe('analytics', () => {
  it('shows charts and tables of the runs, costs and agents over the chosen range', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const scripts: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/assets/')) scripts.push(new URL(request.url()).pathname);
    });
    await signIn(page);
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Dashboard' }).isVisible())
      .toBe(true);
    // uPlot comes with the analytics page's own chunk, loaded on the first visit only.
    expect(scripts.filter((path) => path.includes('AnalyticsPage'))).toEqual([]);
    await navigate(page, 'Analytics');
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Analytics' }).isVisible())
      .toBe(true);
    expect(scripts.some((path) => /AnalyticsPage.*\.js$/.test(path))).toBe(true);
    expect(scripts.some((path) => /AnalyticsPage.*\.css$/.test(path))).toBe(true);

    // Overview: the totals and the charts, each a named image drawn on a canvas.
    const overview = page.getByRole('region', { name: 'Overview' });
    await expect.poll(() => overview.textContent()).toContain('Runs3');
    const runsChart = page.getByRole('img', { name: 'Runs: 3 completed, 0 failed, 0 cancelled' });
    await expect.poll(() => runsChart.locator('canvas').count()).toBe(1);
    expect(
      await page.getByRole('img', { name: /^Tokens: 7200 input and 1800 output tokens/ }).isVisible(),
    ).toBe(true);
    expect(await page.getByRole('img', { name: /^Latency: p50/ }).isVisible()).toBe(true);
    const costChart = page.getByRole('img', { name: /^Cost over time: \$0\.0/ });
    await expect.poll(() => costChart.locator('canvas').count()).toBe(1);
    // Hovering a chart shows the numbers of that time in its legend.
    const box = await runsChart.boundingBox();
    if (!box) throw new Error('the runs chart has no box');
    // The newest hour (all three runs) is the plot's right edge, left of the chart's padding.
    await page.mouse.move(box.x + box.width / 2, box.y + 60);
    await page.mouse.move(box.x + box.width - 30, box.y + 80, { steps: 5 });
    await expect.poll(() => runsChart.textContent()).toMatch(/Completed\s*3/);

    // The same numbers as a table.
    await page.getByText('Overview by hour, as a table').click();
    const series = page.getByRole('table', { name: 'Overview by hour' });
    await expect.poll(() => series.getByRole('row').count()).toBeGreaterThan(20);

    // Costs: 6 steps of 1,200 input and 300 output tokens at $2 and $10 per million.
    const costs = page.getByRole('region', { name: 'Costs' });
    expect(await costs.textContent()).toContain('Total: $0.03');
    const byProvider = page.getByRole('table', { name: 'Cost by provider' });
    expect(await byProvider.getByRole('row', { name: /loop/ }).textContent()).toContain('$0.03');
    const byAgent = page.getByRole('table', { name: 'Cost by agent' });
    expect(await byAgent.getByRole('row', { name: /Summarizer/ }).textContent()).toContain('50 %');
    const byWorkflow = page.getByRole('table', { name: 'Cost by workflow' });
    expect(await byWorkflow.getByRole('row', { name: /Digest/ }).textContent()).toContain('$0.03');
    expect(await page.getByRole('table', { name: 'Cost by model' }).textContent()).toContain(
      'loop / chat-model',
    );

    // Agents: runs, success rate, tokens and cost per agent.
    const agents = page.getByRole('table', { name: 'Agents in this range' });
    const summarizer = await agents.getByRole('row', { name: /Summarizer/ }).textContent();
    expect(summarizer).toContain('100.0 %');
    expect(summarizer).toContain('3,600 / 900');
    await expectAccessible(page);
    await shot(page, 'analytics-light');

    // Another range: seven days by day; a custom range must start before it ends.
    await page.getByLabel('Range', { exact: true }).selectOption('Last 7 days');
    await expect.poll(() => page.getByText(/, by day$/).isVisible()).toBe(true);
    await expect.poll(() => overview.textContent()).toContain('Runs3');
    await page.getByLabel('Range', { exact: true }).selectOption('Custom range');
    await page.getByLabel('From', { exact: true }).fill('2026-01-10T00:00');
    await page.getByLabel('To', { exact: true }).fill('2026-01-05T00:00');
    await expect.poll(() => page.getByText('Choose a start before the end.').isVisible()).toBe(true);
    await page.getByLabel('To', { exact: true }).fill('2026-01-20T00:00');
    await expect.poll(() => overview.textContent()).toContain('No runs or conversations in this range.');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('reads in the dark theme', async () => {
    const context = await harness.context({ colorScheme: 'dark' });
    const page = await context.newPage();
    await signIn(page, '/analytics');
    await expect
      .poll(() => page.getByRole('img', { name: 'Runs: 3 completed, 0 failed, 0 cancelled' }).isVisible())
      .toBe(true);
    await expectAccessible(page);
    await shot(page, 'analytics-dark');
    await context.close();
  });
});
