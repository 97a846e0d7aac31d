import path from 'node:path';
import { AddressRefusedError, type FetchFunction } from '../../lib/net/guarded-fetch.ts';

/** Why a page of a URL source could not be fetched; the message is shown on its document. */
export class PageFetchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PageFetchError';
  }
}

/** A page as fetched: its bytes, the media type the server declared, a file name for it. */
export interface FetchedPage {
  bytes: Buffer;
  mediaType?: string;
  filename: string;
}

export interface PageFetchOptions {
  /** Hosts the page and every redirect may be on (`*.example.com` matches subdomains). */
  allowHosts: string[];
  /** The largest body accepted; a larger page fails. */
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  signal?: AbortSignal;
}

/** `example.com` matches itself only; `*.example.com` matches its subdomains. */
export function hostAllowed(host: string, patterns: string[]): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((pattern) => {
    const wanted = pattern.toLowerCase();
    return wanted.startsWith('*.') ? name.endsWith(wanted.slice(1)) : name === wanted;
  });
}

/**
 * Fetches one page of a URL source with `fetch`, the outbound address guard's fetch (the
 * workspace's private-network policy, the socket pinned to the vetted address). Redirects
 * are followed here, up to `maxRedirects`, each hop checked against the allow-list before it
 * is requested, so a page cannot bounce the fetcher to a host the source did not name. The
 * body is read up to `maxBytes` and no further.
 */
export async function fetchPage(
  fetch: FetchFunction,
  url: string,
  options: PageFetchOptions,
): Promise<FetchedPage> {
  const signal = AbortSignal.any([
    AbortSignal.timeout(options.timeoutMs),
    ...(options.signal ? [options.signal] : []),
  ]);
  let current = parseHttpUrl(url);
  for (let hop = 0; ; hop++) {
    if (!hostAllowed(current.hostname, options.allowHosts)) {
      throw new PageFetchError(`host ${current.hostname} is not among the source's allowed hosts`);
    }
    const response = await request(fetch, current, signal, options);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      if (hop >= options.maxRedirects)
        throw new PageFetchError(`more than ${options.maxRedirects} redirects`);
      current = parseHttpUrl(new URL(location, current).href);
      continue;
    }
    if (response.status < 200 || response.status >= 300) {
      await response.body?.cancel();
      throw new PageFetchError(`the server answered HTTP ${response.status}`);
    }
    const bytes = await readCapped(response, signal, options);
    const mediaType = response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase() || undefined;
    return { bytes, ...(mediaType ? { mediaType } : {}), filename: filenameOf(current) };
  }
}

function parseHttpUrl(text: string): URL {
  const url = URL.parse(text);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new PageFetchError('only absolute http and https URLs can be fetched');
  }
  if (url.username || url.password) throw new PageFetchError('URLs with credentials are not fetched');
  return url;
}

async function request(
  fetch: FetchFunction,
  url: URL,
  signal: AbortSignal,
  options: PageFetchOptions,
): Promise<Response> {
  try {
    return await fetch(url, {
      headers: { accept: 'text/html, text/markdown, text/plain, application/pdf, */*;q=0.5' },
      signal,
    });
  } catch (error) {
    options.signal?.throwIfAborted();
    if (error instanceof AddressRefusedError) throw new PageFetchError(error.message);
    if (signal.aborted) throw new PageFetchError(`no answer from ${url.host} within ${options.timeoutMs} ms`);
    const code = (error as NodeJS.ErrnoException).code;
    throw new PageFetchError(`the request to ${url.host} failed${code ? ` (${code})` : ''}`);
  }
}

/** The body, refused as soon as it grows past `maxBytes` (a declared length says so before reading). */
async function readCapped(
  response: Response,
  signal: AbortSignal,
  options: PageFetchOptions,
): Promise<Buffer> {
  const { maxBytes, timeoutMs } = options;
  const tooLarge = () => new PageFetchError(`the page is larger than the limit of ${maxBytes} bytes`);
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw tooLarge();
      }
      parts.push(value);
    }
  } catch (error) {
    if (error instanceof PageFetchError) throw error;
    options.signal?.throwIfAborted();
    throw new PageFetchError(
      signal.aborted
        ? `the page did not arrive within ${timeoutMs} ms`
        : 'the page broke off while it was read',
    );
  }
  return Buffer.concat(parts);
}

/** A file name for the page: its path's last segment, or the host for a site's root. */
function filenameOf(url: URL): string {
  const last = path.posix.basename(decodeURIComponentSafe(url.pathname));
  return last && last !== '/' ? last : url.hostname;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
