import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Where `npm run web:build` (run by `npm ci`) writes the web console. */
export const CONSOLE_DIR = path.resolve(import.meta.dirname, '../../web/dist');

/** Paths that are never the console's pages: a miss there stays a problem+json 404. */
const NOT_PAGES = /^\/(api|docs|assets|metrics|\.well-known)(\/|$)/;

/** The built web console, served at `/` beside the API. */
export interface ConsolePages {
  /** Answers a browser's navigation to one of the console's routes with its page; false when it is not one. */
  sendPage(request: FastifyRequest, reply: FastifyReply): boolean;
  /** Registers the page at `/` and the hashed assets under `/assets/`. */
  register(app: FastifyInstance): Promise<void>;
}

/**
 * The console's Content-Security-Policy: scripts, styles and connections from this origin only
 * (no inline script, no eval), plus the identity provider's origin when the console signs in
 * with OIDC (its token endpoint is called from the page).
 */
export function consolePolicy(connectOrigins: readonly string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src ${["'self'", ...connectOrigins].join(' ')}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The console when it has been built (`web/dist/index.html` exists), else undefined (the API
 * alone is served, and the start-up log says how to build it). The page is read once: it is
 * small, and the assets it names are immutable.
 */
export function loadConsole(
  options: { dir?: string; connectOrigins?: readonly string[] } = {},
): ConsolePages | undefined {
  const dir = options.dir ?? CONSOLE_DIR;
  let page: Buffer;
  try {
    page = fs.readFileSync(path.join(dir, 'index.html'));
  } catch {
    return undefined;
  }
  const policy = consolePolicy(options.connectOrigins);
  const send = (reply: FastifyReply) =>
    reply
      .header('content-type', 'text/html; charset=utf-8')
      // Always revalidated: a new build's page names new assets.
      .header('cache-control', 'no-cache')
      .header('content-security-policy', policy)
      .send(page);

  return {
    sendPage(request, reply) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return false;
      const pathname = request.url.split('?')[0] ?? '/';
      if (NOT_PAGES.test(pathname)) return false;
      // Browsers ask for a page with text/html; an API client's miss stays a problem+json 404.
      if (!request.headers.accept?.includes('text/html')) return false;
      send(reply);
      return true;
    },
    async register(app) {
      app.get('/', { schema: { hide: true } }, (_request, reply) => send(reply));
      await app.register(fastifyStatic, {
        root: path.join(dir, 'assets'),
        prefix: '/assets/',
        // Vite names every asset by its content's hash: a name never changes meaning.
        immutable: true,
        maxAge: '365d',
        index: false,
        // The build writes .br and .gz beside each asset.
        preCompressed: true,
        decorateReply: false,
      });
    },
  };
}
