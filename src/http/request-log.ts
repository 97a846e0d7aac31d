import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * One structured line per request, written when it completes: method, URL, status,
 * duration and who called. Headers are never logged and a ticket in the query string is
 * redacted, so credentials cannot leak here.
 */
export class RequestLogController extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(): void {
    // The completion line carries everything; logging arrival too would double the volume.
  }

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      url: redactQuery(request.url),
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 100) / 100,
      user_id: request.userId || undefined,
      workspace_id: request.caller?.workspaceId,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/** Query parameters that carry a credential (the WebSocket ticket): logged as `[redacted]`. */
const SECRET_QUERY = /([?&]ticket=)[^&#]*/gi;

/** The URL as logged: credentials in the query string replaced. */
export const redactQuery = (url: string): string => url.replace(SECRET_QUERY, '$1[redacted]');
