import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** One parsed Server-Sent Event, its data decoded from JSON. */
export interface ParsedEvent {
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

/** Parses a whole event stream body (a finished stream read through `inject`). */
export function parseEventStream(body: string): ParsedEvent[] {
  const events: ParsedEvent[] = [];
  const parser = createParser({ onEvent: (message) => events.push(decode(message)) });
  parser.feed(body);
  return events;
}

/**
 * Reads a live event stream over a real connection, handing each event to `onEvent`
 * until it returns true (then the connection is closed) or the server ends the stream.
 */
export async function readEventStream(
  url: string,
  headers: Record<string, string>,
  onEvent: (event: ParsedEvent) => boolean | undefined,
  { timeoutMs = 20_000 }: { timeoutMs?: number } = {},
): Promise<{ status: number; events: ParsedEvent[]; contentType: string | null }> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`no end of stream within ${timeoutMs} ms`)),
    timeoutMs,
  );
  const events: ParsedEvent[] = [];
  let done = false;
  const parser = createParser({
    onEvent: (message) => {
      if (done) return;
      const event = decode(message);
      events.push(event);
      if (onEvent(event)) {
        done = true;
        controller.abort();
      }
    },
  });
  try {
    const response = await fetch(url, { headers, signal: controller.signal });
    const contentType = response.headers.get('content-type');
    if (!response.body) return { status: response.status, events, contentType };
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch (error) {
      if (!done) throw error;
    }
    return { status: response.status, events, contentType };
  } finally {
    clearTimeout(timer);
  }
}

function decode(message: EventSourceMessage): ParsedEvent {
  return {
    ...(message.id === undefined ? {} : { id: message.id }),
    event: message.event ?? 'message',
    data: JSON.parse(message.data) as Record<string, unknown>,
  };
}
