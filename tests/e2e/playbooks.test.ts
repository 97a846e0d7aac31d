import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleHarness,
  expectAccessible,
  navigate,
  screenshot as shot,
  signIn,
  startConsole,
} from '../helpers/console.ts';
import { buildAgent, buildWorkflow } from '../helpers/factories.ts';
import type { TestApp } from '../helpers/test-app.ts';

/**
 * The Playbooks pages in Chromium: successful runs are made through the API (as the engine
 * makes them elsewhere), then mined from the page with its parameters, followed to the end,
 * and one playbook is opened, promoted to a workflow, attached to an agent and archived.
 */

let harness: ConsoleHarness;
let t: TestApp;
beforeAll(async () => {
  harness = await startConsole();
  t = harness.t;
});
afterAll(() => harness?.close());

/** What sticks out of a phone-sized screen (a wide table scrolls inside its own .table-wrap). */
async function tooWide(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const { document, innerWidth } = globalThis as any;
    return [...document.querySelectorAll('body *')]
      .filter(
        (element: any) =>
          element.getBoundingClientRect().right > innerWidth + 1 && !element.closest('.table-wrap'),
      )
      .map((element: any) => `${element.tagName}.${element.className}`)
      .slice(0, 5);
  });
}

/** The run once it has ended, polled through the API. */
async function settled(runId: string) {
  let run: { status: string } = { status: '' };
  await expect
    .poll(
      async () => {
        run = (await t.call(t.owner, 'GET', `/api/runs/${runId}`)).json();
        return run.status;
      },
      { timeout: 30_000, interval: 100 },
    )
    .toMatch(/^(Completed|Failed|Cancelled)$/);
  return run;
}

