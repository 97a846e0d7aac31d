import type { InjectOptions, Response } from 'light-my-request';
import type { App } from '../../src/app.ts';

/** Someone who can call the API, with ready-made headers. */
export interface Actor {
  userId: string;
  workspaceId: string;
  token: string;
  headers: Record<string, string>;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Extra request options: headers merged over the actor's, a raw payload, a query object. */
export type CallOptions = Omit<InjectOptions, 'method' | 'url' | 'payload' | 'body'> & {
  headers?: Record<string, string>;
};

/**
 * The one way tests call the API: `inject()` as `actor` (or anonymously), a JSON body when
 * one is given. Answers light-my-request's response (`statusCode`, `json()`, `headers`).
 */
export function callApi(
  app: App,
  actor: Actor | undefined,
  method: Method,
  url: string,
  payload?: unknown,
  options: CallOptions = {},
): Promise<Response> {
  return app.inject({
    ...options,
    method,
    url,
    headers: { ...actor?.headers, ...options.headers },
    ...(payload === undefined ? {} : { payload: payload as InjectOptions['payload'] }),
  });
}
