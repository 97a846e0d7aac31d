import http from 'node:http';
import { createParser } from 'eventsource-parser';

/** One Server-Sent Event as a client receives it, its JSON payload parsed. */
export interface ReceivedEvent {
  event: string;
  id?: string;
  data: any;
}

/** An open event stream read by a real SSE parser (`eventsource-parser`) over a real socket. */
export interface EventStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body when the answer is not an event stream (problem+json), parsed. */
  problem?: any;
  /** Events received so far, in order. */
  events: ReceivedEvent[];
  /** Comment lines received (heartbeats). */
  comments: string[];
  /** Resolves with the events once `count` have arrived (or the stream ended with fewer). */
  waitForEvents(count: number): Promise<ReceivedEvent[]>;
  /** Resolves with every event once the server ends the stream. */
  done: Promise<ReceivedEvent[]>;
  /** Closes the connection from the client's side, as a browser tab that goes away. */
  close(): void;
}

/**
 * Sends `body` as JSON to `url` with `headers` and reads the answer as an event stream, the
 * way a browser's EventSource reads it; a non-stream answer is read whole into `problem`.
 */
export function openEventStream(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  method: 'POST' | 'GET' = 'POST',
): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method, headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' } },
      (response) => {
        const events: ReceivedEvent[] = [];
        const comments: string[] = [];
        const waiters: { count: number; resolve: (events: ReceivedEvent[]) => void }[] = [];
        let ended = false;
        const notify = () => {
          for (const waiter of [...waiters]) {
            if (ended || events.length >= waiter.count) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve(events);
            }
          }
        };
        let resolveDone: (events: ReceivedEvent[]) => void = () => {};
        const done = new Promise<ReceivedEvent[]>((r) => {
          resolveDone = r;
        });
        const finish = () => {
          ended = true;
          notify();
          resolveDone(events);
        };
        const stream: EventStream = {
          status: response.statusCode ?? 0,
          headers: response.headers,
          events,
          comments,
          waitForEvents: (count) =>
            new Promise((r) => {
              waiters.push({ count, resolve: r });
              notify();
            }),
          done,
          close: () => request.destroy(),
        };
        response.setEncoding('utf8');
        if (!String(response.headers['content-type']).startsWith('text/event-stream')) {
          let text = '';
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () => {
            stream.problem = text ? JSON.parse(text) : undefined;
            finish();
            resolve(stream);
          });
          return;
        }
        const parser = createParser({
          onEvent: (message) => {
            events.push({
              event: message.event ?? 'message',
              id: message.id,
              data: JSON.parse(message.data),
            });
            notify();
          },
          onComment: (comment) => comments.push(comment),
        });
        response.on('data', (chunk: string) => parser.feed(chunk));
        response.on('end', finish);
        response.on('close', finish);
        resolve(stream);
      },
    );
    request.on('error', (error) => {
      if (!request.destroyed || (error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    request.end(method === 'POST' ? JSON.stringify(body) : undefined);
  });
}

/** An event stream read in order: each call takes the events after those already taken. */
export interface OrderedEvents {
  /** The next `count` events; fails when the stream ends first. */
  next(count: number): Promise<ReceivedEvent[]>;
  /** True when no event beyond those taken arrives within `ms`. */
  quietFor(ms: number): Promise<boolean>;
}

/** Reads `stream` in order, for tests that check what arrives after each step. */
export function inOrder(stream: EventStream): OrderedEvents {
  let taken = 0;
  return {
    async next(count) {
      const events = await stream.waitForEvents(taken + count);
      if (events.length < taken + count) {
        throw new Error(`the stream ended after ${events.length} events: ${JSON.stringify(events)}`);
      }
      taken += count;
      return events.slice(taken - count, taken);
    },
    async quietFor(ms) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return stream.events.length === taken;
    },
  };
}

/** Parses a whole event stream body, as `inject()` returns a stream the server already ended. */
export function parseEventStream(body: string): ReceivedEvent[] {
  const events: ReceivedEvent[] = [];
  const parser = createParser({
    onEvent: (message) =>
      events.push({
        event: message.event ?? 'message',
        ...(message.id === undefined ? {} : { id: message.id }),
        data: JSON.parse(message.data),
      }),
  });
  parser.feed(body);
  return events;
}
