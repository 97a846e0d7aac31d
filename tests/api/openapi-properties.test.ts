import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderOpenApi } from '../../src/http/openapi.ts';
import type { Actor, Method } from '../helpers/api-client.ts';
import { hostileValue, type JsonSchema, schemaArbitrary } from '../helpers/schema-arbitrary.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * Walks the committed OpenAPI document and sends generated requests to every operation it
 * lists, as a workspace owner: valid values, hostile ones and mixtures, in path, query and
 * body, plus bodies of the wrong content type. A route added later is covered without a line
 * of test code. Run a failing seed again with FC_SEED=<seed>.
 */

const DOCUMENT_PATH = path.resolve(import.meta.dirname, '../../openapi.json');
const committed = JSON.parse(fs.readFileSync(DOCUMENT_PATH, 'utf8'));
const SEED = Number(process.env.FC_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS_PER_OPERATION = Number(process.env.FC_RUNS ?? 200);
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: JsonSchema;
}
interface Operation {
  method: (typeof METHODS)[number];
  path: string;
  parameters: Parameter[];
  body?: { schema: JsonSchema; required: boolean };
  /** The fields of its `multipart/form-data` body (an upload), when it takes one. */
  form?: JsonSchema;
  /** Its success is a `text/event-stream` that stays open: probed, then disconnected. */
  streams: boolean;
}

/** A copy of `schema` with every reference to a component replaced by the component, so values can be built. */
function inlineRefs(schema: unknown): any {
  if (Array.isArray(schema)) return schema.map(inlineRefs);
  if (typeof schema !== 'object' || schema === null) return schema;
  const ref = (schema as { $ref?: unknown }).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
    return inlineRefs(committed.components.schemas[ref.slice('#/components/schemas/'.length)]);
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inlineRefs(value)]));
}

const operations: Operation[] = Object.entries(
  committed.paths as Record<string, Record<string, any>>,
).flatMap(([route, item]) =>
  METHODS.filter((method) => item[method]).map((method) => {
    const op = item[method];
    const json = inlineRefs(op.requestBody?.content?.['application/json']?.schema);
    const form = inlineRefs(op.requestBody?.content?.['multipart/form-data']?.schema);
    return {
      method,
      path: route,
      parameters: (op.parameters ?? []) as Parameter[],
      ...(json ? { body: { schema: json, required: op.requestBody.required === true } } : {}),
      ...(form ? { form } : {}),
      streams: Object.values(op.responses ?? {}).some(
        (response: any) => response?.content?.['text/event-stream'] !== undefined,
      ),
    };
  }),
);

interface GeneratedRequest {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body:
    | { kind: 'none' }
    | { kind: 'json'; value: unknown }
    | { kind: 'raw'; contentType: string; payload: string }
    | {
        kind: 'form';
        fields: Record<string, unknown>;
        /** One file per `format: binary` field of the form, under that field's name. */
        files: Partial<Record<string, { name: string; bytes: Uint8Array }>>;
      };
}

/** Files an upload form may carry: real formats, liars, archives, fragments and noise. */
const FORM_FILES = fc.record({
  name: fc.oneof(
    fc.constantFrom(
      'notes.md',
      'page.html',
      'report.pdf',
      'data.json',
      'table.csv',
      'main.ts',
      'archive.zip',
      'noext',
      '../../etc/passwd',
      'a\u0000b.txt',
      '',
    ),
    fc.string({ maxLength: 30 }),
  ),
  bytes: fc.oneof(
    fc
      .constantFrom(
        '# Title\n\nSome text.',
        '<html><script>x</script><h1>T</h1><p>p</p></html>',
        '%PDF-1.7\n1 0 obj <<',
        'PK\u0003\u0004',
        '{"a": [1, 2',
        'a,b\n1,2\n"unterminated',
        '',
        '   ',
      )
      .map((text) => new TextEncoder().encode(text)),
    fc.string({ unit: 'binary', maxLength: 200 }).map((text) => new TextEncoder().encode(text)),
    fc.uint8Array({ maxLength: 200 }),
  ),
});

const RAW_BODIES = fc.record({
  contentType: fc.constantFrom(
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'application/json',
    'application/json; charset=latin1',
  ),
  payload: fc.oneof(
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.constantFrom(
      '{',
      '{"a":',
      '[]',
      'null',
      '"\\u0000"',
      '{"__proto__":{"x":1}}',
      '{"constructor":{"prototype":{}}}',
    ),
    fc.constant(`${'['.repeat(10_000)}${']'.repeat(10_000)}`),
  ),
});

