import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cidrRange } from '../../lib/net/address-guard.ts';
import { createGuardedFetch } from '../../lib/net/guarded-fetch.ts';
import { fetchPage, hostAllowed, PageFetchError } from './page-fetcher.ts';

let server: http.Server;
let base: string;
const loopback = createGuardedFetch(() => ({
  refusePrivateNetworks: true,
  allowed: [cidrRange('127.0.0.0/8'), cidrRange('::1/128')],
}));
const strict = createGuardedFetch(() => ({ refusePrivateNetworks: true }));

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    if (url === '/page.html') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return response.end('<h1>Hi</h1>');
    }
    if (url.startsWith('/hop/')) {
      const left = Number(url.slice(5));
      response.writeHead(302, { location: left > 0 ? `/hop/${left - 1}` : '/page.html' });
      return response.end();
    }
    if (url === '/elsewhere') {
      response.writeHead(301, { location: `http://localhost:${port()}/page.html` });
      return response.end();
    }
    if (url === '/lying-length') {
      response.writeHead(200, { 'content-length': '10000000' });
      return response.end();
    }
    if (url === '/stream') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('a'.repeat(600));
      response.write('b'.repeat(600));
      return response.end();
    }
    if (url === '/slow') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('start');
      return; // never ends
    }
    response.writeHead(500);
    response.end('boom');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${port()}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

const port = () => (server.address() as AddressInfo).port;
const options = { allowHosts: ['127.0.0.1'], maxBytes: 1000, timeoutMs: 2000, maxRedirects: 3 };

const failure = async (promise: Promise<unknown>) => {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(PageFetchError);
  return (error as Error).message;
};

describe('fetchPage', () => {
  it('fetches a page with its media type and a file name', async () => {
    const page = await fetchPage(loopback, `${base}/page.html`, options);
    expect(page.bytes.toString()).toBe('<h1>Hi</h1>');
    expect(page).toMatchObject({ mediaType: 'text/html', filename: 'page.html' });
  });

  it('follows redirects on allowed hosts, up to the limit', async () => {
    expect((await fetchPage(loopback, `${base}/hop/2`, options)).filename).toBe('page.html');
    expect(await failure(fetchPage(loopback, `${base}/hop/5`, options))).toContain('more than 3 redirects');
  });

  it('refuses a redirect to a host the allow-list does not name', async () => {
    expect(await failure(fetchPage(loopback, `${base}/elsewhere`, options))).toContain(
      'localhost is not among',
    );
  });

  it('refuses loopback when the policy refuses private networks', async () => {
    expect(await failure(fetchPage(strict, `${base}/page.html`, options))).toContain('refused');
  });

  it('refuses bodies past the limit, declared or streamed', async () => {
    expect(await failure(fetchPage(loopback, `${base}/lying-length`, options))).toContain('larger than');
    expect(await failure(fetchPage(loopback, `${base}/stream`, options))).toContain('larger than');
  });

  it('names HTTP errors, timeouts and URLs it will not fetch', async () => {
    expect(await failure(fetchPage(loopback, `${base}/nothing`, options))).toContain('HTTP 500');
    expect(await failure(fetchPage(loopback, `${base}/slow`, { ...options, timeoutMs: 200 }))).toContain(
      'within 200 ms',
    );
    expect(await failure(fetchPage(loopback, 'file:///etc/passwd', options))).toContain('http');
    expect(await failure(fetchPage(loopback, `http://u:p@127.0.0.1:${port()}/`, options))).toContain(
      'credentials',
    );
  });
});

describe('hostAllowed', () => {
  it('matches names exactly and subdomains with *.', () => {
    expect(hostAllowed('Docs.Example.com', ['docs.example.com'])).toBe(true);
    expect(hostAllowed('a.example.com', ['*.example.com'])).toBe(true);
    expect(hostAllowed('example.com', ['*.example.com'])).toBe(false);
    expect(hostAllowed('evilexample.com', ['*.example.com'])).toBe(false);
    expect(hostAllowed('example.com.', ['example.com'])).toBe(true);
  });
});
