import { defineConfig } from 'vitest/config';

/**
 * The three rings of CONVENTIONS.md as vitest projects, run together by `npm test` or alone with
 * `npx vitest run --project unit|service|api`: unit tests beside pure code, service tests beside
 * a service on a real database (no Fastify), API tests through the HTTP contract.
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
      { extends: true, test: { name: 'api', include: ['tests/**/*.test.ts'] } },
    ],
  },
});
