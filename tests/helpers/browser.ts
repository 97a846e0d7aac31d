import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type AxeBuilder from 'axe-core';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it): Playwright's own
 * browser downloads are not reachable here. CHROMIUM_PATH overrides the binary.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    // Root in a container has no user namespace for the sandbox.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
}

/** A browser context as a person's: a real viewport, the system's colour scheme as asked. */
export function newContext(
  browser: Browser,
  baseURL: string,
  options: { colorScheme?: 'light' | 'dark'; width?: number } = {},
): Promise<BrowserContext> {
  return browser.newContext({
    baseURL,
    viewport: { width: options.width ?? 1280, height: 900 },
    colorScheme: options.colorScheme ?? 'light',
    timezoneId: 'Europe/Berlin',
    locale: 'en-GB',
  });
}

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Runs axe-core in the page: the serious and critical violations, as lines to read. */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the console's CSP rightly refuses inline scripts.
  await page.evaluate(axeSource);
  const results = (await page.evaluate(() =>
    (globalThis as unknown as { axe: typeof AxeBuilder }).axe.run((globalThis as any).document, {
      resultTypes: ['violations'],
    }),
  )) as AxeBuilder.AxeResults;
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} — ${violation.nodes
          .slice(0, 3)
          .map((node) => node.target.join(' '))
          .join('; ')}`,
    );
}

/** Where the e2e journeys write their screenshots (referenced from the README). */
export const SCREENSHOTS = path.resolve(import.meta.dirname, '../../docs/screenshots');
