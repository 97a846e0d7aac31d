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
 * The web console as a person uses it: the real service on a real port, Debian's Chromium,
 * elements found by role and accessible name only. Each journey signs in as the developer and
 * works through the UI; the API is called only to make something happen elsewhere (another
 * user's change, another workspace).
 */

let harness: ConsoleHarness;
let t: TestApp;
beforeAll(async () => {
  harness = await startConsole();
  t = harness.t;
});
afterAll(() => harness?.close());

describe('the web console', () => {
  it('signs in, builds two agents and a workflow, runs it and follows the run live to Completed', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await signIn(page);
    await expect
      .poll(() => page.getByRole('heading', { name: 'Dashboard', level: 1 }).isVisible())
      .toBe(true);

    for (const [name, role] of [
      ['Researcher', 'finds facts'],
      ['Writer', 'writes the summary'],
    ]) {
      await navigate(page, 'Agents');
      await page.getByRole('link', { name: 'New agent' }).click();
      await page.getByLabel('Name', { exact: true }).fill(name as string);
      await page.getByLabel('Role', { exact: true }).fill(role as string);
      await page.getByRole('button', { name: 'Create agent' }).click();
      await expect.poll(() => page.getByRole('heading', { level: 1, name }).isVisible()).toBe(true);
    }
    await navigate(page, 'Agents');
    await expect.poll(() => page.getByRole('link', { name: 'Writer' }).isVisible()).toBe(true);
    await expectAccessible(page);
    await shot(page, 'agents-light');

    await navigate(page, 'Workflows');
    await page.getByRole('link', { name: 'New workflow' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Briefing');
    await page.getByLabel('Goal', { exact: true }).fill('Write a short briefing about {{topic}}.');
    for (const agent of ['Researcher', 'Writer']) {
      await page.getByLabel('Agent to add').selectOption({ label: agent });
      await page.getByRole('button', { name: 'Add agent' }).click();
    }
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1, name: /Briefing/ }).isVisible()).toBe(true);

    await page.getByLabel('topic', { exact: true }).fill('tide pools');
    await page.getByRole('button', { name: 'Run workflow' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: /Run of Briefing/ }).isVisible())
      .toBe(true);
    // Followed live: the page reaches Completed without a reload, with both steps.
    const heading = page.getByRole('heading', { level: 1, name: /Run of Briefing/ });
    await expect.poll(() => heading.textContent(), { timeout: 30_000 }).toContain('Completed');
    const steps = page.getByRole('list', { name: 'Steps' }).getByRole('listitem');
    await expect.poll(() => steps.count()).toBe(2);
    await expect
      .poll(() => page.getByRole('list', { name: 'Run events' }).textContent())
      .toContain('run completed');
    // A finished run offers no control.
    expect(await page.getByRole('button', { name: 'Cancel run' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Resume run' }).isDisabled()).toBe(true);
    await expectAccessible(page);
    await shot(page, 'run-light');
    const runUrl = page.url();

    // The dashboard's recent runs show it; the activity feed follows a change made elsewhere.
    await navigate(page, 'Dashboard');
    await expect
      .poll(() =>
        page.getByRole('list', { name: 'Recent runs' }).getByRole('link', { name: 'Briefing' }).count(),
      )
      .toBe(1);
    await expect.poll(() => page.getByText('Live', { exact: true }).isVisible()).toBe(true);
    await buildAgent(t, t.owner, { name: 'Made elsewhere' });
    await expect
      .poll(() => page.getByRole('list', { name: 'Activity' }).textContent(), { timeout: 10_000 })
      .toContain('Made elsewhere');
    await expectAccessible(page);
    await shot(page, 'dashboard-light');

    // A deep link loads directly; a new tab has no session yet (it lives per tab), so it asks
    // to sign in and then shows the page asked for.
    const direct = await context.newPage();
    await signIn(direct, runUrl);
    await expect
      .poll(() => direct.getByRole('heading', { level: 1, name: /Run of Briefing/ }).isVisible())
      .toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('shows "not found" for another workspace’s run, and asks to sign in again with the page kept', async () => {
    const other = await t.newWorkspace();
    const agent = await buildAgent(t, other, { name: 'Theirs' });
    const workflow = await buildWorkflow(t, other, { agents: [agent.id] });
    const run = (await t.call(other, 'POST', `/api/workflows/${workflow.id}/run`, {})).json();
    expect(run.id).toBeDefined();

    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page, `/runs/${run.id}`);
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Run not found' }).isVisible())
      .toBe(true);
    expect(await page.content()).not.toContain(workflow.name);
    await context.close();
  });

  it('looks right in the dark theme and on a phone-sized screen', async () => {
    const context = await harness.context({ colorScheme: 'dark' });
    const page = await context.newPage();
    await signIn(page);
    await expect.poll(() => page.getByRole('heading', { name: 'System status' }).isVisible()).toBe(true);
    await expectAccessible(page);
    await shot(page, 'dashboard-dark');
    await page.setViewportSize({ width: 390, height: 844 });
    await navigate(page, 'Runs');
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Runs' }).isVisible()).toBe(true);
    // Runs in the page (the DOM's types are not this project's): what sticks out of the screen.
    const tooWide: string[] = await page.evaluate(() => {
      const { document, innerWidth } = globalThis as any;
      return [...document.querySelectorAll('body *')]
        .filter(
          // A wide table scrolls inside its own frame (.table-wrap), not the page.
          (element: any) =>
            element.getBoundingClientRect().right > innerWidth + 1 && !element.closest('.table-wrap'),
        )
        .map((element: any) => `${element.tagName}.${element.className}`)
        .slice(0, 5);
    });
    expect(tooWide).toEqual([]);
    await expectAccessible(page);
    await shot(page, 'runs-phone-dark');
    await context.close();
  });

  it('sends an expired session back to sign-in on the same page, and returns there after', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page, '/workflows');
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Workflows' }).isVisible())
      .toBe(true);
    // The token stops being valid (as an expired or revoked one does): the next call is a 401.
    await page.evaluate(`{
      const key = 'agent-platform.session';
      const session = JSON.parse(sessionStorage.getItem(key));
      sessionStorage.setItem(key, JSON.stringify({ ...session, token: session.token + 'x' }));
    }`);
    await page.reload();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Sign in to Agent Platform' }).isVisible())
      .toBe(true);
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('no longer valid');
    expect(new URL(page.url()).pathname).toBe('/workflows');
    await page.getByRole('button', { name: 'Sign in as developer' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Workflows' }).isVisible())
      .toBe(true);
    await context.close();
  });

  it('can be used with the keyboard alone, with a visible focus', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page, '/agents');
    await expect.poll(() => page.getByRole('link', { name: 'New agent' }).isVisible()).toBe(true);
    // Tab through the page, as a keyboard user does, until the action has the focus.
    for (let i = 0; i < 40; i += 1) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate('document.activeElement?.textContent')) === 'New agent') break;
    }
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('New agent');
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).not.toBe('none');
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'New agent' }).isVisible())
      .toBe(true);
    for (let i = 0; i < 40; i += 1) {
      await page.keyboard.press('Tab');
      if (
        (await page.evaluate('document.activeElement?.id')) ===
        (await page.getByLabel('Name', { exact: true }).getAttribute('id'))
      )
        break;
    }
    await page.keyboard.type('Typed by keyboard');
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: /Typed by keyboard/ }).isVisible())
      .toBe(true);
    await context.close();
  });

  it('keeps the live activity feed through a dropped connection, with no event lost or doubled', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page);
    await expect.poll(() => page.getByText('Live', { exact: true }).isVisible()).toBe(true);
    // The server drops every socket (a proxy's idle timeout, a restart) and an event is
    // written before the console reconnects.
    for (const socket of t.app.websocketServer.clients) socket.terminate();
    await buildAgent(t, t.owner, { name: 'Made while offline' });
    await expect
      .poll(() => page.getByText('Live', { exact: true }).isVisible(), { timeout: 30_000 })
      .toBe(true);
    const feed = page.getByRole('list', { name: 'Activity' });
    await expect.poll(() => feed.getByText('Agent “Made while offline” created').count()).toBe(1);
    await buildAgent(t, t.owner, { name: 'Made after' });
    await expect.poll(() => feed.getByText('Agent “Made after” created').count()).toBe(1);
    expect(await feed.getByText('Agent “Made while offline” created').count()).toBe(1);
    await context.close();
  });
});
