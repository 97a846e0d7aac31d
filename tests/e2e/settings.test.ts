import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleHarness,
  expectAccessible,
  screenshot as shot,
  signIn,
  startConsole,
} from '../helpers/console.ts';
import { buildCredential, buildMember } from '../helpers/factories.ts';
import { type LlmServer, startOpenAiServer } from '../helpers/llm-servers.ts';
import type { TestApp } from '../helpers/test-app.ts';

/**
 * The settings pages: each section offers its controls only to the roles the API allows (an
 * owner changes flags, CORS, providers, members and keys and downloads the audit export; a
 * member reads, and is told why the controls are missing).
 */

let harness: ConsoleHarness;
let t: TestApp;
let llm: LlmServer;
beforeAll(async () => {
  // A model server on this machine's loopback (allowed for vault keys in development only).
  harness = await startConsole({ env: { VAULT_ALLOW_LOOPBACK: 'true' } });
  t = harness.t;
  llm = await startOpenAiServer();
});
afterAll(async () => {
  await llm?.close();
  await harness?.close();
});

/** The elements that stick out of the screen, outside a scrolling table frame. */
const overflowing = (page: Page): Promise<string[]> =>
  page.evaluate(() => {
    const { document, innerWidth } = globalThis as any;
    return [...document.querySelectorAll('body *')]
      .filter(
        (element: any) =>
          element.getBoundingClientRect().right > innerWidth + 1 && !element.closest('.table-wrap'),
      )
      .map((element: any) => `${element.tagName}.${element.className}`)
      .slice(0, 5);
  });

