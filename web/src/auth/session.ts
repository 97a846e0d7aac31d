/**
 * Who is signed in, for this tab only: the bearer token lives in memory and in sessionStorage
 * (so a reload keeps it, a new tab or a closed browser does not), never in localStorage or a
 * cookie. The workspace chosen is remembered per tab the same way.
 */

export interface Session {
  token: string;
  /** Epoch milliseconds; unknown for a pasted token. */
  expiresAt?: number;
  /** How the token was obtained: the console renews OIDC tokens, the others end. */
  via: 'developer' | 'oidc' | 'token';
  /** Sent as X-API-Key with the token when the user signed in with one. */
  apiKey?: string;
}

const SESSION_KEY = 'agent-platform.session';
const WORKSPACE_KEY = 'agent-platform.workspace';

type Listener = () => void;
const listeners = new Set<Listener>();

function read<T>(key: string): T | undefined {
  try {
    const text = sessionStorage.getItem(key);
    return text ? (JSON.parse(text) as T) : undefined;
  } catch {
    return undefined;
  }
}

let session: Session | undefined = read<Session>(SESSION_KEY);
let workspaceId: string | undefined = read<string>(WORKSPACE_KEY);
/** Why the last session ended, shown on the sign-in page. */
let endedBecause: string | undefined;

function notify(): void {
  for (const listener of listeners) listener();
}

export const sessionStore = {
  subscribe(listener: Listener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  get(): Session | undefined {
    if (session?.expiresAt !== undefined && session.expiresAt <= Date.now()) {
      sessionStore.end('Your session expired. Sign in again.');
    }
    return session;
  },
  endedBecause: () => endedBecause,
  start(next: Session): void {
    session = next;
    endedBecause = undefined;
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(next));
    notify();
  },
  end(reason?: string): void {
    if (!session) return;
    session = undefined;
    endedBecause = reason;
    sessionStorage.removeItem(SESSION_KEY);
    notify();
  },
  workspaceId: () => workspaceId,
  chooseWorkspace(id: string | undefined): void {
    if (id === workspaceId) return;
    workspaceId = id;
    if (id) sessionStorage.setItem(WORKSPACE_KEY, JSON.stringify(id));
    else sessionStorage.removeItem(WORKSPACE_KEY);
    notify();
  },
};
