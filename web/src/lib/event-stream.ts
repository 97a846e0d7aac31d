import { EventSourceParserStream } from 'eventsource-parser/stream';
import { ApiError, apiFetch, type Problem } from '../api/client.ts';

export interface StreamEvent {
  event: string;
  id: string | undefined;
  data: unknown;
}

/**
 * Follows a Server-Sent Events resource with the session's headers (a browser's EventSource
 * cannot send them), reconnecting with `Last-Event-ID` after a dropped connection until the
 * server says the stream is over (204, or `onEvent` answering 'stop'). Resolves when it ends;
 * rejects with the API's problem when the resource refuses (404, 403).
 */
export async function followEvents(
  url: string,
  onEvent: (event: StreamEvent) => 'stop' | undefined,
  signal: AbortSignal,
): Promise<void> {
  let lastId: string | undefined;
  let failures = 0;
  while (!signal.aborted) {
    try {
      const response = await apiFetch(url, {
        headers: { accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
        signal,
      });
      if (response.status === 204) return;
      if (!response.ok) {
        const problem = (await response.json().catch(() => undefined)) as Problem | undefined;
        if (problem && response.status < 500) throw new ApiError(response.status, problem);
        throw new Error(`the stream answered ${response.status}`);
      }
      failures = 0;
      const events = response.body
        ?.pipeThrough(new TextDecoderStream())
        .pipeThrough(new EventSourceParserStream());
      if (!events) return;
      for await (const message of events) {
        if (message.id) lastId = message.id;
        let data: unknown = message.data;
        try {
          data = JSON.parse(message.data);
        } catch {
          // Not JSON: kept as text.
        }
        if (onEvent({ event: message.event ?? 'message', id: message.id, data }) === 'stop') return;
      }
    } catch (error) {
      if (signal.aborted || error instanceof ApiError) throw error;
    }
    failures += 1;
    await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 250 * 2 ** Math.min(failures, 6))));
  }
}
