import type { FastifyReply } from 'fastify';

/**
 * A signal aborted when the client closes the connection before the answer is written, so
 * long work done for a request (an extraction, a mine) stops when nobody waits for it.
 */
export function abortedWhenClientLeaves(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort(new Error('the client closed the connection'));
  });
  return gone.signal;
}
