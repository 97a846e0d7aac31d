import { useEffect, useRef, useState } from 'react';
import { api, type Schemas, unwrap } from '../api/client.ts';

export type ActivityEvent = Schemas['ActivityEvent'];
export type ConnectionState = 'connecting' | 'live' | 'reconnecting' | 'closed';

const KEEP = 50;

/**
 * The workspace's activity, live: the latest events, then every new one as the service sends
 * it over `/api/ws` (a single-use ticket, since a browser cannot set headers on a WebSocket).
 * A dropped socket reconnects by itself, asking to replay from the last id it saw, so no event
 * is lost; events are kept by id, so none is shown twice.
 */
export function useActivityFeed(onEvent?: (event: ActivityEvent) => void, keep = KEEP) {
  const [events, setEvents] = useState<ActivityEvent[]>([]);
  const [state, setState] = useState<ConnectionState>('connecting');
  const [error, setError] = useState<unknown>();
  const handler = useRef(onEvent);
  handler.current = onEvent;

  useEffect(() => {
    let stopped = false;
    let socket: WebSocket | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let lastId = 0;
    // Once the latest events are read, every later event is after `lastId` (0 for a workspace
    // with none yet): each socket then asks to replay from there, so nothing written between
    // the read and the socket, or while reconnecting, is missed.
    let cursorKnown = false;
    let failures = 0;

    const add = (incoming: ActivityEvent[]) => {
      const fresh = incoming.filter((event) => event.id > lastId);
      if (fresh.length === 0) return;
      lastId = Math.max(lastId, ...fresh.map((event) => event.id));
      setEvents((shown) => {
        const known = new Set(shown.map((event) => event.id));
        const merged = [...fresh.filter((event) => !known.has(event.id)), ...shown];
        return merged.sort((a, b) => b.id - a.id).slice(0, keep);
      });
      for (const event of fresh) handler.current?.(event);
    };

    const connect = async () => {
      try {
        const { ticket } = await unwrap(api.POST('/api/activity/ws-ticket'));
        if (stopped) return;
        const url = new URL('/api/ws', window.location.href);
        url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
        url.searchParams.set('ticket', ticket);
        if (cursorKnown) url.searchParams.set('after', String(lastId));
        socket = new WebSocket(url);
        socket.onopen = () => {
          failures = 0;
          setState('live');
          setError(undefined);
        };
        socket.onmessage = (message) => {
          const data = JSON.parse(String(message.data)) as ActivityEvent | { error: { message: string } };
          if ('error' in data) setError(new Error(data.error.message));
          else add([data]);
        };
        socket.onclose = (close) => {
          socket = undefined;
          // 4403: access withdrawn; asking again would be refused the same way.
          if (stopped || close.code === 4403) return setState('closed');
          scheduleReconnect();
        };
      } catch (failure) {
        setError(failure);
        scheduleReconnect();
      }
    };

    const scheduleReconnect = () => {
      if (stopped) return;
      setState('reconnecting');
      failures += 1;
      retry = setTimeout(connect, Math.min(10_000, 250 * 2 ** Math.min(failures, 6)));
    };

    unwrap(api.GET('/api/activity', { params: { query: { limit: 20 } } }))
      .then((page) => {
        if (stopped) return;
        add(page.items);
        cursorKnown = true;
      })
      .catch(setError)
      .finally(() => {
        if (!stopped) void connect();
      });

    return () => {
      stopped = true;
      clearTimeout(retry);
      socket?.close();
    };
  }, [keep]);

  return { events, state, error };
}
