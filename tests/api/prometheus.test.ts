import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/** GET /metrics: the Prometheus text, for loopback clients or with METRICS_TOKEN only. */

describe('GET /metrics without a token', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('answers loopback clients with the Prometheus text, and refuses others', async () => {
    await t.app.inject({ method: 'GET', url: '/api/health' });
    const local = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
    expect(local.statusCode).toBe(200);
    expect(local.headers['content-type']).toContain('text/plain');
    expect(local.body).toContain('http_server_request_duration_seconds_bucket');
    expect(local.body).toContain('http_route="/api/health"');
    expect(local.body).toMatch(/^search_postings_bytes 0$/m);
    expect(local.body).toMatch(/^search_postings_partitions 0$/m);
    const remote = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9' });
    expect(remote.statusCode).toBe(403);
    expect(remote.json()).toMatchObject({ code: 'metrics_forbidden' });
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { METRICS_TOKEN: 'scrape-secret-42' } });
  });
  afterAll(() => t.close());

  it('asks every client for the token', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
    expect(none.statusCode).toBe(401);
    const wrong = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '203.0.113.9',
      headers: { authorization: 'Bearer scrape-secret-43' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).not.toContain('scrape-secret');
    const right = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: '203.0.113.9',
      headers: { authorization: 'Bearer scrape-secret-42' },
    });
    expect(right.statusCode).toBe(200);
    expect(right.body).toContain('process_cpu_user_seconds_total');
  });
});
