import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { type Caller, hasRole, type Role } from '../caller.ts';
import { AppError } from '../errors.ts';
import { accessTopic, type EventHub } from '../events/event-hub.ts';

/** Seconds a client refused for too many streams should wait before trying again. */
const RETRY_AFTER_SECONDS = 5;

/** The credentials a stream was admitted with, as they are checked again. */
export interface StreamAccess {
  workspaceId: string;
  userId: string;
  apiKeyId?: string;
}

export interface LiveStreamsOptions {
  /** Carries `access:<workspace id>` notices from every process (`accessTopic`). */
  hub: Pick<EventHub, 'subscribe'>;
  /**
   * The role these credentials give now, read past every cache; undefined when they give none
   * (not a member, the workspace gone, the API key revoked or expired).
   */
  currentAccess(access: StreamAccess): Promise<Role | undefined>;
  /** Streams one user may hold open at once in this process. */
  perUser: number;
  /** Streams all users of one workspace may hold open at once in this process. */
  perWorkspace: number;
  log: Pick<FastifyBaseLogger, 'warn'>;
}

/** An open live stream: it ends when the client leaves, the server closes, or access is withdrawn. */
export interface LiveStream {
  /** Aborts, with the `access_revoked` AppError as its reason, once the caller's access is gone. */
  revoked: AbortSignal;
  /** Gives the slot back and stops watching; safe to call more than once. */
  end(): void;
}

/**
 * Live streams (SSE and WebSocket) outlive the request that opened them, so the access checked
 * when they opened must keep holding. This watches it: each stream listens on its workspace's
 * `access:<workspace id>` topic, which membership, role, API-key and workspace changes announce
 * after commit (in every process, through the hub), and on each notice reads its caller's access
 * again from the database. Removed, lowered below the role the route needs, key revoked,
 * workspace deleted: `revoked` aborts, and the stream ends with `access_revoked`.
 *
 * It also caps how many follow streams one user and one workspace hold open in this process
 * (each holds a connection, a hub subscription and a reader): beyond, 429 `too_many_streams`.
 * The counts are per process, as the connections are; with several API processes behind a
 * balancer the platform-wide bound is the cap times the processes.
 */
export function createLiveStreams(options: LiveStreamsOptions) {
  const byUser = new Map<string, number>();
  const byWorkspace = new Map<string, number>();

  const add = (counts: Map<string, number>, key: string, delta: number) => {
    const next = (counts.get(key) ?? 0) + delta;
    if (next <= 0) counts.delete(key);
    else counts.set(key, next);
  };

  /** Takes a slot of the user's and of the workspace's, or refuses with 429. */
  function take(caller: Caller): () => void {
    const user = caller.userId;
    const workspace = caller.workspaceId;
    const refuse = (what: string, cap: number) =>
      new AppError(
        429,
        'too_many_streams',
        `${what} already holds ${cap} live streams, the most allowed at once; close one and retry`,
        undefined,
        { 'Retry-After': String(RETRY_AFTER_SECONDS) },
      );
    if ((byUser.get(user) ?? 0) >= options.perUser) throw refuse('this user', options.perUser);
    if ((byWorkspace.get(workspace) ?? 0) >= options.perWorkspace) {
      throw refuse('this workspace', options.perWorkspace);
    }
    add(byUser, user, 1);
    add(byWorkspace, workspace, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      add(byUser, user, -1);
      add(byWorkspace, workspace, -1);
    };
  }

  return {
    /**
     * Opens a live stream for the request's caller: takes a slot when `counted` (follow
     * streams, open until the client leaves; a chat answer ends by itself and is not counted),
     * checks the access once more past the caches (a change made moments ago in another process
     * is seen), and watches it from then on. The stream's owner calls `end()` when it ends.
     */
    async open(request: FastifyRequest, { counted }: { counted: boolean }): Promise<LiveStream> {
      const caller = request.caller;
      const config = request.routeOptions.config;
      const needed: Role =
        config.role ?? (request.method === 'GET' || request.method === 'HEAD' ? 'viewer' : 'member');
      const access: StreamAccess = {
        workspaceId: caller.workspaceId,
        userId: caller.userId,
        ...(caller.apiKeyId === undefined ? {} : { apiKeyId: caller.apiKeyId }),
      };
      const release = counted ? take(caller) : () => {};
      const controller = new AbortController();
      let checking: Promise<void> | undefined;
      let again = false;

      /** Reads the access again; notices arriving meanwhile cause one more read after it. */
      const check = async (): Promise<void> => {
        if (checking) {
          again = true;
          return checking;
        }
        checking = (async () => {
          do {
            again = false;
            const role = await options.currentAccess(access);
            if (role === undefined || !hasRole(role, needed)) {
              controller.abort(revokedError(role, needed));
              return;
            }
          } while (again && !controller.signal.aborted);
        })().finally(() => {
          checking = undefined;
        });
        return checking;
      };

      const unsubscribe = options.hub.subscribe(accessTopic(caller.workspaceId), () => {
        if (controller.signal.aborted) return;
        check().catch((error: unknown) => {
          // The database is unreachable: the stream's own reads fail and end it; keep it meanwhile.
          options.log.warn({ err: error }, 'a live stream could not check its access again');
        });
      });
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        unsubscribe();
        release();
      };
      try {
        await check();
      } catch (error) {
        end();
        throw error;
      }
      if (controller.signal.aborted) {
        end();
        throw controller.signal.reason;
      }
      return { revoked: controller.signal, end };
    },
  };
}

export type LiveStreams = ReturnType<typeof createLiveStreams>;

function revokedError(role: Role | undefined, needed: Role): AppError {
  return new AppError(
    403,
    'access_revoked',
    role === undefined
      ? 'your access to this workspace was withdrawn (membership removed, API key revoked or workspace deleted)'
      : `this stream needs the ${needed} role or higher; your role is now ${role}`,
  );
}
