import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRAIN_MAX_BYTES } from '../../src/http/body-drain.ts';
import { createTestApp, type TestApp } from '../helpers/test-app.ts';

/**
 * A body over the limit is answered 413 while the client is still sending it. Closing the
 * connection with the rest of the body unread makes the kernel reset it, and a client still
 * writing then sees ECONNRESET or EPIPE instead of the answer. Over a real port, 20 clients at
 * once, each sending 3 MB (three times BODY_LIMIT and UPLOAD_MAX_BYTES), at full speed and in
 * slow chunks, with and without a Content-Length: every one must read the problem.
 */
const LIMIT = 1024 * 1024;
const BODY = 3 * LIMIT;
const CLIENTS = 20;

let t: TestApp;
let port: number;

beforeAll(async () => {
  t = await createTestApp({ env: { BODY_LIMIT: String(LIMIT), UPLOAD_MAX_BYTES: String(LIMIT) } });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(() => t.close());

interface Sent {
  path: string;
  headers: Record<string, string>;
  /** The body's parts, each written after the previous one was accepted. */
  parts: Buffer[];
  /** Omit Content-Length: the body goes chunked. */
  chunked?: boolean;
  /** A pause before each part (a slow client). */
  pauseMs?: number;
}

interface Outcome {
  status?: number;
  contentType?: string;
  body?: string;
  error?: string;
}

/** Sends a request as a client that writes its whole body before it looks at the answer. */
function send(request: Sent): Promise<Outcome> {
  return new Promise((resolve) => {
    const length = request.parts.reduce((sum, part) => sum + part.length, 0);
    const outcome: Outcome = {};
    let answered = false;
    let written = false;
    const finish = () => {
      if (answered && written) resolve(outcome);
    };
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: request.path,
      agent: false,
      headers: { ...request.headers, ...(request.chunked ? {} : { 'content-length': String(length) }) },
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      outcome.error = error.code ?? error.message;
      resolve(outcome);
    });
    req.on('close', () => {
      if (!written) outcome.error ??= 'the connection closed before the body was sent';
      resolve(outcome);
    });
    req.on('response', (response) => {
      outcome.status = response.statusCode;
      outcome.contentType = response.headers['content-type'];
      const chunks: Buffer[] = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => {
        outcome.body = Buffer.concat(chunks).toString('utf8');
        answered = true;
        finish();
      });
    });
    (async () => {
      for (const part of request.parts) {
        if (request.pauseMs) await new Promise((resolve) => setTimeout(resolve, request.pauseMs));
        if (req.destroyed) return;
        if (!req.write(part)) {
          await new Promise((resolve) => {
            req.once('drain', resolve);
            req.once('close', resolve);
          });
        }
      }
      req.end(() => {
        written = true;
        finish();
      });
    })().catch(() => {});
  });
}

const split = (body: Buffer, parts: number) =>
  Array.from({ length: parts }, (_, index) =>
    body.subarray(Math.floor((index * body.length) / parts), Math.floor(((index + 1) * body.length) / parts)),
  );

function jsonBody(): Buffer {
  return Buffer.from(JSON.stringify({ name: 'big', system_prompt: 'x'.repeat(BODY) }));
}

function multipartBody(boundary: string): Buffer {
  return Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`,
    ),
    Buffer.alloc(BODY, 'a'),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
}

const expectProblems = (outcomes: Outcome[], status: number, code: string) => {
  for (const outcome of outcomes) {
    expect(outcome.error, 'the connection was reset before the answer was read').toBeUndefined();
    expect(outcome.status).toBe(status);
    expect(outcome.contentType).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(outcome.body ?? '{}')).toMatchObject({ status, code });
  }
};

describe('an oversized body is answered, never reset', () => {
  const variants = [
    { name: 'at full speed with a Content-Length', parts: 1, pauseMs: 0, chunked: false },
    { name: 'at full speed, chunked', parts: 1, pauseMs: 0, chunked: true },
    { name: 'in slow chunks with a Content-Length', parts: 12, pauseMs: 20, chunked: false },
    { name: 'in slow chunks, chunked', parts: 12, pauseMs: 20, chunked: true },
  ];

  for (const variant of variants) {
    it(`answers 413 to ${CLIENTS} JSON bodies of 3 MB sent ${variant.name}`, async () => {
      const body = jsonBody();
      const outcomes = await Promise.all(
        Array.from({ length: CLIENTS }, () =>
          send({
            path: '/api/agents',
            headers: { ...t.owner.headers, 'content-type': 'application/json' },
            parts: split(body, variant.parts),
            chunked: variant.chunked,
            pauseMs: variant.pauseMs,
          }),
        ),
      );
      expectProblems(outcomes, 413, 'payload_too_large');
    });

    it(`answers 413 to ${CLIENTS} uploads of 3 MB sent ${variant.name}`, async () => {
      const boundary = 'x-boundary-oversized';
      const body = multipartBody(boundary);
      const outcomes = await Promise.all(
        Array.from({ length: CLIENTS }, () =>
          send({
            path: '/api/documents/upload',
            headers: { ...t.owner.headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
            parts: split(body, variant.parts),
            chunked: variant.chunked,
            pauseMs: variant.pauseMs,
          }),
        ),
      );
      expectProblems(outcomes, 413, 'payload_too_large');
    });
  }

  it('answers a refusal sent before the body is read (no token: 401) without a reset either', async () => {
    const body = jsonBody();
    const outcomes = await Promise.all(
      Array.from({ length: CLIENTS }, () =>
        send({ path: '/api/agents', headers: { 'content-type': 'application/json' }, parts: split(body, 4) }),
      ),
    );
    expectProblems(outcomes, 401, 'unauthorized');
  });

  it('still serves the next request on a connection whose oversized body was read to its end', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const request = (body: Buffer) =>
        new Promise<{ status?: number; socket: unknown }>((resolve, reject) => {
          const req = http.request(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/api/agents',
              agent,
              headers: {
                ...t.owner.headers,
                'content-type': 'application/json',
                'content-length': body.length,
              },
            },
            (response) => {
              response.resume();
              response.on('end', () => resolve({ status: response.statusCode, socket: req.socket }));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      const first = await request(jsonBody());
      expect(first.status).toBe(413);
      const second = await request(Buffer.from('{}'));
      expect(second.status).toBe(400);
    } finally {
      agent.destroy();
    }
  });

  it('reads no more than its bound of a refused body: beyond it the connection is closed, not read forever', async () => {
    const started = performance.now();
    const huge = Buffer.alloc(DRAIN_MAX_BYTES + 8 * LIMIT, 'a');
    const outcome = await send({
      path: '/api/agents',
      headers: { ...t.owner.headers, 'content-type': 'application/json' },
      parts: split(huge, 64),
    });
    // The client may or may not read the 413 before the close; either way the request ended.
    expect(outcome.status === 413 || outcome.error !== undefined).toBe(true);
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});
