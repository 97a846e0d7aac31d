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
import { buildCredential, buildMember, CREDENTIAL_SECRET } from '../helpers/factories.ts';
import type { TestApp } from '../helpers/test-app.ts';

/**
 * The credentials pages: a form generated from the type's schema_definition, a connection test
 * against the machine's PostgreSQL, the audit log; the secret never reaches the page or any
 * API answer the console reads.
 */

let harness: ConsoleHarness;
let t: TestApp;
beforeAll(async () => {
  // A self-hosted install that lets workspaces reach private networks (the machine's PostgreSQL).
  harness = await startConsole({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' } });
  t = harness.t;
  const optOut = await t.call(t.owner, 'PUT', '/api/credentials/settings', {
    refuse_private_networks: false,
  });
  expect(optOut.statusCode, optOut.body).toBe(200);
});
afterAll(() => harness?.close());

/** Every body of an /api answer the page receives, to search for the secret. */
function collectApiBodies(page: Page): { bodies: string[]; pending: Promise<unknown>[] } {
  const seen = { bodies: [] as string[], pending: [] as Promise<unknown>[] };
  page.on('response', (response) => {
    if (!new URL(response.url()).pathname.startsWith('/api/')) return;
    seen.pending.push(
      response
        .text()
        .then((body) => seen.bodies.push(`${response.url()}\n${body}`))
        .catch(() => undefined),
    );
  });
  return seen;
}

describe('credentials', () => {
  it('creates a PostgreSQL credential from its schema, tests it, edits it, and never shows the password', async () => {
    const context = await harness.context();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const api = collectApiBodies(page);
    await signIn(page);
    await navigate(page, 'Credentials');
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Credentials' }).isVisible())
      .toBe(true);
    // Types by category, each offering a new credential of its type.
    await expect
      .poll(() => page.getByRole('heading', { level: 3, name: 'Databases' }).isVisible())
      .toBe(true);
    await expect.poll(() => page.getByText('No credentials yet.', { exact: false }).isVisible()).toBe(true);
    await page.getByRole('link', { name: 'New PostgreSQL credential' }).click();

    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'New PostgreSQL credential' }).isVisible())
      .toBe(true);
    // The form is the type's schema_definition: text, number, password (masked) and a toggle.
    const password = page.getByLabel('Password', { exact: true });
    expect(await password.getAttribute('type')).toBe('password');
    expect(await page.getByLabel('Port', { exact: true }).inputValue()).toBe('5432');
    expect(await page.getByLabel('Port', { exact: true }).getAttribute('type')).toBe('number');
    const tls = page.getByRole('switch', { name: 'Use TLS' });
    expect(await tls.isChecked()).toBe(false);
    await page.getByLabel('Name', { exact: true }).fill('Warehouse');
    await page.getByLabel('Host', { exact: true }).fill('127.0.0.1');
    await page.getByLabel('Database', { exact: true }).fill('postgres');
    await page.getByLabel('User', { exact: true }).fill('postgres');
    await password.fill(CREDENTIAL_SECRET);
    await page.getByLabel('Environment', { exact: true }).fill('staging');
    await page.getByLabel('Tags', { exact: true }).fill('warehouse, reporting');
    await expectAccessible(page);
    await shot(page, 'credential-form-light');
    await page.getByRole('button', { name: 'Create credential' }).click();

    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Warehouse' }).isVisible())
      .toBe(true);
    const details = page.getByRole('region', { name: 'Details' });
    expect(await details.textContent()).toContain('staging');
    expect(await details.textContent()).toContain('warehouse, reporting');
    expect(await page.getByRole('region', { name: 'Connection', exact: true }).textContent()).toContain(
      'stored, never shown',
    );

    // The connection test: its result, message and time.
    await page.getByRole('button', { name: 'Test connection' }).click();
    const result = page.getByRole('region', { name: 'Connection test' });
    await expect.poll(() => result.textContent(), { timeout: 20_000 }).toContain('Passed');
    expect(await result.textContent()).toMatch(/Tested.*\d/);
    await shot(page, 'credential-light');
    // The audit log, newest first: the test (the secret read for it, then its result) after the creation.
    const log = page.getByRole('table', { name: 'Audit log of the credential' });
    await expect.poll(() => log.getByRole('row').nth(1).textContent()).toContain('tested');
    const rows = await log.getByRole('row').allTextContents();
    expect(rows.at(-1)).toContain('created');
    expect(rows.join('\n')).toContain('accessed');
    await expectAccessible(page);

    // Edit: the password is not filled in; left empty, it is kept.
    await page.getByRole('link', { name: 'Edit credential' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Edit Warehouse' }).isVisible())
      .toBe(true);
    expect(await page.getByLabel('Password', { exact: true }).inputValue()).toBe('');
    expect(await page.getByLabel('Host', { exact: true }).inputValue()).toBe('127.0.0.1');
    await page.getByLabel('Environment', { exact: true }).fill('production');
    await page.getByRole('button', { name: 'Save credential' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Warehouse' }).isVisible())
      .toBe(true);
    await expect.poll(() => details.textContent()).toContain('production');
    const before = await log.getByRole('row').count();
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect.poll(() => log.getByRole('row').count(), { timeout: 20_000 }).toBeGreaterThan(before);
    expect(await result.textContent()).toContain('Passed');

    // The list shows it, searchable.
    await navigate(page, 'Credentials');
    await page.getByLabel('Search credentials').fill('Ware');
    await expect.poll(() => page.getByRole('link', { name: 'Warehouse' }).isVisible()).toBe(true);
    await expectAccessible(page);
    await shot(page, 'credentials-light');

    await Promise.all(api.pending);
    expect(api.bodies.length).toBeGreaterThan(5);
    expect(api.bodies.filter((body) => body.includes(CREDENTIAL_SECRET))).toEqual([]);
    expect(await page.content()).not.toContain(CREDENTIAL_SECRET);
    const stored = (await t.call(t.owner, 'GET', '/api/credentials?q=Warehouse')).json();
    expect(stored.items[0]).toMatchObject({ environment: 'production', test_status: 'passed' });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('shows the API’s error under the field it names, pages the audit log, and deletes after asking', async () => {
    const credential = await buildCredential(t, t.owner, { name: 'Busy database' });
    // More audit records than one page: each test reads the secret (accessed) and records its result.
    for (let i = 0; i < 12; i += 1) await t.call(t.owner, 'POST', `/api/credentials/${credential.id}/test`);
    const total: number = (
      await t.call(t.owner, 'GET', `/api/credentials/${credential.id}/audit-logs`)
    ).json().total;
    expect(total).toBeGreaterThan(20);
    expect(total).toBeLessThanOrEqual(40);
    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page, `/credentials/${credential.id}`);
    const log = page.getByRole('table', { name: 'Audit log of the credential' });
    await expect.poll(() => log.getByRole('row').count(), { timeout: 20_000 }).toBe(21);
    const pages = page.getByRole('navigation', { name: 'Audit log pages' });
    expect(await pages.textContent()).toContain(`1–20 of ${total}`);
    await pages.getByRole('button', { name: 'Next page' }).click();
    await expect.poll(() => pages.textContent()).toContain(`21–${total} of ${total}`);
    await expect.poll(() => log.getByRole('row').count()).toBe(total - 20 + 1);
    await page.getByLabel('Action', { exact: true }).selectOption('created');
    await expect.poll(() => log.getByRole('row').count()).toBe(2);

    // What only the API checks comes back as a field error, shown under the field it names.
    await page.getByRole('link', { name: 'Edit credential' }).click();
    const hosts = page.getByLabel('Allowed hosts', { exact: true });
    await hosts.fill('db.example.com, not a host/at all');
    await page.getByRole('button', { name: 'Save credential' }).click();
    await expect.poll(() => hosts.getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByRole('alert').textContent()).toContain('The credential was not saved');
    const described = (await hosts.getAttribute('aria-describedby')) ?? '';
    expect(described).toContain('credential-hosts-error');
    expect(await page.getByText('not a host/at all: must be a host name', { exact: false }).isVisible()).toBe(
      true,
    );
    await expectAccessible(page);
    await context.close();
  });

  it('lets a viewer read credentials but offers no control', async () => {
    const viewer = await buildMember(t, t.owner, { role: 'viewer' });
    const credential = await buildCredential(t, t.owner, { name: 'Read only here' });
    const context = await harness.context();
    const page = await context.newPage();
    await signIn(page, `/credentials/${credential.id}`, { token: await t.token(viewer.userId) });
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Read only here' }).isVisible())
      .toBe(true);
    expect(await page.getByRole('button', { name: 'Test connection' }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Edit credential' }).count()).toBe(0);
    await navigate(page, 'Credentials');
    await expect.poll(() => page.getByRole('link', { name: 'Read only here' }).isVisible()).toBe(true);
    expect(await page.getByRole('link', { name: 'New credential' }).count()).toBe(0);
    await context.close();
  });
});
