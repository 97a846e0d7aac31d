import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { accessibilityViolations, launchChromium, newContext, SCREENSHOTS } from './browser.ts';
import { createTestApp, type TestApp } from './test-app.ts';

/** The real service on a loopback port with the built console, and Chromium to drive it. */
export interface ConsoleHarness {
  t: TestApp;
  browser: Browser;
  baseURL: string;
  /** A new browser context (a person's browser: light theme unless asked). */
  context(options?: { colorScheme?: 'light' | 'dark'; width?: number }): Promise<BrowserContext>;
  close(): Promise<void>;
}

export async function startConsole(
  options: Parameters<typeof createTestApp>[0] = {},
): Promise<ConsoleHarness> {
  const t = await createTestApp(options);
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const address = t.app.server.address();
  if (!address || typeof address === 'string') throw new Error('the service has no port');
  const baseURL = `http://127.0.0.1:${address.port}`;
  const browser = await launchChromium();
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    t,
    browser,
    baseURL,
    context: (contextOptions) => newContext(browser, baseURL, contextOptions),
    async close() {
      await browser.close();
      await t.close();
    },
  };
}

/**
 * Opens `at` and signs in as the developer (the default workspace's owner), or as `userId`
 * by pasting a development token, then waits for the console's navigation.
 */
export async function signIn(page: Page, at = '/', as?: { token: string }): Promise<void> {
  await page.goto(at);
  if (as) {
    await page.getByLabel('Access token', { exact: true }).fill(as.token);
    await page.getByRole('button', { name: 'Sign in with token' }).click();
  } else {
    await page.getByRole('button', { name: 'Sign in as developer' }).click();
  }
  await expect.poll(() => page.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(true);
}

/** Goes to one of the console's pages through the main navigation, as a person would. */
export async function navigate(page: Page, label: string): Promise<void> {
  await page
    .getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name: label, exact: true })
    .click();
}

/** No serious or critical axe-core violation on the page as it is now. */
export async function expectAccessible(page: Page): Promise<void> {
  expect(await accessibilityViolations(page)).toEqual([]);
}

/** Writes docs/screenshots/<name>.png (the README shows some of them). */
export const screenshot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

/**
 * The elements sticking out of the page's width (a wide table scrolling inside its own frame,
 * `.table-wrap`, does not count): none on a phone-sized screen.
 */
export function overflowingElements(page: Page): Promise<string[]> {
  // Runs in the page (the DOM's types are not this project's).
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
