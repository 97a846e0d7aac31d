import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorCodes } from 'fastify';
import { parse as secureJsonParse } from 'secure-json-parse';
import { AppError, type FieldError } from '../errors.ts';
import { emptyJsonBodyAllowed } from './optional-body.ts';

/**
 * Deepest JSON nesting a request body may have. No schema of the API nests half as deep;
 * without a cap a body of 5,000 nested arrays overflows the stack of the code that walks it.
 */
export const MAX_JSON_DEPTH = 64;

/** Longest text a path parameter may carry (the widest is a member's 255-character `user_id`). */
export const MAX_PARAM_CHARACTERS = 255;

/**
 * The router's limit on a raw, still percent-encoded path parameter: a character takes at
 * most 12 encoded bytes (a supplementary-plane character is 4 UTF-8 bytes, `%XX` each), so
 * every parameter the schemas accept fits and the schema, not the router, names the field.
 */
export const MAX_RAW_PARAM_LENGTH = MAX_PARAM_CHARACTERS * 12;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why PostgreSQL would refuse this text (in `text` and in `jsonb`), or undefined when it is fine. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (!text.isWellFormed()) return 'must not contain unpaired UTF-16 surrogates (U+D800 to U+DFFF)';
  return undefined;
}

/** A key as it can be shown in a field name: NUL and lone surrogates written as escapes. */
function printable(key: string): string {
  return key
    .replaceAll('\u0000', '\\u0000')
    .replace(new RegExp(LONE_SURROGATE.source, 'g'), (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/**
 * Every string in a parsed input, object keys included, that PostgreSQL cannot store as
 * text, named as the client sent it (`body.config.<key>`, `query.q`, `params.user_id`).
 * The path is kept as a stack and a name is built only for a problem: a clean 1 MB body
 * costs one pass over its strings.
 */
export function findUnstorableText(value: unknown, root: string): FieldError[] {
  const found: FieldError[] = [];
  const path: string[] = [root];
  const report = (message: string) => found.push({ field: path.join('.'), message });
  const walk = (node: unknown): void => {
    if (found.length >= 20) return;
    if (typeof node === 'string') {
      const problem = textProblem(node);
      if (problem) report(problem);
    } else if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index++) {
        path.push(String(index));
        walk(node[index]);
        path.pop();
      }
    } else if (node !== null && typeof node === 'object') {
      for (const key of Object.keys(node)) {
        const problem = textProblem(key);
        path.push(problem ? printable(key) : key);
        if (problem) report(`(a key) ${problem}`);
        walk((node as Record<string, unknown>)[key]);
        path.pop();
      }
    }
  };
  walk(value);
  return found;
}

/** How deep `text`, a JSON document, nests; stops counting past `limit`. Strings are skipped. */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

const tooDeep = () =>
  new AppError(400, 'validation_failed', `body nests deeper than ${MAX_JSON_DEPTH} levels`, [
    { field: 'body', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` },
  ]);

/**
 * Guards every request before its schema is checked: JSON bodies are parsed as Fastify
 * does (secure-json-parse, refusing `__proto__` and `constructor.prototype`) with a depth
 * cap, and text PostgreSQL cannot store (NUL, lone surrogates) anywhere in the path,
 * query, headers or body is a 400 naming the field, instead of a 500 from the database.
 */
export function registerInputGuard(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.length === 0) {
      // A client that sends `Content-Type: application/json` on every request, body or not.
      if (emptyJsonBodyAllowed(request)) return done(null, undefined);
      return done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(), undefined);
    }
    if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) return done(tooDeep(), undefined);
    try {
      done(null, secureJsonParse(text, { protoAction: 'error', constructorAction: 'error' }));
    } catch {
      done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
    }
  });

  const refuse = (found: FieldError[]) => {
    if (found.length === 0) return;
    throw new AppError(
      400,
      'validation_failed',
      found.map((e) => `${e.field} ${e.message}`).join('; '),
      found,
    );
  };
  // Before authentication: the auth hook itself looks up header values in the database.
  app.addHook('onRequest', async (request: FastifyRequest) => {
    refuse([
      ...findUnstorableText(request.params, 'params'),
      ...findUnstorableText(request.query, 'query'),
      ...findUnstorableText(request.headers, 'headers'),
    ]);
  });
  app.addHook('preValidation', async (request: FastifyRequest) => {
    refuse(findUnstorableText(request.body, 'body'));
  });
}