/** Everything one request to `op` may carry; values of listed records are favoured for path parameters. */
function requestArbitrary(
  op: Operation,
  knownItems: Map<string, Record<string, unknown>[]>,
): fc.Arbitrary<GeneratedRequest> {
  const valued = (parameter: Parameter) => {
    // The listing above the first path parameter holds items whose field of that name fits it.
    const listed = knownItems.get(op.path.split('/{')[0] ?? '') ?? [];
    // The acting owner is left out: demoting or removing them would turn the rest of the run into 403s.
    const known = [
      ...new Set(
        listed.map((item) => item[parameter.name]).filter((v) => v !== undefined && v !== owner.userId),
      ),
    ];
    const options: fc.Arbitrary<unknown>[] = [
      schemaArbitrary(parameter.schema),
      schemaArbitrary(parameter.schema, 2),
      hostileValue,
    ];
    if (parameter.in === 'path' && known.length > 0)
      options.push(fc.constantFrom(...known), fc.constantFrom(...known));
    return fc.oneof(...options);
  };
  const group = (where: 'path' | 'query') => {
    const parameters = op.parameters.filter((p) => p.in === where);
    return fc.record(Object.fromEntries(parameters.map((p) => [p.name, valued(p)])), {
      requiredKeys: parameters.filter((p) => where === 'path' || p.required).map((p) => p.name),
    });
  };
  const extraQuery = fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 2 });
  const bodies: fc.Arbitrary<GeneratedRequest['body']>[] = [
    fc.constant({ kind: 'none' } as const),
    RAW_BODIES.map((raw) => ({ kind: 'raw', ...raw }) as const),
    hostileValue.map((value) => ({ kind: 'json', value }) as const),
  ];
  if (op.form) {
    // Files (`format: binary` fields) are drawn from FORM_FILES; the other fields from their
    // schemas, hostile at times.
    const properties: Record<string, JsonSchema> = op.form.properties ?? {};
    const binary = Object.keys(properties).filter((name) => properties[name]?.format === 'binary');
    const others = Object.fromEntries(Object.entries(properties).filter(([name]) => !binary.includes(name)));
    const fields = { ...op.form, properties: others, required: [] };
    const files = fc.record(Object.fromEntries(binary.map((name) => [name, FORM_FILES])), {
      requiredKeys: [],
    });
    bodies.push(
      ...[0, 1, 3].map((weight) =>
        fc
          .record({ fields: schemaArbitrary(fields, weight), files })
          .map(
            ({ fields, files }) =>
              ({ kind: 'form', fields: fields as Record<string, unknown>, files }) as const,
          ),
      ),
    );
  }
  if (op.body) {
    const schema = op.body.schema;
    bodies.push(
      ...[0, 0, 1, 3].map((weight) =>
        schemaArbitrary(schema, weight).map((value) => ({ kind: 'json', value }) as const),
      ),
    );
  }
  return fc.record({
    params: group('path'),
    query: fc.oneof(
      group('query'),
      fc.tuple(group('query'), extraQuery).map(([a, b]) => ({ ...b, ...a })),
    ),
    body: fc.oneof(...bodies),
  });
}

const text = (value: unknown) => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));

function toInjection(op: Operation, request: GeneratedRequest, actor: Actor) {
  const url = op.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    // A URL carries UTF-8 bytes, in which a lone surrogate cannot be written.
    encodeURIComponent(text(request.params[name]).toWellFormed()),
  );
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query)) {
    for (const item of Array.isArray(value) ? value : [value]) query.append(name, text(item));
  }
  const search = query.toString();
  const headers: Record<string, string> = { ...actor.headers };
  let payload: string | FormData | undefined;
  if (request.body.kind === 'form') {
    const form = new FormData();
    const { files, fields } = request.body;
    for (const [name, file] of Object.entries(files)) {
      if (file) form.append(name, new Blob([file.bytes]), file.name);
    }
    // A hostile value may stand for the whole set of fields: anything but an object adds none.
    const entries = typeof fields === 'object' && fields !== null ? Object.entries(fields) : [];
    for (const [name, value] of entries) form.append(name, text(value).toWellFormed());
    payload = form;
  } else if (request.body.kind === 'json') {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(request.body.value) ?? 'null';
  } else if (request.body.kind === 'raw') {
    headers['content-type'] = request.body.contentType;
    payload = request.body.payload;
  }
  return {
    method: op.method.toUpperCase() as Method,
    url: search ? `${url}?${search}` : url,
    headers,
    ...(payload === undefined ? {} : { payload }),
  };
}

/** What the checks read of an answer, whether it was read whole or probed as a stream. */
interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

/** Collects a readable to the end, failing after `ms` (an answer that never ends is a finding). */
function readAll(stream: Readable, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`the answer did not end within ${ms} ms`)), ms);
    stream.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    stream.on('end', () => {
      clearTimeout(timer);
      resolve(text);
    });
    stream.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** The first bytes of a readable, failing after `ms`. */
