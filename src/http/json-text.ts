import type { FastifyReply } from 'fastify';

/**
 * Sends JSON text that is already in the route's documented response shape (a page the
 * database wrote, see `selectJsonPage`) as it is: Fastify sends a string with a JSON
 * content type without serialising it again, so the route's response schema documents the
 * body without being run over it. The reply is taken untyped because the route's schema
 * types its payload as the parsed object, which this text is the serialisation of.
 */
export const sendJsonText = (reply: FastifyReply, json: string): FastifyReply =>
  reply.type('application/json').send(json);
