import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cidrRange } from './address-guard.ts';
import { AddressRefusedError, createGuardedFetch } from './guarded-fetch.ts';

let server: http.Server;
let base: string;
const seen: { method: string; url: string; host?: string; body: string }[] = [];

beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    seen.push({ method: req.method ?? '', url: req.url ?? '', host: req.headers.host, body });
    if (req.url === '/redirect') {
      res.writeHead(302, { location: 'http://169.254.169.254/' });
      res.end();
    } else if (req.url === '/slow') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first ');
    } else {
      res.writeHead(201, { 'content-type': 'application/json', 'x-multi': ['a', 'b'] });
      res.end(JSON.stringify({ echoed: body }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
});

const open = createGuardedFetch(() => ({ refusePrivateNetworks: false }));
const loopbackOnly = createGuardedFetch(() => ({
  refusePrivateNetworks: true,
  allowed: [cidrRange('127.0.0.0/8'), cidrRange('::1/128')],
}));
const strict = createGuardedFetch(async () => ({ refusePrivateNetworks: true }));

describe('createGuardedFetch', () => {
  it('sends the method, headers and body, and answers a streaming Response', async () => {
    const response = await open(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test': '1' },
      body: '{"a":1}',
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-multi')).toBe('a, b');
    expect(await response.json()).toEqual({ echoed: '{"a":1}' });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/echo', host: base.slice('http://'.length) });
  });

  it('keeps the host name in the Host header while connecting to the vetted address', async () => {
    const port = new URL(base).port;
    const response = await loopbackOnly(`http://localhost:${port}/named`);
    expect(response.status).toBe(201);
    expect(seen.at(-1)?.host).toBe(`localhost:${port}`);
  });

  it('refuses what the policy forbids before opening a socket', async () => {
    const count = seen.length;
    await expect(strict(`${base}/nope`)).rejects.toThrow(AddressRefusedError);
    await expect(strict(`${base}/nope`)).rejects.toThrow(
      'refused: 127.0.0.1 is in the private range 127.0.0.0/8 and this workspace refuses private networks',
    );
    await expect(open('http://169.254.169.254/latest/meta-data')).rejects.toThrow(/metadata address/);
    await expect(open('file:///etc/passwd')).rejects.toThrow(
      'only http and https URLs may be fetched, not file',
    );
    expect(seen).toHaveLength(count);
  });

  it('refuses every spelling of the loopback server, and names resolving to it, at connect time', async () => {
    const count = seen.length;
    const port = new URL(base).port;
    for (const host of [
      'localhost',
      '127.1',
      '2130706433',
      '0x7f.0.0.1',
      '0177.0.0.1',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[64:ff9b::7f00:1]',
      '[2002:7f00:1::]',
      '[::127.0.0.1]',
    ]) {
      await expect(strict(`http://${host}:${port}/metrics`), host).rejects.toThrow(/^refused: /);
    }
    // "This network" reaches the local host whatever the policy: refused even where private is open.
    for (const host of ['0.0.0.0', '0', '[::]']) {
      await expect(open(`http://${host}:${port}/metrics`), host).rejects.toThrow(/reserved range/);
    }
    expect(seen).toHaveLength(count);
  });

  it('reuses a kept-alive socket for the next request to the same vetted address', async () => {
    const sockets = new Set<unknown>();
    const onConnection = (socket: unknown) => sockets.add(socket);
    server.on('connection', onConnection);
    try {
      for (let i = 0; i < 3; i += 1) {
        const response = await open(`${base}/again`, { method: 'POST', body: String(i) });
        expect(await response.json()).toEqual({ echoed: String(i) });
      }
      expect(sockets.size).toBeLessThanOrEqual(1);
    } finally {
      server.off('connection', onConnection);
    }
  });

  it('does not follow redirects', async () => {
    const response = await open(`${base}/redirect`);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('http://169.254.169.254/');
  });

  it('aborts the request and its body with the signal', async () => {
    const controller = new AbortController();
    const response = await open(`${base}/slow`, { signal: controller.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first ');
    controller.abort(new Error('enough'));
    await expect(reader.read()).rejects.toThrow();
    await expect(open(`${base}/echo`, { signal: AbortSignal.abort(new Error('already')) })).rejects.toThrow(
      'already',
    );
  });
});
