import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** The most of an unread body read and discarded so its client sees the answer. */
export const DRAIN_MAX_BYTES = 32 * 1024 * 1024;
/** The longest a client may take to send the rest of a refused body. */
export const DRAIN_MAX_MS = 15_000;

/**
 * An answer given before the request's body has arrived (413 over the body limit, 401 or 415
 * before reading it) waits until the rest of the body is read and discarded, up to
 * `DRAIN_MAX_BYTES` and `DRAIN_MAX_MS`. Closing a connection with unread bytes makes the kernel
 * reset it, and a client still writing its body then sees ECONNRESET or EPIPE instead of the
 * answer. Once the body has ended the connection stays usable; beyond the bounds it is closed
 * after the answer (that client may see a reset, which only a body of many times the limit or
 * a stalled client earns).
 */
export function registerBodyDrain(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const raw = request.raw;
    if (raw.complete || raw.readableEnded || raw.destroyed) return payload;
    if (await drain(raw)) reply.removeHeader('connection');
    else reply.header('connection', 'close');
    return payload;
  });
}

/** Reads and discards the rest of `raw`: true once it ended within the bounds. */
function drain(raw: IncomingMessage): Promise<boolean> {
  return new Promise((resolve) => {
    let received = 0;
    const done = (ended: boolean) => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('close', onClose);
      raw.off('error', onClose);
      resolve(ended);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > DRAIN_MAX_BYTES) done(false);
    };
    const onEnd = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), DRAIN_MAX_MS);
    raw.on('data', onData);
    raw.once('end', onEnd);
    raw.once('close', onClose);
    raw.once('error', onClose);
    raw.resume();
  });
}