function firstBytes(stream: Readable, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no bytes within ${ms} ms`)), ms);
    stream.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      resolve(chunk.toString());
    });
    stream.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/**
 * Sends one generated request. An operation that streams is read as a stream: an error
 * answer to its end, a stream (which would never end) only to its first bytes, and then the
 * client disconnects, as a browser closing the tab does.
 */
async function send(op: Operation, injection: ReturnType<typeof toInjection>): Promise<Answer> {
  if (!op.streams) {
    const response = await t.call(undefined, injection.method, injection.url, injection.payload, {
      headers: injection.headers,
    });
    return { statusCode: response.statusCode, headers: response.headers, body: response.body };
  }
  const controller = new AbortController();
  const response = await t.call(undefined, injection.method, injection.url, injection.payload, {
    headers: injection.headers,
    payloadAsStream: true,
    signal: controller.signal,
  });
  const stream = response.stream();
  stream.on('error', () => undefined);
  try {
    const body = response.statusCode === 200 ? await firstBytes(stream, 5000) : await readAll(stream, 5000);
    return { statusCode: response.statusCode, headers: response.headers, body };
  } finally {
    controller.abort();
  }
}

let t: TestApp;
let owner: Actor;

beforeAll(async () => {
  t = await createTestApp();
  owner = await t.newWorkspace('property-owner');
  console.log(
    `openapi-properties: seed ${SEED} (rerun with FC_SEED=${SEED}), ${RUNS_PER_OPERATION} runs per operation`,
  );
});
afterAll(() => t.close());

describe('openapi.json', () => {
  it('matches the routes', () => {
    const generated = JSON.parse(renderOpenApi(t.app));
    expect(
      generated,
      'openapi.json is out of date with the routes: run `npm run openapi` and commit it',
    ).toEqual(committed);
  });
});

describe('every documented operation, generated input', () => {
  /** Records listed by collection GETs (`/api/agents` -> its items), for the `{id}` routes beneath. */
  async function knownItems(): Promise<Map<string, Record<string, unknown>[]>> {
    const items = new Map<string, Record<string, unknown>[]>();
    for (const op of operations.filter((o) => o.method === 'get' && !o.path.includes('{') && !o.streams)) {
      const response = await t.call(owner, 'GET', op.path);
      const listed = response.statusCode === 200 ? response.json().items : undefined;
      if (Array.isArray(listed)) items.set(op.path, listed.slice(0, 10));
    }
    return items;
  }

  it('never answers 5xx, and every 4xx is problem details with a code and request_id', async () => {
    // Operations without path parameters first: their successes create the records that
    // the `{id}` operations then read, change and delete.
    const ordered = [...operations].sort(
      (a, b) => Number(a.path.includes('{')) - Number(b.path.includes('{')),
    );
    const statuses = new Map<number, number>();
    let known = await knownItems();
    let refreshed = false;
    for (const [index, op] of ordered.entries()) {
      if (!refreshed && op.path.includes('{')) {
        known = await knownItems();
        refreshed = true;
      }
      await fc.assert(
        fc.asyncProperty(requestArbitrary(op, known), async (request) => {
          const injection = toInjection(op, request, owner);
          // Raw bytes and headers as generated: the actor's headers are already in them.
          const response = await send(op, injection);
          const where = `${injection.method} ${injection.url.slice(0, 200)} -> ${response.statusCode} ${response.body.slice(0, 300)}`;
          statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
          expect(response.statusCode, where).toBeLessThan(500);
          if (op.streams && response.statusCode === 200) {
            expect(response.headers['content-type'], where).toContain('text/event-stream');
            // SSE framing: an event's id or name, or a comment.
            expect(response.body, where).toMatch(/^(id|event|data|):/);
          }
          if (response.statusCode >= 400) {
            expect(response.headers['content-type'], where).toContain('application/problem+json');
            const problem = JSON.parse(response.body);
            expect(typeof problem.code, where).toBe('string');
            expect(typeof problem.request_id, where).toBe('string');
            expect(problem.status, where).toBe(response.statusCode);
            if (response.statusCode === 400 && problem.code === 'validation_failed') {
              expect(problem.errors?.length, where).toBeGreaterThan(0);
              for (const error of problem.errors) expect(typeof error.field, where).toBe('string');
            }
          }
        }),
        { seed: SEED + index, numRuns: RUNS_PER_OPERATION, endOnFailure: true },
      );
    }
    const summary = [...statuses.entries()].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`);
    console.log(`openapi-properties: ${operations.length} operations, statuses ${summary.join(', ')}`);
    // The generator must reach the handlers, not only the validators.
    expect([...statuses.keys()].some((status) => status >= 200 && status < 300)).toBe(true);
  }, 180_000);
});