describe('settings', () => {
  it('lets the owner change a feature flag, CORS, providers, members and API keys, and export the audit trail', async () => {
    const vaultKey = await buildCredential(t, t.owner, {
      name: 'OpenAI key',
      credential_type: 'openai_credentials',
      data: { api_key: 'sk-test-never-shown' },
    });
    const context = await harness.context();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await signIn(page, '/settings');
    const sections = page.getByRole('navigation', { name: 'Settings' });
    await expect
      .poll(() => page.getByRole('heading', { level: 2, name: 'Model providers' }).isVisible())
      .toBe(true);

    // Providers: a provider whose key is chosen from the vault by name, a price and a fallback.
    await page.getByRole('button', { name: 'Add provider' }).click();
    await page.getByLabel('Provider id', { exact: true }).fill('openai');
    await page.getByLabel('Base URL', { exact: true }).fill(llm.url);
    await page
      .getByLabel('API key from the vault')
      .selectOption({ label: 'OpenAI key (openai_credentials, production)' });
    await page.getByLabel('Default provider').fill('openai');
    await page.getByLabel('Default model name').fill('gpt-4o-mini');
    await page.getByRole('button', { name: 'Add price' }).click();
    await page.getByLabel('Price 1 model').fill('gpt-4o-mini');
    await page.getByLabel('Input', { exact: true }).fill('0.15');
    await page.getByLabel('Output', { exact: true }).fill('0.6');
    await page.getByRole('button', { name: 'Add fallback' }).click();
    await page.getByLabel('Fallback 1 model').fill('gpt-4o');
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Save provider settings' }).click();
    await expect.poll(() => page.getByRole('status').allTextContents()).toContain('Provider settings saved.');
    const providers = (await t.call(t.owner, 'GET', '/api/settings/providers')).json();
    expect(providers).toMatchObject({
      providers: [{ id: 'openai', base_url: llm.url, credential_id: vaultKey.id }],
      default_model: { provider: 'openai', name: 'gpt-4o-mini' },
      prices: [{ provider: 'openai', name: 'gpt-4o-mini', input_per_million: 0.15, output_per_million: 0.6 }],
      fallback: [{ provider: 'openai', name: 'gpt-4o' }],
    });
    await shot(page, 'settings-light');

    // A feature flag: created, then switched off.
    await sections.getByRole('link', { name: 'Feature flags' }).click();
    await page.getByLabel('Key', { exact: true }).fill('checkout.new-flow');
    await page.getByRole('button', { name: 'Create flag' }).click();
    const flagSwitch = page.getByRole('switch', { name: 'Enable checkout.new-flow' });
    await expect.poll(() => flagSwitch.isChecked()).toBe(true);
    await flagSwitch.click();
    await expect.poll(() => flagSwitch.isChecked()).toBe(false);
    const flag = (await t.call(t.owner, 'GET', '/api/settings/flags/checkout.new-flow')).json();
    expect(flag).toMatchObject({ type: 'boolean', default: false, enabled: false, version: 2 });
    await expectAccessible(page);

    // CORS (the development owner is a platform operator).
    await sections.getByRole('link', { name: 'CORS' }).click();
    await page.getByLabel('Allowed origins').fill('https://dashboard.example.com');
    await page.getByRole('switch', { name: 'Allow credentials' }).click();
    await page.getByRole('button', { name: 'Save CORS policy' }).click();
    await expect
      .poll(() => page.getByText('Saved: every API process applies it at once.').isVisible())
      .toBe(true);
    expect((await t.call(t.owner, 'GET', '/api/settings/cors')).json()).toMatchObject({
      origins: ['https://dashboard.example.com'],
      credentials: true,
    });
    await expectAccessible(page);

    // Members: add one, change their role.
    await sections.getByRole('link', { name: 'Members' }).click();
    await page.getByLabel('User id', { exact: true }).fill('ada');
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Add member' }).click();
    const adaRole = page.getByLabel('Role of ada');
    await expect.poll(() => adaRole.inputValue()).toBe('viewer');
    await adaRole.selectOption('member');
    await expect
      .poll(
        async () =>
          (await t.call(t.owner, 'GET', '/api/workspaces/members'))
            .json()
            .items.find((m: any) => m.user_id === 'ada')?.role,
      )
      .toBe('member');
    await expectAccessible(page);

    // API keys: the key is shown once, then only its prefix.
    await sections.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Key name').fill('CI');
    await page.getByRole('button', { name: 'Create API key' }).click();
    await expect
      .poll(() => page.getByText('Copy the key now: it is shown only once.').isVisible())
      .toBe(true);
    await expect.poll(() => page.getByRole('button', { name: 'Revoke CI' }).isVisible()).toBe(true);

    // Audit: the summary and a CSV download with the changes made above.
    await sections.getByRole('link', { name: 'Audit' }).click();
    await expect
      .poll(() => page.getByRole('region', { name: 'Summary' }).textContent())
      .toContain('verified');
    expect(await page.getByRole('table', { name: 'Audit records by action' }).textContent()).toContain(
      'flag',
    );
    await expectAccessible(page);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download export' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^audit-.*\.csv$/);
    const file = await download.path();
    const csv = fs.readFileSync(file, 'utf8');
    expect(csv).toContain('member.added');
    expect(csv).toContain('providers.updated');
    expect(csv).not.toContain('sk-test-never-shown');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('shows a member every section read-only, saying which role is needed', async () => {
    const member = await buildMember(t, t.owner, { role: 'member' });
    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page, '/settings', { token: await t.token(member.userId) });
    const sections = page.getByRole('navigation', { name: 'Settings' });
    await expect
      .poll(() => page.getByRole('heading', { level: 2, name: 'Model providers' }).isVisible())
      .toBe(true);
    const readOnly = 'Read-only: needs the admin role';
    await expect.poll(() => page.getByRole('note').textContent()).toContain(readOnly);
    expect(await page.getByRole('button', { name: 'Save provider settings' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Add provider' }).count()).toBe(0);
    // The settings are still shown, as text.
    expect(await page.getByRole('main').textContent()).toContain('Default model');
    await expectAccessible(page);

    await sections.getByRole('link', { name: 'Feature flags' }).click();
    await expect.poll(() => page.getByRole('note').textContent()).toContain(readOnly);
    expect(await page.getByRole('switch').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Create flag' }).count()).toBe(0);

    await sections.getByRole('link', { name: 'Members' }).click();
    await expect
      .poll(() => page.getByRole('table', { name: 'Members' }).textContent())
      .toContain(member.userId);
    expect(await page.getByRole('note').textContent()).toContain(readOnly);
    expect(await page.getByRole('main').getByRole('combobox').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Add member' }).count()).toBe(0);

    await sections.getByRole('link', { name: 'CORS' }).click();
    await expect
      .poll(() => page.getByRole('note').textContent())
      .toContain('Read-only: needs a platform operator');
    expect(await page.getByRole('button', { name: 'Save CORS policy' }).count()).toBe(0);

    for (const section of ['API keys', 'Audit', 'Vault']) {
      await sections.getByRole('link', { name: section }).click();
      await expect.poll(() => page.getByRole('note').textContent()).toContain(readOnly);
    }
    expect(await page.getByRole('switch', { name: 'Refuse private networks' }).isDisabled()).toBe(true);
    await expectAccessible(page);

    // On a phone-sized screen nothing sticks out of the page (wide tables scroll in their frame).
    await page.setViewportSize({ width: 390, height: 844 });
    for (const section of ['Members', 'Providers']) {
      await sections.getByRole('link', { name: section }).click();
      await expect.poll(() => page.getByRole('note').isVisible()).toBe(true);
      expect(await overflowing(page)).toEqual([]);
    }
    await context.close();
  });
});
