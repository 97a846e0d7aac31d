import { defineConfig } from 'vitest/config';

/**
 * The three rings of CONVENTIONS.md as vitest projects, run together by `npm test` or alone with
 * `npx vitest run --project unit|service|api`: unit tests beside pure code, service tests beside
 * a service on a real database (no Fastify), API tests through the HTTP contract.
 *
 * A fourth project, `exclusive`, holds tests that disturb the whole machine (the Redis restart
 * stops the machine's Redis). `sequence.groupOrder: 1` makes Vitest run it only after every
 * other project (group 0) has finished, so no other test file runs while Redis is down.
 *
 * A fifth, `timing`, holds the tests that measure the service's own stalls (the event loop's
 * delay while the largest upload of each format is indexed, or every heavy flag evaluated):
 * group 2, one file at a time, so the CPU of other test files does not pass for the service's.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts'], exclude: ['src/**/*.service.test.ts'] },
      },
      { extends: true, test: { name: 'service', include: ['src/**/*.service.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'api',
          include: ['tests/**/*.test.ts'],
          exclude: ['tests/exclusive/**', 'tests/timing/**', 'tests/e2e/**'],
        },
      },
      {
        // The web console in Debian's Chromium (tests/helpers/browser.ts), one file at a time.
        extends: true,
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          expect: { poll: { timeout: 15_000, interval: 100 } },
        },
      },
      {
        extends: true,
        test: { name: 'exclusive', include: ['tests/exclusive/**/*.test.ts'], sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: {
          name: 'timing',
          include: ['tests/timing/**/*.test.ts'],
          sequence: { groupOrder: 2 },
          fileParallelism: false,
        },
      },
    ],
  },
});
