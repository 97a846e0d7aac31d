import { type Db, inTransaction } from '../../db/transaction.ts';
import { type FieldError, forbidden, invalidFields } from '../../errors.ts';
import { type AuditRecorder, changesBetween, type RecordedBy } from '../audit/audit.service.ts';
import { type CorsRow, createCorsRepository } from './cors.repository.ts';
import {
  CORS_METHODS,
  type CorsMethod,
  originAllowed,
  originProblem,
  REQUIRED_HEADERS,
  withRequiredHeaders,
} from './origins.ts';

/** The event hub's topic on which a change of the CORS settings is announced (id: the new version). */
export const CORS_TOPIC = 'settings:cors';

/**
 * How long a process reuses the settings it read. A change is announced on the event hub
 * (Redis pub/sub across processes), so this only bounds how stale a process can be when an
 * announcement is lost.
 */
export const CORS_CACHE_TTL_MS = 30_000;

export interface CorsDependencies {
  db: Db;
  /** Carries the new version to every process (`EventHub`: Redis pub/sub when REDIS_URL is set). */
  hub: {
    publish(topic: string, id: number): void;
    subscribe(topic: string, listener: (id: number) => void): () => void;
  };
  /** Users listed in `PLATFORM_ADMIN_USERS`: the only ones who change CORS. */
  platformAdmins: ReadonlySet<string>;
  /** Where a change is logged (CORS has no workspace, so no activity feed to record it in). */
  onChange?: (change: { userId: string; version: number }) => void;
  /** The platform audit trail (CORS belongs to no workspace): `cors.updated` with old and new values. */
  audit?: AuditRecorder;
  now?: () => number;
}

/** `PUT /settings/cors`: the whole policy; fields left out take their defaults. */
export interface PutCorsInput {
  origins: string[];
  methods?: CorsMethod[];
  headers?: string[];
  exposed_headers?: string[];
  credentials?: boolean;
  max_age?: number;
}

/** What nobody configured: no origin is allowed, so no cross-origin access (as before CORS settings). */
export const CORS_DEFAULTS = {
  origins: [] as string[],
  methods: [...CORS_METHODS] as CorsMethod[],
  headers: [...REQUIRED_HEADERS] as string[],
  exposed_headers: ['X-Request-ID', 'ETag'],
  credentials: false,
  max_age: 600,
};

/** What the CORS plugin applies to one request from an allowed origin. */
export interface CorsPolicy {
  /** The value of Access-Control-Allow-Origin: the request's origin, or `*`. */
  origin: string;
  credentials: boolean;
  methods: string[];
  allowedHeaders: string[];
  exposedHeaders: string[];
  maxAge: number;
}

type Settings = typeof CORS_DEFAULTS & {
  version: number | null;
  updated_at: Date | null;
  updated_by: string | null;
};

const fromRow = (row: CorsRow | undefined): Settings =>
  row
    ? {
        origins: row.origins,
        methods: row.methods as CorsMethod[],
        headers: withRequiredHeaders(row.headers),
        exposed_headers: row.exposed_headers,
        credentials: row.credentials,
        max_age: row.max_age,
        version: row.version,
        updated_at: row.updated_at,
        updated_by: row.updated_by,
      }
    : { ...CORS_DEFAULTS, version: null, updated_at: null, updated_by: null };

/** What the audit trail compares between two versions of the policy. */
const audited = ({ updated_at: _at, updated_by: _by, ...policy }: Settings): Record<string, unknown> => ({
  ...policy,
});

/**
 * The platform's CORS settings (one policy, not per workspace: a preflight names no
 * workspace). Every request with an `Origin` asks `policyFor`, which answers from a cached
 * read; a PUT drops the cache here and announces the new version on the event hub, which
 * drops it in every other process.
 */
export function createCorsService(deps: CorsDependencies) {
  const repo = createCorsRepository(deps.db);
  const now = deps.now ?? (() => Date.now());
  let cached: { at: number; value: Promise<Settings> } | undefined;

  deps.hub.subscribe(CORS_TOPIC, () => {
    cached = undefined;
  });

  function current(): Promise<Settings> {
    if (!cached || now() - cached.at > CORS_CACHE_TTL_MS) {
      const entry = {
        at: now(),
        value: repo.get().then(fromRow, (error: unknown) => {
          // A failed read is not kept: the next request reads again.
          if (cached === entry) cached = undefined;
          throw error;
        }),
      };
      cached = entry;
    }
    return cached.value;
  }

  return {
    /** The settings as stored (or the defaults), the required headers included. */
    get: current,

    /**
     * Replaces the policy (platform operators only). Every invalid field is named at once;
     * `*` together with `credentials: true` is refused (browsers reject it, and it would hand
     * every site the caller's credentials).
     */
    async put(who: RecordedBy, input: PutCorsInput): Promise<Settings> {
      const { userId } = who;
      if (!deps.platformAdmins.has(userId)) {
        throw forbidden(
          'platform_admin_required',
          'only platform operators (PLATFORM_ADMIN_USERS) may change the CORS settings',
        );
      }
      const settings = {
        origins: input.origins,
        methods: input.methods ?? CORS_DEFAULTS.methods,
        headers: withRequiredHeaders(input.headers ?? []),
        exposed_headers: input.exposed_headers ?? CORS_DEFAULTS.exposed_headers,
        credentials: input.credentials ?? CORS_DEFAULTS.credentials,
        max_age: input.max_age ?? CORS_DEFAULTS.max_age,
      };
      const problems: FieldError[] = [];
      input.origins.forEach((origin, index) => {
        const problem = originProblem(origin);
        if (problem) problems.push({ field: `body.origins.${index}`, message: problem });
      });
      if (settings.credentials && settings.origins.includes('*')) {
        problems.push({
          field: 'body.origins',
          message: 'must not contain * when credentials is true: list the origins that may send credentials',
        });
      }
      const repeated = settings.origins.findIndex(
        (origin, index) => settings.origins.indexOf(origin) !== index,
      );
      if (repeated >= 0) problems.push({ field: `body.origins.${repeated}`, message: 'repeats an origin' });
      if (problems.length > 0) throw invalidFields(problems);

      const row = await inTransaction(deps.db, async (tx) => {
        const before = await createCorsRepository(tx).get();
        const written = await createCorsRepository(tx).put({ ...settings, updated_by: userId });
        await deps.audit?.record(tx, null, who, {
          action: 'cors.updated',
          targetType: 'cors',
          targetId: 'platform',
          changes: changesBetween(audited(fromRow(before)), audited(fromRow(written))),
        });
        return written;
      });
      cached = undefined;
      deps.hub.publish(CORS_TOPIC, row.version);
      deps.onChange?.({ userId, version: row.version });
      return fromRow(row);
    },

    /** The policy for a request from `origin`, or undefined: no CORS headers at all. */
    async policyFor(origin: string | undefined): Promise<CorsPolicy | undefined> {
      if (origin === undefined || origin === '') return undefined;
      const settings = await current();
      if (!originAllowed(settings.origins, origin)) return undefined;
      const anyOrigin = settings.origins.includes('*') && !settings.credentials;
      return {
        origin: anyOrigin ? '*' : origin,
        credentials: settings.credentials,
        methods: settings.methods,
        allowedHeaders: settings.headers,
        exposedHeaders: settings.exposed_headers,
        maxAge: settings.max_age,
      };
    },
  };
}

export type CorsService = ReturnType<typeof createCorsService>;
