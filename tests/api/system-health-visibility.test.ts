import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/api-client.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * `/api/system/health` and the metrics' component rows: model providers are configured per
 * workspace, so one workspace's broken provider is its own affair. Only platform operators
 * (PLATFORM_ADMIN_USERS; the development owner here) see counts across tenants and which
 * workspaces fail; nobody's status turns Degraded because of another workspace.
 */
let t: TestApp;
let failing: http.Server;
let failingUrl: string;
let unreachableUrl: string;
let answering500: Actor;
let unreachable: Actor;
let bystander: Actor;

const listen = async (server: http.Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
};

const useProvider = async (actor: Actor, baseUrl: string) => {
  const saved = await t.call(actor, 'PUT', '/api/settings/providers', {
    providers: [{ id: 'mine', kind: 'openai_compatible', base_url: baseUrl }],
    default_model: { provider: 'mine', name: 'm' },
  });
  expect(saved.statusCode).toBe(200);
};

beforeAll(async () => {
  t = await createTestApp({ env: { VAULT_ALLOW_LOOPBACK: 'true', SYSTEM_METRICS_SHARE_MS: '0' } });
  // One provider answers every request with 500; another's port is closed (nothing listens).
  failing = http.createServer((_request, response) => response.writeHead(500).end('{"error":"boom"}'));
  failingUrl = await listen(failing);
  const closed = http.createServer();
  unreachableUrl = await listen(closed);
  await new Promise((resolve) => closed.close(resolve));

  answering500 = await t.newWorkspace();
  unreachable = await t.newWorkspace();
  bystander = await t.newWorkspace();
  await useProvider(answering500, failingUrl);
  await useProvider(unreachable, unreachableUrl);
});
afterAll(async () => {
  await new Promise((resolve) => failing.close(resolve));
  await t.close();
});

type Row = { name: string; status: string; detail?: string };
const providersRow = (components: Row[]) => components.find((row) => row.name === 'LLM Providers');
const brokenIds = () => [answering500.workspaceId, unreachable.workspaceId];

describe('GET /api/system/health: provider failures by viewer', () => {
  it('shows a non-operator neither counts across tenants nor another workspace’s failure, and stays Operational', async () => {
    for (const viewer of [bystander, answering500, unreachable]) {
      const response = await t.call(viewer, 'GET', '/api/system/health');
      expect(response.statusCode).toBe(200);
      const report = response.json();
      expect(report.status).toBe('Operational');
      const row = providersRow(report.components);
      expect(row?.status).toBe('up');
      expect(row?.detail ?? '').not.toMatch(/workspace\(s\)|provider\(s\)|probed/);
      for (const id of brokenIds()) expect(response.body).not.toContain(id);
      expect(response.body).not.toContain(failingUrl);
    }
  });

  it('shows a platform operator the counts and the failing workspaces, without degrading the platform', async () => {
    const response = await t.call(t.owner, 'GET', '/api/system/health');
    expect(response.statusCode).toBe(200);
    const report = response.json();
    expect(report.status).toBe('Operational');
    const row = providersRow(report.components);
    expect(row?.status).toBe('down');
    expect(row?.detail).toMatch(
      /^2 provider\(s\) in 2 workspace\(s\); 0 of 2 probed endpoint\(s\) reachable/,
    );
    for (const id of brokenIds()) expect(row?.detail).toContain(id);
  });
});

describe('GET /api/system/metrics: a workspace sees its own providers only', () => {
  it('keeps a bystander Operational with no provider row of anyone else', async () => {
    const response = await t.call(bystander, 'GET', '/api/system/metrics');
    expect(response.statusCode).toBe(200);
    const { system } = response.json();
    expect(system.status).toBe('Operational');
    expect(providersRow(system.components)).toMatchObject({ status: 'not_configured' });
    for (const id of brokenIds()) expect(response.body).not.toContain(id);
  });

  it('degrades only the workspace whose own provider fails (a 500 or an unreachable port)', async () => {
    for (const actor of [answering500, unreachable]) {
      const response = await t.call(actor, 'GET', '/api/system/metrics');
      expect(response.statusCode).toBe(200);
      const { system } = response.json();
      expect(system.status).toBe('Degraded');
      expect(providersRow(system.components)).toEqual({
        name: 'LLM Providers',
        status: 'down',
        detail: '1 provider(s); 0 of 1 probed endpoint(s) reachable',
      });
      for (const id of brokenIds()) expect(response.body).not.toContain(id);
    }
  });
});
