import { once } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, infrastructureFailure } from '../errors.ts';
import type { LiveStream } from './live-streams.ts';

/** One Server-Sent Event: a name, a JSON payload and, for replayable streams, an id. */
export interface SseEvent {
  event: string;
  data: unknown;
  id?: string | number;
}

export interface EventStreamOptions {
  /** A comment line every this many ms keeps proxies from closing an idle stream (15 s). */
  heartbeatMs?: number;
  /** Logs an error that ended the stream after it had started. */
  onError?: (error: unknown) => void;
  /**
   * The live stream this is (`LiveStreams.open`): when the caller's access is withdrawn, the
   * stream stops and its last event is an `error` with `access_revoked`; when the stream ends
   * for any reason, its slot is given back.
   */
  live?: LiveStream;
}

/**
 * The one place that knows SSE framing. Services produce an `AsyncIterable` of events and
 * take an `AbortSignal`; this writes them with ids, sends a heartbeat, turns a client
 * disconnect into an abort, and turns an error thrown after the stream started into a last
 * `error` event (before the first event, an error is still an ordinary problem+json answer,
 * because the caller awaits `open` first). Given its live stream, withdrawn access stops the
 * producer too, and is the last `error` event (`access_revoked`).
 */
export async function sendEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  produce: (signal: AbortSignal) => AsyncIterable<SseEvent>,
  options: EventStreamOptions = {},
): Promise<void> {
  const controller = new AbortController();
  const abort = () => controller.abort(new Error('client disconnected'));
  request.raw.once('close', abort);
  reply.raw.once('close', abort);
  const revoked = options.live?.revoked;
  const revoke = () => controller.abort(revoked?.reason);
  revoked?.addEventListener('abort', revoke, { once: true });
  const unlisten = () => {
    request.raw.off('close', abort);
    reply.raw.off('close', abort);
    revoked?.removeEventListener('abort', revoke);
  };

  const iterator = produce(controller.signal)[Symbol.asyncIterator]();
  // The first event decides between an HTTP error and a stream: pull it before any header.
  let first: IteratorResult<SseEvent>;
  try {
    first = await iterator.next();
  } catch (error) {
    unlisten();
    options.live?.end();
    throw error;
  }

  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.flushHeaders();
  const heartbeat = setInterval(() => {
    if (!raw.writableEnded) raw.write(': heartbeat\n\n');
  }, options.heartbeatMs ?? 15_000);

  const write = async (event: SseEvent) => {
    if (raw.writableEnded || raw.destroyed) return;
    if (!raw.write(formatEvent(event))) {
      await Promise.race([once(raw, 'drain'), once(raw, 'close')]);
    }
  };

  try {
    if (!first.done) {
      await write(first.value);
      for (;;) {
        if (controller.signal.aborted) break;
        const next = await iterator.next();
        if (next.done) break;
        await write(next.value);
      }
    }
  } catch (error) {
    if (!controller.signal.aborted) {
      options.onError?.(error);
      await write({ event: 'error', data: streamError(error) });
    }
  } finally {
    clearInterval(heartbeat);
    unlisten();
    await iterator.return?.();
    // Withdrawn access is said last, whatever the producer did when it was stopped.
    if (revoked?.aborted) await write({ event: 'error', data: streamError(revoked.reason) });
    options.live?.end();
    if (!raw.writableEnded) raw.end();
  }
}

/** `id:`, `event:` and one `data:` line per line of the JSON payload, then a blank line. */
export function formatEvent({ id, event, data }: SseEvent): string {
  const json = JSON.stringify(data ?? null);
  const idLine = id === undefined ? '' : `id: ${String(id).replace(/[\r\n]/g, '')}\n`;
  return `${idLine}event: ${event}\ndata: ${json}\n\n`;
}

/**
 * Where a reconnecting client resumes: the `Last-Event-ID` header, else `?after=`; ids are
 * the log's positive integers. Anything else is a 400 naming the field.
 */
export function resumePoint(request: FastifyRequest, after?: number): number {
  const header = request.headers['last-event-id'];
  const text = Array.isArray(header) ? header[0] : header;
  if (text !== undefined && text.trim() !== '') {
    const value = Number(text.trim());
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new AppError(400, 'validation_failed', 'Last-Event-ID must be a non-negative integer', [
        { field: 'headers.last-event-id', message: 'must be a non-negative integer' },
      ]);
    }
    return value;
  }
  return after ?? 0;
}

/**
 * The last event's payload: an `AppError` as it is, the database or Redis failing (however
 * wrapped) as its 503 code, so a client retries rather than reports a bug; anything else hidden.
 */
function streamError(error: unknown): { code: string; status: number; message: string } {
  const known = infrastructureFailure(error) ?? error;
  if (known instanceof AppError) return { code: known.code, status: known.status, message: known.message };
  return { code: 'internal_error', status: 500, message: 'the stream failed; see the server log' };
}
