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
import { buildMember } from '../helpers/factories.ts';
import type { TestApp } from '../helpers/test-app.ts';

/**
 * The Policies pages in Chromium: the workspace's list (searched, read-only for a member), a
 * policy opened by id and created, a second version written,
 * the two compared side by side, the shown version assembled with variables and context, and an
 * A/B test between the two versions set up, read and stopped.
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

const VERSION_1 = {
  description: 'support triage',
  sections: [
    { name: 'persona', kind: 'persona', text: 'You are a careful support agent.' },
    { name: 'rules', kind: 'rules', text: 'Never share internal ticket ids.' },
    { name: 'customer', kind: 'context', text: 'The customer is {{customer}}.' },
    { name: 'pro', kind: 'rules', text: 'Offer the priority line.', when: 'context.tier == "pro"' },
  ],
  variables: { customer: { required: true } },
};
const VERSION_2 = {
  ...VERSION_1,
  sections: VERSION_1.sections.map((section) =>
    section.name === 'rules' ? { ...section, text: 'Never share internal ticket ids or emails.' } : section,
  ),
};

describe('policies', () => {
  it('creates a policy, writes a version, diffs the two, assembles one and runs an A/B test', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await signIn(page);
    await navigate(page, 'Policies');
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Policies' }).isVisible()).toBe(true);
    await expect
      .poll(() => page.getByText('No policies yet. Create one by its id above.').isVisible())
      .toBe(true);
    await expectAccessible(page);

    await page.getByLabel('Policy id', { exact: true }).fill('support-triage');
    await page.getByRole('button', { name: 'Open policy' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 2, name: 'Create the policy' }).isVisible())
      .toBe(true);
    const content = page.getByLabel('Policy content (JSON)', { exact: true });

    // Not JSON: said under the field, nothing sent. Then the API's own refusal, naming the field.
    await content.fill('{"sections": [');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await expect.poll(() => page.getByText(/^Not valid JSON/).isVisible()).toBe(true);
    await content.fill(JSON.stringify({ sections: [{ name: 'x', kind: 'nonsense', text: 'x' }] }));
    await page.getByRole('button', { name: 'Create policy' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('body.sections.0.kind');

    await content.fill(JSON.stringify(VERSION_1, null, 2));
    await page.getByLabel('Labels to move to the new version', { exact: true }).fill('production');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await expect
      .poll(() =>
        page.getByRole('heading', { level: 1, name: 'Policy support-triage version 1' }).isVisible(),
      )
      .toBe(true);

    // Version 2: the content is the shown version's, edited.
    expect(JSON.parse(await content.inputValue())).toEqual(VERSION_1);
    await content.fill(JSON.stringify(VERSION_2, null, 2));
    await page.getByRole('button', { name: 'Write version' }).click();
    await expect
      .poll(() =>
        page.getByRole('heading', { level: 1, name: 'Policy support-triage version 2' }).isVisible(),
      )
      .toBe(true);
    const stored = (await t.call(t.owner, 'GET', '/api/policy/support-triage')).json();
    expect(stored).toMatchObject({ version: 1, labels: { production: 1, latest: 2 } });
    expect(stored.versions).toHaveLength(2);

    // Side by side: version 1's line removed on the left, version 2's added on the right.
    const diff = page.getByRole('table', { name: 'Differences between version 1 and version 2' });
    await expect.poll(() => diff.isVisible()).toBe(true);
    const changed = diff.getByRole('row').filter({ hasText: 'or emails' });
    await expect.poll(() => changed.count()).toBe(1);
    expect(await changed.textContent()).toContain('removed: ');
    expect(await changed.textContent()).toContain('"text": "Never share internal ticket ids."');
    expect(await changed.textContent()).toContain('added: ');
    await expect.poll(() => page.getByText('1 line differs.').isVisible()).toBe(true);

    // Assemble the shown version (2) with its required variable and a context its condition tests.
    await page.getByLabel('customer', { exact: true }).fill('Ada');
    await page.getByLabel('Context (JSON)', { exact: true }).fill('{"tier": "pro"}');
    await page.getByRole('button', { name: 'Assemble', exact: true }).click();
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'Assembled version 2' }).isVisible())
      .toBe(true);
    const messages = page.getByRole('list', { name: 'Assembled messages' });
    await expect.poll(() => messages.textContent()).toContain('The customer is Ada.');
    expect(await messages.textContent()).toContain('Never share internal ticket ids or emails.');
    expect(await messages.textContent()).toContain('Offer the priority line.');
    const sections = page.getByRole('table', { name: 'Sections' });
    expect(await sections.getByRole('row').filter({ hasText: 'pro' }).textContent()).toContain(
      'yes: condition true',
    );
    await expectAccessible(page);
    await shot(page, 'policies-light');

    // The A/B test: none yet; production (v1) against latest (v2), started, read, stopped.
    await expect
      .poll(() => page.getByText('No A/B test between support-triage and support-triage yet.').isVisible())
      .toBe(true);
    await page.getByLabel('Control (A): support-triage at', { exact: true }).fill('production');
    await page.getByLabel('Treatment (B): support-triage at', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Start A/B test' }).click();
    const abtest = page.getByRole('region', { name: 'A/B test' });
    await expect.poll(() => abtest.textContent()).toContain('Not enough data yet');
    expect(await abtest.textContent()).toContain('A = support-triage @ production, B = support-triage v2');
    expect(await abtest.textContent()).toContain('As the weights ask (no mismatch)');
    const metrics = page.getByRole('table', { name: 'Metrics' });
    expect(await metrics.getByRole('row').filter({ hasText: 'Success rate' }).count()).toBe(1);
    expect(await metrics.getByRole('row').filter({ hasText: 'Retrieval hit rate' }).count()).toBe(0);
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Stop A/B test' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Start A/B test' }).isVisible()).toBe(true);
    const experiment = (
      await t.call(t.owner, 'GET', '/api/policy/abtest/get?policy_a=support-triage&policy_b=support-triage')
    ).json();
    expect(experiment.experiment).toMatchObject({ status: 'stopped', policy_b: { version: 2 } });

    // Choosing B moves production to version 2 and concludes the test.
    await page.getByRole('button', { name: 'Choose B as the winner' }).click();
    await page.getByRole('button', { name: 'Yes, B wins' }).click();
    await expect.poll(() => abtest.textContent()).toContain('winner B');
    const concluded = (await t.call(t.owner, 'GET', '/api/policy/support-triage')).json();
    expect(concluded).toMatchObject({ version: 2, labels: { production: 2, latest: 2 } });

    // Older versions are one press away, and the policy is in the workspace's list (opened at production).
    await page.getByRole('button', { name: 'Show version 1' }).click();
    await expect
      .poll(() =>
        page.getByRole('heading', { level: 1, name: 'Policy support-triage version 1' }).isVisible(),
      )
      .toBe(true);
    // A policy written elsewhere is listed too; the search narrows the list by id or description.
    const escalation = await t.call(t.owner, 'PUT', '/api/policy/escalation', {
      description: 'hands angry customers to a human',
      sections: [{ name: 'rules', kind: 'rules', text: 'Escalate politely.' }],
    });
    expect(escalation.statusCode, escalation.body).toBe(201);
    await navigate(page, 'Policies');
    const listed = page.getByRole('table', { name: 'Policies' });
    await expect.poll(() => listed.getByRole('row').count()).toBe(3);
    const row = listed.getByRole('row').filter({ hasText: 'support-triage' });
    expect(await row.textContent()).toContain('production → v2, latest → v2');
    expect(await row.textContent()).toContain('none running');
    await page.getByLabel('Search policies', { exact: true }).fill('ANGRY');
    await expect.poll(() => listed.getByRole('row').count()).toBe(2);
    expect(await page.getByRole('link', { name: 'escalation', exact: true }).isVisible()).toBe(true);
    expect(await page.getByRole('link', { name: 'support-triage', exact: true }).count()).toBe(0);
    await page.getByLabel('Search policies', { exact: true }).fill('');
    await expect.poll(() => listed.getByRole('row').count()).toBe(3);
    await expectAccessible(page);
    await shot(page, 'policies-list-light');
    await page.getByRole('link', { name: 'support-triage', exact: true }).click();
    await expect
      .poll(() =>
        page.getByRole('heading', { level: 1, name: 'Policy support-triage version 2' }).isVisible(),
      )
      .toBe(true);
    expect(errors).toEqual([]);
    await context.close();

    // A member reads and assembles, and is offered no write: no editor, no A/B test set-up.
    const member = await buildMember(t, t.owner);
    const memberContext = await harness.context({ width: 390 });
    const memberPage = await memberContext.newPage();
    // (signIn's token path finds 'Access token' inexactly, which also names its form.)
    await memberPage.goto('/policies');
    await memberPage.getByLabel('Access token', { exact: true }).fill(member.token);
    await memberPage.getByRole('button', { name: 'Sign in with token' }).click();
    // The list, read-only: no id to open a new policy with.
    await expect
      .poll(() => memberPage.getByText('Read-only: writing policies needs the admin role.').isVisible())
      .toBe(true);
    await expect
      .poll(() => memberPage.getByRole('table', { name: 'Policies' }).getByRole('row').count())
      .toBe(3);
    expect(await memberPage.getByLabel('Policy id', { exact: true }).count()).toBe(0);
    expect(await tooWide(memberPage)).toEqual([]);
    await memberPage.getByRole('link', { name: 'support-triage', exact: true }).click();
    await expect
      .poll(() =>
        memberPage.getByRole('heading', { level: 1, name: 'Policy support-triage version 2' }).isVisible(),
      )
      .toBe(true);
    await expect
      .poll(() => memberPage.getByText('writing versions needs the admin role', { exact: false }).isVisible())
      .toBe(true);
    expect(await memberPage.getByLabel('Policy content (JSON)').count()).toBe(0);
    expect(await memberPage.getByRole('button', { name: 'Stop A/B test' }).count()).toBe(0);
    expect(await memberPage.getByRole('region', { name: 'Content of version 2' }).textContent()).toContain(
      'Never share internal ticket ids or emails.',
    );
    await memberPage.getByLabel('customer', { exact: true }).fill('Bo');
    await memberPage.getByRole('button', { name: 'Assemble', exact: true }).click();
    await expect
      .poll(() => memberPage.getByRole('list', { name: 'Assembled messages' }).textContent())
      .toContain('The customer is Bo.');
    expect(await tooWide(memberPage)).toEqual([]);
    await memberContext.close();
  });
});