describe('playbooks', () => {
  it('mines playbooks from successful runs with progress, and promotes one to a workflow', async () => {
    const writer = await buildAgent(t, t.owner, {
      name: 'Guide Writer',
      model: undefined,
      role: 'technical writer',
    });
    const reviewer = await buildAgent(t, t.owner, { name: 'Guide Reviewer', model: undefined });
    const workflow = await buildWorkflow(t, t.owner, {
      name: 'Guides',
      goal: 'Write the documentation guide for {{topic}}',
      agents: [writer.id, reviewer.id],
      context_template: { audience: 'operators' },
    });
    const ids: string[] = [];
    for (const topic of ['backups', 'upgrades', 'alerts', 'scaling']) {
      const started = await t.call(t.owner, 'POST', `/api/workflows/${workflow.id}/run`, {
        inputs: { topic },
      });
      expect(started.statusCode, started.body).toBe(202);
      ids.push(started.json().id);
    }
    for (const id of ids) expect((await settled(id)).status).toBe('Completed');

    const context = await harness.context();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await signIn(page);
    await navigate(page, 'Playbooks');
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Playbooks' }).isVisible())
      .toBe(true);
    await expect.poll(() => page.getByText('No playbooks yet.').isVisible()).toBe(true);

    // The spec's bounds are the browser's too: a support of 2 is refused before anything is sent.
    const support = page.getByLabel('Minimum support', { exact: true });
    await support.fill('2');
    await page.getByRole('button', { name: 'Mine playbooks' }).click();
    expect(
      await support.evaluate(
        (input) => (input as { validity: { rangeUnderflow: boolean } }).validity.rangeUnderflow,
      ),
    ).toBe(true);
    expect((await t.call(t.owner, 'GET', '/api/playbooks/mines')).json().total).toBe(0);

    // 4 of 4 successful runs: the Wilson lower bound (z = 1) the mine tests is 0.8.
    await support.fill('3');
    await page.getByLabel('Minimum confidence', { exact: true }).fill('0.75');
    await page.getByLabel('Time range', { exact: true }).selectOption({ label: 'Last 24 hours' });
    await page.getByRole('button', { name: 'Mine playbooks' }).click();
    // Followed while it runs: a progress bar and the mine's state, until it ends.
    await page.getByRole('progressbar', { name: 'Mining progress' }).waitFor({ state: 'attached' });
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'Mining completed' }).textContent())
      .toContain('from 4 finished runs (4 successful');
    // The list shows what the API stored: one playbook, named after its agents.
    const stored = (await t.call(t.owner, 'GET', '/api/playbooks')).json();
    expect(stored.total).toBe(1);
    const name: string = stored.items[0].name;
    expect(name).toMatch(/guide writer.*guide reviewer/i);
    const link = page.getByRole('link', { name, exact: true });
    await expect.poll(() => link.isVisible()).toBe(true);
    const row = page.getByRole('row').filter({ has: link });
    await expect.poll(() => row.textContent()).toContain('Documentation');
    await expect.poll(() => row.textContent()).toContain('100 %');
    expect(await row.textContent()).toContain('high');
    expect(await row.textContent()).toContain('4 of 4');
    await expectAccessible(page);
    await shot(page, 'playbooks-light');

    // The mine went through the background route: it is listed with its result.
    const mines = (await t.call(t.owner, 'GET', '/api/playbooks/mines')).json();
    expect(mines.items[0]).toMatchObject({
      status: 'completed',
      input: { min_support: 3, min_confidence: 0.75 },
    });

    await link.click();
    await expect.poll(() => page.getByRole('heading', { level: 1, name }).isVisible()).toBe(true);
    const pattern = page.getByRole('region', { name: 'Pattern' });
    await expect.poll(() => pattern.textContent()).toContain('Write the documentation guide for {{subject}}');
    const examples = page.getByRole('table', { name: 'Successful runs matching the playbook' });
    await expect.poll(() => examples.getByRole('link', { name: 'Guides' }).count()).toBeGreaterThan(0);
    await expectAccessible(page);
    await shot(page, 'playbook-light');

    // Promote: create the workflow only.
    await page.getByLabel('Workflow name', { exact: true }).fill('Guide writing');
    await page.getByRole('button', { name: 'Promote playbook' }).click();
    const created = page.getByRole('status').getByRole('link', { name: 'Guide writing' });
    await expect.poll(() => created.isVisible()).toBe(true);
    const playbookUrl = page.url();
    const playbookId = playbookUrl.split('/').pop() as string;
    const promoted = (await t.call(t.owner, 'GET', '/api/workflows?q=Guide%20writing')).json();
    expect(promoted.items).toEqual([
      expect.objectContaining({
        name: 'Guide writing',
        playbook_id: playbookId,
        agents: [writer.id, reviewer.id],
      }),
    ]);

    // Create and execute: the goal template's placeholder is asked for, and the run starts.
    await page.getByLabel('Workflow name', { exact: true }).fill('Guide run');
    await page.getByLabel('Create the workflow and run it', { exact: true }).check();
    await page.getByLabel('subject', { exact: true }).fill('restores');
    await page.getByRole('button', { name: 'Promote playbook' }).click();
    const runLink = page.getByRole('status').getByRole('link', { name: 'its run' });
    await expect.poll(() => runLink.isVisible()).toBe(true);
    await runLink.click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: /Run of Guide run/ }).isVisible())
      .toBe(true);
    await page.goBack();

    // Attach to an agent with a rule, then detach.
    await page.getByLabel('Guide Reviewer', { exact: true }).check();
    await page.getByLabel('When', { exact: true }).fill('goal contains "guide"');
    await page.getByRole('button', { name: 'Attach to agents' }).click();
    const attached = page.getByRole('table', { name: 'Agents the playbook is attached to' });
    await expect.poll(() => attached.textContent()).toContain('goal contains "guide"');
    const attachments = (await t.call(t.owner, 'GET', `/api/playbooks/${playbookId}/attachments`)).json();
    expect(attachments.attachments).toEqual([
      expect.objectContaining({ agent_id: reviewer.id, when: 'goal contains "guide"', mode: 'suggest' }),
    ]);
    await page.getByRole('button', { name: 'Detach from Guide Reviewer' }).click();
    await expect.poll(() => page.getByText('Not attached to any agent.').isVisible()).toBe(true);

    // The same from the agent's side: its page attaches a playbook, lists it and detaches it.
    await page.goto(`/agents/${writer.id}`);
    await page.getByLabel('Playbook', { exact: true }).selectOption({ index: 1 });
    await page.getByLabel('Mode', { exact: true }).selectOption('auto');
    await page.getByRole('button', { name: 'Attach playbook' }).click();
    const ofAgent = page.getByRole('list', { name: 'Attached playbooks' });
    await expect.poll(() => ofAgent.getByRole('link').count()).toBe(1);
    expect((await t.call(t.owner, 'GET', `/api/playbooks?agent_id=${writer.id}`)).json().items[0].id).toBe(
      playbookId,
    );
    await expectAccessible(page);
    await ofAgent.getByRole('button').click();
    await expect.poll(() => page.getByText('No playbook is attached to this agent.').isVisible()).toBe(true);
    await page.goto(playbookUrl);

    // Archive: hidden from the list unless archived ones are shown; unarchive from its page.
    await page.getByRole('button', { name: 'Archive playbook' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Unarchive playbook' }).isVisible()).toBe(true);
    await navigate(page, 'Playbooks');
    await expect.poll(() => page.getByText('No playbooks yet.').isVisible()).toBe(true);
    await page.getByLabel('Show archived', { exact: true }).check();
    await expect.poll(() => link.isVisible()).toBe(true);
    await link.click();
    await page.getByRole('button', { name: 'Unarchive playbook' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Archive playbook' }).isVisible()).toBe(true);
    expect(errors).toEqual([]);
    await context.close();

    const dark = await harness.context({ colorScheme: 'dark' });
    const darkPage = await dark.newPage();
    await signIn(darkPage, '/playbooks');
    await expect.poll(() => darkPage.getByRole('link', { name, exact: true }).isVisible()).toBe(true);
    await expectAccessible(darkPage);
    await shot(darkPage, 'playbooks-dark');
    await darkPage.setViewportSize({ width: 390, height: 844 });
    expect(await tooWide(darkPage)).toEqual([]);
    await darkPage.getByRole('link', { name, exact: true }).click();
    await expect.poll(() => darkPage.getByRole('heading', { level: 1, name }).isVisible()).toBe(true);
    expect(await tooWide(darkPage)).toEqual([]);
    await dark.close();
  });
});
