import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { createTestApp, onPostgres, type TestApp } from '../helpers/test-app.ts';

/**
 * A full connection pool is backpressure, not an outage: while PostgreSQL answers but every
 * pooled connection is in use, a request waits in a bounded line and is then refused 503
 * `database_busy` with `Retry-After` (never `database_unavailable`), and health says the
 * database is busy (Degraded), not Down. With the default sizing, a burst of concurrent
 * requests queues and succeeds. PostgreSQL only: PGlite's single connection has its own
 * gate (tests/api/database-busy.test.ts).
 */
describe.skipIf(!onPostgres)('a busy PostgreSQL connection pool', () => {
  describe('with a pool of 2 and a short line', () => {
    let t: TestApp;
    let actor: Actor;

    beforeAll(async () => {
      t = await createTestApp({ env: { POSTGRES_POOL_MAX: '2', DB_QUEUE_TIMEOUT_MS: '500' } });
      actor = await t.newWorkspace();
    });
    afterAll(async () => {
      await t?.close();
    });

    /** Checks out every pooled connection, as two long transactions would, until released. */
    async function holdEveryConnection(): Promise<() => void> {
      const pool = (t.database.raw as { pool: pg.Pool }).pool;
      const clients = [await pool.connect(), await pool.connect()];
      return () => {
        for (const client of clients) client.release();
      };
    }

    it('answers 503 database_busy with Retry-After after the bounded wait, not database_unavailable', async () => {
      const release = await holdEveryConnection();
      try {
        const reads = ['/api/agents', '/api/workflows', '/api/runs', '/api/credentials'];
        const started = performance.now();
        const answers = await Promise.all(reads.map((url) => t.call(actor, 'GET', url)));
        // Refused after DB_QUEUE_TIMEOUT_MS, well before the 3 s a connection attempt may take.
        expect(performance.now() - started).toBeLessThan(2_500);
        for (const answer of answers) {
          expect(answer.statusCode, answer.body).toBe(503);
          expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
          expect(answer.headers['retry-after']).toBe('1');
          expect(answer.json()).toMatchObject({ status: 503, code: 'database_busy' });
        }
        const write = await t.call(actor, 'POST', '/api/agents', {
          name: 'refused',
          model: { provider: 'openai', name: 'gpt-4o-mini' },
        });
        expect(write.json()).toMatchObject({ status: 503, code: 'database_busy' });
      } finally {
        release();
      }
      // The pool is whole again: the refused write was not stored, the next one is.
      const created = await t.call(actor, 'POST', '/api/agents', {
        name: 'after',
        model: { provider: 'openai', name: 'gpt-4o-mini' },
      });
      expect(created.statusCode, created.body).toBe(201);
      const names = (await t.call(actor, 'GET', '/api/agents'))
        .json()
        .items.map((a: { name: string }) => a.name);
      expect(names).toEqual(['after']);
    });

    it('health says the database is busy (Degraded), not Down, while the pool is full', async () => {
      const release = await holdEveryConnection();
      try {
        const answer = await t.call(actor, 'GET', '/api/system/health');
        expect(answer.statusCode, answer.body).toBe(200);
        const report = answer.json();
        expect(report.status).toBe('Degraded');
        const database = report.components.find((c: { name: string }) => c.name === 'Database');
        expect(database).toMatchObject({ status: 'up' });
        expect(database.detail).toMatch(/busy/);
      } finally {
        release();
      }
      const after = (await t.call(actor, 'GET', '/api/system/health')).json();
      expect(after.components.find((c: { name: string }) => c.name === 'Database').status).toBe('up');
      expect(after.components.find((c: { name: string }) => c.name === 'Database').detail).not.toMatch(
        /busy/,
      );
    });
  });

  describe('with the default sizing', () => {
    let t: TestApp;
    let actor: Actor;

    beforeAll(async () => {
      t = await createTestApp();
      actor = await t.newWorkspace();
    });
    afterAll(async () => {
      await t?.close();
    });

    it('queues a burst of 300 concurrent reads and writes and answers every one', async () => {
      const answers = await Promise.all(
        Array.from({ length: 300 }, (_, i) =>
          i % 3 === 0
            ? t.call(actor, 'POST', '/api/agents', {
                name: `burst-${i}`,
                model: { provider: 'openai', name: 'gpt-4o-mini' },
              })
            : t.call(actor, 'GET', i % 3 === 1 ? '/api/agents?limit=50' : '/api/runs?limit=20'),
        ),
      );
      const refused = answers.filter((a) => a.statusCode >= 300).map((a) => `${a.statusCode} ${a.body}`);
      expect(refused).toEqual([]);
      expect((await t.call(actor, 'GET', '/api/agents?limit=1')).json().total).toBe(100);
    });
  });
});
